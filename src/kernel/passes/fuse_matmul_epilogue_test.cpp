// fuse-matmul-epilogue: the elementwise kernel after a matmul becomes the matmul's epilogue.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "kernel/emit/wgsl/codegen.h"
#include "kernel/passes/passes.h"
#include "support/graph.h"

namespace scellis::kernel {
namespace {

using scellis::testing::CompileAndRun;
using scellis::testing::FindOutput;
using scellis::testing::GraphDoc;
using scellis::testing::InputNode;

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

Module Before(const Json& doc) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.print_after = "fold-transposes";
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return *c->module;
}

// y = relu(x @ w + b) with x 4x3, w 3x5, b 5; `extra` nodes and outputs are added to it.
Json LinearRelu(const std::vector<Json>& extra = {},
                std::vector<std::pair<std::string, int>> outputs = {{"y", 5}}) {
  std::vector<Json> nodes = {InputNode(0, {4, 3}, Random(12, 1)),
                             InputNode(1, {3, 5}, Random(15, 2)),
                             InputNode(2, {5}, Random(5, 3)),
                             {{"id", 3}, {"op", "matmul"}, {"a", 0}, {"b", 1}},
                             {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 2}},
                             {{"id", 5}, {"op", "relu"}, {"a", 4}}};
  nodes.insert(nodes.end(), extra.begin(), extra.end());
  return GraphDoc(nodes, outputs, 2);
}

TEST(FuseMatmulEpiloguePass, BiasAndReluBecomeTheMatmulsEpilogue) {
  Module m = Before(LinearRelu());
  ASSERT_EQ(m.kernels.size(), 2u) << Print(m);
  ASSERT_TRUE(FuseMatmulEpilogue(m).ok());
  ASSERT_EQ(m.kernels.size(), 1u) << Print(m);
  const Kernel& k = m.kernels[0];
  EXPECT_EQ(k.name, "k0_matmul_add_relu");
  EXPECT_TRUE(k.HasEpilogue());
  EXPECT_EQ(k.OpNode(), 3);
  EXPECT_EQ(k.output, 5);
  EXPECT_EQ(k.inputs, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(k.expr.size(), 3u);
  EXPECT_EQ(k.expr[0].op, "matmul");
  EXPECT_EQ(k.expr[1].operands, (std::vector<int>{StepRef(0), 2}));  // the sum + b
  EXPECT_EQ(k.expr[2].operands, (std::vector<int>{StepRef(1)}));
  EXPECT_TRUE(Verify(m).ok());
  // The elementwise kernel it was: the sum as input 0, b as input 1.
  const Kernel e = EpilogueKernel(k);
  EXPECT_EQ(e.inputs, (std::vector<int>{3, 2}));
  EXPECT_EQ(e.expr[0].operands, (std::vector<int>{0, 1}));
  EXPECT_EQ(e.expr[1].operands, (std::vector<int>{StepRef(0)}));
}

TEST(FuseMatmulEpiloguePass, ComputesWhatTheUnfusedKernelsComputeBitForBit) {
  const Json doc = LinearRelu();
  pipeline::CompileOptions off = scellis::testing::ProdOptions();
  off.disabled_passes = {"fuse-matmul-epilogue"};
  auto fused = CompileAndRun(doc.dump());
  auto unfused = CompileAndRun(doc.dump(), 1, off);
  ASSERT_NE(FindOutput(fused, "y"), nullptr);
  ASSERT_NE(FindOutput(unfused, "y"), nullptr);
  const std::vector<float> y = FindOutput(fused, "y")->ToFloats();
  const std::vector<float> y_off = FindOutput(unfused, "y")->ToFloats();
  ASSERT_EQ(y.size(), 20u);
  EXPECT_EQ(std::memcmp(y.data(), y_off.data(), y.size() * 4), 0);
  // Against float64: relu(x @ w + b).
  const std::vector<float> x = Random(12, 1), w = Random(15, 2), b = Random(5, 3);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 5; ++c) {
      double s = 0;
      for (int i = 0; i < 3; ++i) s += double{x[r * 3 + i]} * w[i * 5 + c];
      EXPECT_NEAR(y[r * 5 + c], std::max(0.0, s + b[c]), 1e-6) << r << "," << c;
    }
}

TEST(FuseMatmulEpiloguePass, EveryScheduleAppliesTheEpilogueAtTheStore) {
  Module m = Before(LinearRelu());
  ASSERT_TRUE(FuseMatmulEpilogue(m).ok());
  const MatmulShape shape = MatmulShapeOf(m, m.kernels[0]);
  MatmulSchedule per_element;
  per_element.kind = MatmulSchedule::Kind::kPerElement;
  for (const MatmulSchedule& s : {SmallMatmulSchedule(), MediumMatmulSchedule(), per_element}) {
    m.kernels[0].matmul_schedule = s;
    auto g = wgsl::Generate(m, m.kernels[0]);
    ASSERT_TRUE(g.ok()) << s.Name();
    EXPECT_NE(g->source.find("fn epilogue(x0: f32, e: u32) -> f32"), std::string::npos) << s.Name();
    EXPECT_NE(g->source.find("@binding(3) var<storage, read_write> out"), std::string::npos)
        << s.Name();
    EXPECT_NE(g->source.find("= epilogue(acc"), std::string::npos) << s.Name();
  }
  (void)shape;
}

// A matmul that binds more than the device's binding cap runs in tiles, which take no epilogue:
// the pass leaves it (and its elementwise kernel) alone.
TEST(FuseMatmulEpiloguePass, LeavesAMatmulOverTheBindingCapAlone) {
  Module m = Before(LinearRelu());
  const size_t before = m.kernels.size();
  m.binding_cap = 16;  // bytes: the 4x3 input alone is 48
  ASSERT_TRUE(FuseMatmulEpilogue(m).ok());
  EXPECT_EQ(m.kernels.size(), before) << Print(m);
  m.binding_cap = 1 << 20;
  ASSERT_TRUE(FuseMatmulEpilogue(m).ok());
  EXPECT_EQ(m.kernels.size(), before - 1) << Print(m);
}

TEST(FuseMatmulEpiloguePass, LeavesAResultThatIsReadElsewhereNamedOrBroadcast) {
  // The sum is also read by another kernel (a sum over it).
  {
    Module m = Before(LinearRelu({{{"id", 6}, {"op", "sum"}, {"a", 3}}}, {{"y", 5}, {"s", 6}}));
    const size_t before = m.kernels.size();
    ASSERT_TRUE(FuseMatmulEpilogue(m).ok());
    EXPECT_EQ(m.kernels.size(), before) << Print(m);
  }
  // The sum is a named output.
  {
    Module m = Before(LinearRelu({}, {{"y", 5}, {"mm", 3}}));
    ASSERT_TRUE(FuseMatmulEpilogue(m).ok());
    EXPECT_EQ(m.kernels.size(), 2u) << Print(m);
  }
  // The elementwise kernel is larger than the sum (broadcast over a leading dimension).
  {
    Json doc = GraphDoc({InputNode(0, {4, 3}, Random(12, 1)),
                         InputNode(1, {3, 5}, Random(15, 2)),
                         InputNode(2, {2, 4, 5}, Random(40, 3)),
                         {{"id", 3}, {"op", "matmul"}, {"a", 0}, {"b", 1}},
                         {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 2}}},
                        {{"y", 4}}, 2);
    Module m = Before(doc);
    ASSERT_TRUE(FuseMatmulEpilogue(m).ok());
    EXPECT_EQ(m.kernels.size(), 2u) << Print(m);
  }
}

TEST(FuseMatmulEpiloguePass, KeepsALoopInvariantProductOutOfTheLoopBody) {
  // repeat 3: %2 = q @ q reads nothing carried (hoisted, computed once); %3 = u + %2 is carried
  // back into u, so an epilogue would redo the product in every iteration. A product of the
  // carried value takes its epilogue: %5 = neg(u @ q).
  Json u = InputNode(0, {2, 2}, {1, 2, 3, 4});
  u["name"] = "u";
  u["carry"] = "u_next";
  Json doc = GraphDoc({u,
                       InputNode(1, {2, 2}, {0.5, 0, 0, 0.5}),
                       {{"id", 2}, {"op", "matmul"}, {"a", 1}, {"b", 1}},
                       {{"id", 3}, {"op", "add"}, {"a", 0}, {"b", 2}},
                       {{"id", 4}, {"op", "matmul"}, {"a", 0}, {"b", 1}},
                       {{"id", 5}, {"op", "neg"}, {"a", 4}}},
                      {{"u_next", 3}, {"v", 5}}, 5);
  doc["repeat"] = 3;
  Module m = Before(doc);
  ASSERT_EQ(m.kernels.size(), 4u) << Print(m);
  ASSERT_TRUE(FuseMatmulEpilogue(m).ok());
  ASSERT_EQ(m.kernels.size(), 3u) << Print(m);
  int epilogues = 0;
  for (const Kernel& k : m.kernels) {
    if (!k.HasEpilogue()) continue;
    ++epilogues;
    EXPECT_EQ(k.OpNode(), 4) << k.name;
    EXPECT_EQ(k.output, 5) << k.name;
  }
  EXPECT_EQ(epilogues, 1);
}

}  // namespace
}  // namespace scellis::kernel
