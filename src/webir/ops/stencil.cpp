#include "webir/autodiff/autodiff.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

Result<TensorType> InferLife(InferContext& c) {
  const TensorType& a = c.args[0];
  if (a.rank() != 2) {
    return c.Error("bad-rank", "life takes a rank-2 grid, got " + a.ShapeStringWithSizes());
  }
  return a;
}

bool IsBoundary(const Json& b) {
  return b == "zero" || b == "wrap" || b == "clamp";
}

Result<TensorType> InferShift(InferContext& c) {
  const TensorType& a = c.args[0];
  const Json& shifts = c.attrs.at("shifts");
  if (shifts.size() != static_cast<size_t>(a.rank())) {
    return c.Error("bad-shifts",
                   "shift takes one entry in `shifts` per axis of " + a.ShapeStringWithSizes() +
                       ", got " + std::to_string(shifts.size()),
                   "give 0 for the axes that do not move");
  }
  if (!c.attrs.contains("boundary")) c.attrs["boundary"] = "zero";
  if (!IsBoundary(c.attrs["boundary"])) {
    return c.Error("bad-boundary",
                   "shift's boundary must be \"zero\", \"wrap\" or \"clamp\", got " +
                       c.attrs["boundary"].dump());
  }
  return a;
}

// out[i] = a[i - s] with zeros (or the wrapped element) outside: its adjoint reads the upstream
// gradient at j + s, with the same boundary — the shift by -s.
std::vector<int> GradShift(Graph& g, const Node& n, int gout) {
  Json back = Json::array();
  for (const Json& s : n.attrs.at("shifts")) back.push_back(-s.get<int64_t>());
  return {grad::Emit(g, "shift", {gout}, {{"shifts", back}, {"boundary", n.attrs.at("boundary")}})};
}

// A clamped read sends the gradient of every element past an edge to the edge element: a sum the
// shift alone cannot express.
const char* ShiftNoGradient(const Node& n) {
  return n.attrs.at("boundary") == "clamp" ? "with boundary \"clamp\"" : nullptr;
}

}  // namespace

void AddStencilRules(RuleSet& r) {
  r["life"] = {InferLife, nullptr};
  r["shift"] = {InferShift, GradShift, ShiftNoGradient};
}

}  // namespace scellis::webir
