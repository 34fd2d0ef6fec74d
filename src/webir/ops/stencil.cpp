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

}  // namespace

void AddStencilRules(RuleSet& r) {
  r["life"] = {InferLife, nullptr};
}

}  // namespace scellis::webir
