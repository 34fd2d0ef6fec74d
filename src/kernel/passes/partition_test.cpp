// partition: one kernel per computed node, in graph order.
#include <gtest/gtest.h>

#include "kernel/passes/passes.h"
#include "support/graph.h"

namespace scellis::kernel {
namespace {

using scellis::testing::GraphDoc;
using scellis::testing::InputNode;

Module Unpartitioned(const Json& doc) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.up_to = pipeline::Rung::kWebir;
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return FromWebir(c->graph).value();
}

TEST(PartitionPass, OneKernelPerComputedNode) {
  // %2 = mul(x, x); %3 = matmul(%2, w); %4 = relu(%3); the constant %5 is read by nobody.
  Json doc = GraphDoc({InputNode(0, {2, 2}, {1, 2, 3, 4}),
                       InputNode(1, {2, 2}, {1, 0, 0, 1}),
                       {{"id", 2}, {"op", "mul"}, {"a", 0}, {"b", 0}},
                       {{"id", 3}, {"op", "matmul"}, {"a", 2}, {"b", 1}},
                       {{"id", 4}, {"op", "relu"}, {"a", 3}},
                       {{"id", 5}, {"op", "full"}, {"shape", {2}}, {"value", 3}}},
                      {{"y", 4}}, 2);
  Module m = Unpartitioned(doc);
  EXPECT_TRUE(m.kernels.empty());
  ASSERT_TRUE(Partition(m).ok());
  ASSERT_EQ(m.kernels.size(), 3u) << Print(m);

  const Kernel& mul = m.kernels[0];
  EXPECT_EQ(mul.name, "k0_fused_mul");
  EXPECT_EQ(mul.kind, KernelKind::kElementwise);
  EXPECT_EQ(mul.inputs, (std::vector<int>{0}));  // x read twice, bound once
  ASSERT_EQ(mul.expr.size(), 1u);
  EXPECT_EQ(mul.expr[0].operands, (std::vector<int>{0, 0}));
  EXPECT_EQ(mul.output, 2);

  const Kernel& matmul = m.kernels[1];
  EXPECT_EQ(matmul.name, "k1_matmul");
  EXPECT_EQ(matmul.kind, KernelKind::kOp);
  EXPECT_EQ(matmul.inputs, (std::vector<int>{2, 1}));
  EXPECT_EQ(matmul.transposed, (std::vector<bool>{false, false}));

  EXPECT_EQ(m.kernels[2].name, "k2_fused_relu");
  EXPECT_EQ(m.kernels[2].inputs, (std::vector<int>{3}));
  for (const Kernel& k : m.kernels) EXPECT_TRUE(k.sources.empty()) << k.name;
  EXPECT_TRUE(Verify(m).ok());
}

}  // namespace
}  // namespace scellis::kernel
