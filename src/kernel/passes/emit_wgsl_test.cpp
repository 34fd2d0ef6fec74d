// emit-wgsl: every kernel gets its WGSL, hashed, and the dispatch grid the source expects.
#include <gtest/gtest.h>

#include "base/sha256.h"
#include "kernel/emit/wgsl/codegen.h"
#include "kernel/passes/passes.h"
#include "support/graph.h"

namespace scellis::kernel {
namespace {

using scellis::testing::GraphDoc;
using scellis::testing::InputNode;

TEST(EmitWgslPass, EverySourceHashedWithItsGrid) {
  // 1000 elements at 64 invocations per workgroup: 16 workgroups.
  Json doc = GraphDoc({InputNode(0, {1000}, std::vector<float>(1000, 0.5f)),
                       {{"id", 1}, {"op", "relu"}, {"a", 0}},
                       {{"id", 2}, {"op", "sum"}, {"a", 1}}},
                      {{"s", 2}}, 2);
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.print_after = "fold-transposes";
  auto c = pipeline::Compile(doc.dump(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  Module m = *c->module;
  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(m.kernels[0].Source(kWgslTarget), nullptr);
  EXPECT_NE(Print(m).find("(not emitted)"), std::string::npos);

  ASSERT_TRUE(EmitWgsl(m).ok());
  for (const Kernel& k : m.kernels) {
    ASSERT_EQ(k.sources.size(), 1u) << k.name;
    const EmittedSource& s = k.Wgsl();
    EXPECT_EQ(s.target, "wgsl");
    EXPECT_NE(s.source.find("@compute"), std::string::npos) << k.name;
    EXPECT_NE(s.source.find("fn " + s.entry_point + "("), std::string::npos) << k.name;
    EXPECT_EQ(s.source_hash, Sha256Hex(s.source)) << k.name;
  }
  EXPECT_EQ(m.kernels[0].workgroups, (std::array<uint32_t, 3>{16, 1, 1}));
  EXPECT_TRUE(Verify(m).ok());

  // Emitting again replaces the source rather than adding a second one.
  ASSERT_TRUE(EmitWgsl(m).ok());
  EXPECT_EQ(m.kernels[0].sources.size(), 1u);
}

}  // namespace
}  // namespace scellis::kernel
