// Row-wise normalizations and the fused classification loss. Every row is computed the same way
// on every backend: the row maximum first, then the exponentials of (x - max) summed in index
// order, so no exponential overflows and the order of the sums is fixed.
//
// cross_entropy labels are f32 class indices. A label is valid when it is an integer in [0, C);
// any other label (negative, too large, fractional, NaN) makes that row's loss NaN, and
// cross_entropy_grad makes that row's gradient NaN, on the CPU reference and in WGSL alike. The
// NaN reaches the loss that is read back, so a wrong label fails the run loudly (a non-finite
// readback) instead of silently training on a clamped class.
#include "webir/autodiff/autodiff.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

Result<TensorType> InferRowwise(InferContext& c) {
  const TensorType& a = c.args[0];
  if (a.rank() < 1) {
    return c.Error("bad-rank", "a row-wise normalization needs rank 1 or more, got a scalar",
                   "it normalizes over the last axis");
  }
  return a;
}

Status CheckLogitsAndLabels(InferContext& c) {
  const TensorType& a = c.args[0];
  const TensorType& t = c.args[1];
  if (a.rank() != 2) {
    return c.Error("bad-rank",
                   "cross_entropy takes logits of shape [N, C], got " + a.ShapeStringWithSizes());
  }
  if (t.rank() != 1 || t.dims[0].size != a.dims[0].size) {
    return c.Error("shape-mismatch",
                   "the labels have shape " + t.ShapeStringWithSizes() + ", the logits " +
                       a.ShapeStringWithSizes() + " need labels of shape [" +
                       std::to_string(a.dims[0].size) + "]",
                   "one class index (as f32) per row of the logits");
  }
  if (a.dims[1].size < 1)
    return c.Error("shape-mismatch", "cross_entropy needs at least one class");
  return Status::Ok();
}

Result<TensorType> InferCrossEntropy(InferContext& c) {
  SCELLIS_TRY(CheckLogitsAndLabels(c));
  return MakeType({}, c.args[0].dtype);
}

Result<TensorType> InferCrossEntropyGrad(InferContext& c) {
  SCELLIS_TRY(CheckLogitsAndLabels(c));
  if (c.args[2].elements() != 1 || c.args[2].rank() != 0) {
    return c.Error("shape-mismatch", "the upstream gradient \"b\" has shape " +
                                         c.args[2].ShapeStringWithSizes() + ", expected []");
  }
  return c.args[0];
}

int LastAxisSum(Graph& g, int x) {
  int axis = g.at(x).type.rank() - 1;
  return grad::Emit(g, "sum", {x}, {{"axis", axis}, {"keepdim", true}});
}

// d softmax: s * (g - sum(g * s)), row-wise.
std::vector<int> GradSoftmax(Graph& g, const Node& n, int gout) {
  int gs = grad::Emit(g, "mul", {gout, n.id});
  int dot = LastAxisSum(g, gs);
  return {grad::Emit(g, "mul", {n.id, grad::Emit(g, "sub", {gout, dot})})};
}

// d log_softmax: g - exp(out) * sum(g), row-wise.
std::vector<int> GradLogSoftmax(Graph& g, const Node& n, int gout) {
  int total = LastAxisSum(g, gout);
  int p = grad::Emit(g, "exp", {n.id});
  return {grad::Emit(g, "sub", {gout, grad::Emit(g, "mul", {p, total})})};
}

std::vector<int> GradCrossEntropy(Graph& g, const Node& n, int gout) {
  return {grad::Emit(g, "cross_entropy_grad", {n.args[0], n.args[1], gout}), -1};
}

// cross_entropy_grad(a, t, b) = (softmax(a) - onehot(t)) * b / N. With s = softmax(a) and r = b/N:
//   d/da = r * s * (g - sum(g * s))   (the softmax Jacobian applied to g)
//   d/db = sum(g * (softmax(a) - onehot(t))) / N = sum(g * out) / b, written without dividing by b
//          as sum(g * cross_entropy_grad(a, t, 1)).
std::vector<int> GradCrossEntropyGrad(Graph& g, const Node& n, int gout) {
  int a = n.args[0], t = n.args[1], b = n.args[2];
  int64_t rows = g.at(a).type.dims[0].size;
  int s = grad::Emit(g, "softmax", {a});
  int gs = grad::Emit(g, "mul", {gout, s});
  int centered = grad::Emit(g, "sub", {gout, LastAxisSum(g, gs)});
  int r = grad::Emit(g, "div", {b, grad::Constant(g, static_cast<double>(rows))});
  int ga = grad::Emit(g, "mul", {grad::Emit(g, "mul", {s, centered}), r});
  int unit = grad::Emit(g, "cross_entropy_grad", {a, t, grad::Constant(g, 1.0)});
  int gb = grad::Emit(g, "sum", {grad::Emit(g, "mul", {gout, unit})});
  return {ga, -1, gb};
}

}  // namespace

void AddNnRules(RuleSet& r) {
  r["softmax"] = {InferRowwise, GradSoftmax};
  r["log_softmax"] = {InferRowwise, GradLogSoftmax};
  r["cross_entropy"] = {InferCrossEntropy, GradCrossEntropy};
  r["cross_entropy_grad"] = {InferCrossEntropyGrad, GradCrossEntropyGrad};
}

}  // namespace scellis::webir
