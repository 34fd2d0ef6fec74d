#include "webir/op_registry.h"

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

void RegisterStencilOps(std::vector<OpDef>& r) {
  r.push_back({.name = "life",
               .min_version = 1,
               .inputs = {"a"},
               .attrs = {},
               .kind = OpKind::kStencil,
               .infer = InferLife,
               .tolerance = policy::ToleranceClass::kExact,
               .determinism = "exact (integer neighbour counts on 0/1 cells)",
               .summary = "one Game-of-Life step on a toroidal grid of 0/1 cells"});
}

}  // namespace scellis::webir
