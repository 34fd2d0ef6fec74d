// fold-transposes: a transpose read only by matmuls becomes a transposed read.
#include <gtest/gtest.h>

#include "kernel/passes/passes.h"
#include "support/graph.h"

namespace scellis::kernel {
namespace {

using scellis::testing::GraphDoc;
using scellis::testing::InputNode;

Module Fused(const Json& doc) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.print_after = "fuse-elementwise";
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return *c->module;
}

TEST(FoldTransposesPass, TransposeReadOnlyByMatmulsFoldsAway) {
  // %2 = x^T (2x3), %3 = %2 @ w (2x4), %4 = %3^T (4x2), %5 = %4 @ %3 (4x4).
  Json doc = GraphDoc({InputNode(0, {3, 2}, {1, 2, 3, 4, 5, 6}),
                       InputNode(1, {3, 4}, std::vector<float>(12, 1.0f)),
                       {{"id", 2}, {"op", "transpose"}, {"a", 0}},
                       {{"id", 3}, {"op", "matmul"}, {"a", 2}, {"b", 1}},
                       {{"id", 4}, {"op", "transpose"}, {"a", 3}},
                       {{"id", 5}, {"op", "matmul"}, {"a", 4}, {"b", 3}}},
                      {{"y", 5}}, 2);
  Module m = Fused(doc);
  ASSERT_EQ(m.kernels.size(), 4u) << Print(m);
  ASSERT_TRUE(FoldTransposes(m).ok());
  ASSERT_EQ(m.kernels.size(), 2u) << Print(m);
  EXPECT_EQ(m.kernels[0].name, "k0_matmul");
  EXPECT_EQ(m.kernels[0].inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(m.kernels[0].transposed, (std::vector<bool>{true, false}));
  EXPECT_EQ(m.kernels[1].name, "k1_matmul");
  EXPECT_EQ(m.kernels[1].inputs, (std::vector<int>{3, 3}));
  EXPECT_EQ(m.kernels[1].transposed, (std::vector<bool>{true, false}));
  EXPECT_TRUE(Verify(m).ok());

  // With folding off the transposes stay kernels, and the values agree: y = (x^T w)^T (x^T w).
  pipeline::CompileOptions off = scellis::testing::ProdOptions();
  off.disabled_passes = {"fold-transposes"};
  auto folded = scellis::testing::CompileAndRun(doc.dump());
  auto unfolded = scellis::testing::CompileAndRun(doc.dump(), 1, off);
  // x^T w: row i of x^T is column i of x, summed: column sums of x = (9, 12), each in 4 columns.
  // y[j][k] = sum_i p[i][j] p[i][k] = 9*9 + 12*12 = 225 everywhere.
  ASSERT_NE(scellis::testing::FindOutput(folded, "y"), nullptr);
  ASSERT_NE(scellis::testing::FindOutput(unfolded, "y"), nullptr);
  EXPECT_EQ(scellis::testing::FindOutput(folded, "y")->ToFloats(), std::vector<float>(16, 225.0f));
  EXPECT_EQ(scellis::testing::FindOutput(unfolded, "y")->ToFloats(), std::vector<float>(16, 225.0f));
}

TEST(FoldTransposesPass, TransposeWithAnotherReaderOrNamedStays) {
  // %2 = x^T is read by a matmul and by relu; %4 = x^T again is a named output.
  Json doc = GraphDoc({InputNode(0, {2, 2}, {1, -2, 3, -4}),
                       {{"id", 2}, {"op", "transpose"}, {"a", 0}},
                       {{"id", 3}, {"op", "matmul"}, {"a", 2}, {"b", 0}},
                       {{"id", 4}, {"op", "transpose"}, {"a", 0}},
                       {{"id", 5}, {"op", "relu"}, {"a", 2}}},
                      {{"y", 3}, {"t", 4}, {"r", 5}}, 2);
  Module m = Fused(doc);
  const size_t before = m.kernels.size();
  ASSERT_TRUE(FoldTransposes(m).ok());
  EXPECT_EQ(m.kernels.size(), before) << Print(m);
  for (const Kernel& k : m.kernels)
    for (bool t : k.transposed) EXPECT_FALSE(t) << k.name;
}

}  // namespace
}  // namespace scellis::kernel
