// Every op in the registry has a CPU reference: a scalar definition for elementwise ops (with its
// WGSL expression beside it), a kernel for the others. A built-in op without one is a bug.
#include <gtest/gtest.h>

#include "kernel/ref/ref.h"
#include "kernel/emit/wgsl/codegen.h"
#include "webir/op_registry.h"

namespace scellis::kernel::ref {
namespace {

TEST(ReferenceCoverage, EveryRegisteredOpHasAReference) {
  for (const webir::OpDef& d : webir::Registry()) {
    if (d.kind == webir::OpKind::kSource) continue;
    if (d.kind == webir::OpKind::kElementwise) {
      EXPECT_NE(FindScalar(d.name), nullptr) << d.name << " has no scalar reference";
      EXPECT_NE(wgsl::ElementwiseExpr(d.name, "a", "b"), "") << d.name << " has no WGSL expression";
    } else {
      EXPECT_NE(FindOp(d.name), nullptr) << d.name << " has no CPU reference kernel";
    }
  }
}

}  // namespace
}  // namespace scellis::kernel::ref
