// Reductions. Determinism: every output element is accumulated in a fixed order on the CPU
// reference (sequential along the axis; whole-tensor sums as a fixed two-level tree: 256 strided
// lanes, then a pairwise combine). GPU kernels use the same order and never float atomics, so a GPU
// result is reproducible on the same device in every tier.
#include "webir/autodiff/autodiff.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

Result<TensorType> InferReduce(InferContext& c) {
  const TensorType& a = c.args[0];
  SCELLIS_ASSIGN_OR_RETURN(int axis, AxisAttr(c, "axis", a.rank()));
  bool keepdim = false;
  if (auto k = c.attrs.find("keepdim"); k != c.attrs.end()) {
    if (!k->is_boolean())
      return c.Error("bad-attribute", "keepdim is " + k->dump() + ", expected true or false");
    keepdim = k->get<bool>();
  }
  if ((axis >= 0 || keepdim) && c.version < 2) {
    return c.Error("op-newer-than-version",
                   "a reduction over one axis needs graph protocol version 2, the graph is "
                   "labelled version " +
                       std::to_string(c.version),
                   "label the graph \"version\": 2");
  }
  TensorType out;
  out.dtype = a.dtype;
  for (int i = 0; i < a.rank(); ++i) {
    bool reduced = axis < 0 || i == axis;
    if (!reduced)
      out.dims.push_back(a.dims[i]);
    else if (keepdim)
      out.dims.push_back(Dim{1, ""});
  }
  c.attrs["axis"] = axis < 0 ? Json() : Json(axis);
  c.attrs["keepdim"] = keepdim;
  return out;
}

// The output gradient, reshaped to keep the reduced axis (if it was dropped) and broadcast back
// over the input's shape. Mean divides by the count before broadcasting.
int SpreadBack(Graph& g, const Node& n, int gout, bool mean) {
  const TensorType in = g.at(n.args[0]).type;  // a copy: Emit appends to g.nodes
  const Json& axis = n.attrs.at("axis");
  int64_t count = axis.is_null() ? in.elements() : in.dims[axis.get<int>()].size;
  int x = gout;
  if (!axis.is_null() && !n.attrs.value("keepdim", false)) {
    Json shape = Json::array();
    for (int i = 0; i < in.rank(); ++i) shape.push_back(i == axis.get<int>() ? 1 : in.dims[i].size);
    x = grad::Emit(g, "reshape", {x}, {{"shape", shape}});
  }
  if (mean) x = grad::Emit(g, "div", {x, grad::Constant(g, static_cast<double>(count))});
  return grad::BroadcastTo(g, x, in);
}

std::vector<int> GradSum(Graph& g, const Node& n, int gout) {
  return {SpreadBack(g, n, gout, false)};
}
std::vector<int> GradMean(Graph& g, const Node& n, int gout) {
  return {SpreadBack(g, n, gout, true)};
}

Result<TensorType> InferCumsum(InferContext& c) {
  const TensorType& a = c.args[0];
  if (a.rank() == 0) return c.Error("bad-rank", "cumsum runs along an axis; a rank-0 value has none");
  SCELLIS_ASSIGN_OR_RETURN(int axis, AxisAttr(c, "axis", a.rank()));
  c.attrs["axis"] = axis;
  return a;
}

// Each input element reaches every later running sum: its gradient is the sum of the upstream
// gradients from its own position to the end, a cumsum from the other end.
std::vector<int> GradCumsum(Graph& g, const Node& n, int gout) {
  const Json axes = Json::array({n.attrs.at("axis")});
  int reversed = grad::Emit(g, "flip", {gout}, {{"axes", axes}});
  int sums = grad::Emit(g, "cumsum", {reversed}, {{"axis", n.attrs.at("axis")}});
  return {grad::Emit(g, "flip", {sums}, {{"axes", axes}})};
}

}  // namespace

void AddReduceRules(RuleSet& r) {
  r["sum"] = {InferReduce, GradSum};
  r["mean"] = {InferReduce, GradMean};
  r["cumsum"] = {InferCumsum, GradCumsum};
}

}  // namespace scellis::webir
