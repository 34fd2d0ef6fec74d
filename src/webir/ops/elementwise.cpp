// Elementwise ops: each output element depends only on the same (broadcast) index of each input,
// so chains of them fuse into one kernel. Their scalar definitions live in
// kernel/ref/elementwise.cpp (CPU) and kernel/emit/wgsl/elementwise.cpp (WGSL).
#include "webir/autodiff/autodiff.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

using grad::Emit;

int ArgType(Graph& g, const Node& n, int k, int value) {
  return grad::SumToShape(g, value, g.at(n.args[k]).type);
}

std::vector<int> GradAdd(Graph& g, const Node& n, int gout) {
  return {ArgType(g, n, 0, gout), ArgType(g, n, 1, gout)};
}
std::vector<int> GradSub(Graph& g, const Node& n, int gout) {
  return {ArgType(g, n, 0, gout), ArgType(g, n, 1, Emit(g, "neg", {gout}))};
}
std::vector<int> GradMul(Graph& g, const Node& n, int gout) {
  return {ArgType(g, n, 0, Emit(g, "mul", {gout, n.args[1]})),
          ArgType(g, n, 1, Emit(g, "mul", {gout, n.args[0]}))};
}
// d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b.
std::vector<int> GradDiv(Graph& g, const Node& n, int gout) {
  int ga = Emit(g, "div", {gout, n.args[1]});
  int gb = Emit(g, "neg", {Emit(g, "div", {Emit(g, "mul", {gout, n.id}), n.args[1]})});
  return {ArgType(g, n, 0, ga), ArgType(g, n, 1, gb)};
}
// As PyTorch's maximum backward: the larger operand takes the gradient, ties split it in half, a
// NaN operand passes it to both. minimum is maximum with the operands' roles swapped.
std::vector<int> GradMaximum(Graph& g, const Node& n, int gout) {
  int a = n.args[0], b = n.args[1];
  return {ArgType(g, n, 0, Emit(g, "mul", {gout, Emit(g, "max_share", {a, b})})),
          ArgType(g, n, 1, Emit(g, "mul", {gout, Emit(g, "max_share", {b, a})}))};
}
std::vector<int> GradMinimum(Graph& g, const Node& n, int gout) {
  int a = n.args[0], b = n.args[1];
  return {ArgType(g, n, 0, Emit(g, "mul", {gout, Emit(g, "max_share", {b, a})})),
          ArgType(g, n, 1, Emit(g, "mul", {gout, Emit(g, "max_share", {a, b})}))};
}
// where: the gradient goes to the operand that was chosen, zero to the other (torch.where's
// backward); cond, a bool, gets none.
std::vector<int> GradWhere(Graph& g, const Node& n, int gout) {
  int cond = n.args[0], zero = grad::Constant(g, 0.0);
  return {-1, ArgType(g, n, 1, Emit(g, "where", {cond, gout, zero})),
          ArgType(g, n, 2, Emit(g, "where", {cond, zero, gout}))};
}
// masked_fill: the gradient passes where the mask is false; the mask and the filled value (a
// constant) get none.
std::vector<int> GradMaskedFill(Graph& g, const Node& n, int gout) {
  int ga = Emit(g, "where", {n.args[1], grad::Constant(g, 0.0), gout});
  return {ArgType(g, n, 0, ga), -1, -1};
}
// clamp, as PyTorch's clamp backward: the gradient passes where min <= a <= max (so not at NaN)
// and is zero elsewhere; the bounds are constants.
std::vector<int> GradClamp(Graph& g, const Node& n, int gout) {
  int a = n.args[0], zero = grad::Constant(g, 0.0);
  int inside = Emit(g, "where", {Emit(g, "le", {a, n.args[2]}), gout, zero});
  return {Emit(g, "where", {Emit(g, "ge", {a, n.args[1]}), inside, zero}), -1, -1};
}
// cast: f32 to f32 passes the gradient; a bool or an i32 on either side has none (as PyTorch).
// Between float dtypes the gradient is cast back to the operand's dtype (mixed precision's f16
// products and their f32 operands); a cast to or from an integer has none.
std::vector<int> GradCast(Graph& g, const Node& n, int gout) {
  auto is_float = [](DType t) { return t == DType::kF32 || t == DType::kF16; };
  const DType from = g.at(n.args[0]).type.dtype;
  if (!is_float(from) || !is_float(n.type.dtype)) return {-1};
  if (from == n.type.dtype) return {gout};
  return {Emit(g, "cast", {gout}, {{"dtype", DTypeName(from)}})};
}
// Gated on relu's result, as PyTorch's threshold_backward(grad, result, 0): relu(x) > 0 exactly
// where x > 0 (NaN passes both, -0 and +0 neither), so the gradient's bits are those of a gate on
// x, and x need not be kept for the backward: the forward's add and relu fuse into one kernel
// (a matmul's epilogue, after a linear layer).
std::vector<int> GradRelu(Graph& g, const Node& n, int gout) {
  return {Emit(g, "mul", {gout, Emit(g, "positive", {n.id})})};
}
std::vector<int> GradNeg(Graph& g, const Node& n, int gout) {
  return {Emit(g, "neg", {gout})};
}
std::vector<int> GradExp(Graph& g, const Node& n, int gout) {
  return {Emit(g, "mul", {gout, n.id})};
}
std::vector<int> GradLog(Graph& g, const Node& n, int gout) {
  return {Emit(g, "div", {gout, n.args[0]})};
}
// d sqrt(a) = 0.5 / sqrt(a).
std::vector<int> GradSqrt(Graph& g, const Node& n, int gout) {
  return {Emit(g, "div", {Emit(g, "mul", {gout, grad::Constant(g, 0.5)}), n.id})};
}
// d tanh(a) = 1 - tanh(a)^2.
std::vector<int> GradTanh(Graph& g, const Node& n, int gout) {
  int sq = Emit(g, "mul", {n.id, n.id});
  return {Emit(g, "mul", {gout, Emit(g, "sub", {grad::Constant(g, 1.0), sq})})};
}
// d sigmoid(a) = s (1 - s).
std::vector<int> GradSigmoid(Graph& g, const Node& n, int gout) {
  int one_minus = Emit(g, "sub", {grad::Constant(g, 1.0), n.id});
  return {Emit(g, "mul", {Emit(g, "mul", {gout, n.id}), one_minus})};
}
std::vector<int> GradGelu(Graph& g, const Node& n, int gout) {
  return {Emit(g, "gelu_grad", {n.args[0], gout})};
}
// gelu_grad(a, b) = b * gelu'(a), gelu'(a) = Phi(a) + a phi(a), gelu''(a) = phi(a) (2 - a^2) with
// phi(a) = exp(-a^2 / 2) / sqrt(2 pi).
std::vector<int> GradGeluGrad(Graph& g, const Node& n, int gout) {
  int a = n.args[0], b = n.args[1];
  int sq = Emit(g, "mul", {a, a});
  int pdf = Emit(g, "div",
                 {Emit(g, "exp", {Emit(g, "mul", {sq, grad::Constant(g, -0.5)})}),
                  grad::Constant(g, 2.5066282746310002)});
  int second = Emit(g, "mul", {pdf, Emit(g, "sub", {grad::Constant(g, 2.0), sq})});
  int ga = Emit(g, "mul", {Emit(g, "mul", {gout, b}), second});
  int gb = Emit(g, "gelu_grad", {a, gout});
  return {ArgType(g, n, 0, ga), ArgType(g, n, 1, gb)};
}

// A comparison broadcasts as the arithmetic ops and gives a bool.
Result<TensorType> InferComparison(InferContext& c) {
  SCELLIS_ASSIGN_OR_RETURN(TensorType t, InferBroadcast(c));
  t.dtype = DType::kBool;
  return t;
}

// where(cond, a, b): the three broadcast together; the result has a's (and b's) dtype.
Result<TensorType> InferWhere(InferContext& c) {
  InferContext values = c;
  values.args = {c.args[1], c.args[2]};
  SCELLIS_ASSIGN_OR_RETURN(TensorType ab, InferBroadcast(values));
  InferContext with_cond = c;
  with_cond.args = {ab, c.args[0]};
  with_cond.args[1].dtype = ab.dtype;  // cond's dtype is its port's (bool), checked there
  return InferBroadcast(with_cond);
}

// masked_fill(a, mask, value): as torch, the result has a's shape, which the mask broadcasts to.
Result<TensorType> InferMaskedFill(InferContext& c) {
  const TensorType& a = c.args[0];
  auto dims = BroadcastDims(a.dims, c.args[1].dims);
  if (!dims || !TensorType{*dims, a.dtype}.SameShape(a)) {
    return c.Error("shape-mismatch",
                   "the mask " + c.args[1].ShapeStringWithSizes() + " does not broadcast to a " +
                       a.ShapeStringWithSizes(),
                   "the mask's sizes, aligned from the right, are each a's or 1");
  }
  return a;
}

// cast(a, dtype): a's shape in `dtype`, any of the engine's.
Result<TensorType> InferCast(InferContext& c) {
  auto it = c.attrs.find("dtype");
  std::optional<DType> to;
  if (it != c.attrs.end() && it->is_string()) to = ParseDType(it->get<std::string>());
  if (!to) {
    return c.Error("bad-dtype", "cast converts to " + DTypeChoices() + ", not " +
                                    (it == c.attrs.end() ? std::string("nothing") : it->dump()));
  }
  TensorType t = c.args[0];
  t.dtype = *to;
  return t;
}

}  // namespace

void AddElementwiseRules(RuleSet& r) {
  r["add"] = {InferBroadcast, GradAdd};
  r["sub"] = {InferBroadcast, GradSub};
  r["mul"] = {InferBroadcast, GradMul};
  r["div"] = {InferBroadcast, GradDiv};
  r["maximum"] = {InferBroadcast, GradMaximum};
  r["minimum"] = {InferBroadcast, GradMinimum};
  r["max_share"] = {InferBroadcast, nullptr};  // a step function: no useful derivative
  for (const char* cmp : {"eq", "ne", "lt", "le", "gt", "ge"})
    r[cmp] = {InferComparison, nullptr};  // bool results carry no gradient
  r["where"] = {InferWhere, GradWhere};
  r["masked_fill"] = {InferMaskedFill, GradMaskedFill};
  r["clamp"] = {InferSameAsFirst, GradClamp};
  r["cast"] = {InferCast, GradCast};
  r["relu"] = {InferSameAsFirst, GradRelu};
  r["positive"] = {InferSameAsFirst, nullptr};  // a step function: no useful derivative
  r["neg"] = {InferSameAsFirst, GradNeg};
  r["exp"] = {InferSameAsFirst, GradExp};
  r["log"] = {InferSameAsFirst, GradLog};
  r["sqrt"] = {InferSameAsFirst, GradSqrt};
  r["tanh"] = {InferSameAsFirst, GradTanh};
  r["sigmoid"] = {InferSameAsFirst, GradSigmoid};
  r["gelu"] = {InferSameAsFirst, GradGelu};
  r["gelu_grad"] = {InferBroadcast, GradGeluGrad};
  // Integer bit operations: step functions of integers, no gradient (as torch's).
  for (const char* bits : {"bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"})
    r[bits] = {InferBroadcast, nullptr};
}

}  // namespace scellis::webir
