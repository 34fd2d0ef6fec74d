// fuse-elementwise: chains of elementwise kernels become one; the result does not depend on it.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include "base/random.h"
#include "kernel/passes/passes.h"
#include "support/graph.h"

namespace scellis::kernel {
namespace {

using scellis::testing::GraphDoc;
using scellis::testing::InputNode;
using scellis::testing::ProdOptions;

Module After(const Json& doc, const std::string& pass) {
  pipeline::CompileOptions o = ProdOptions();
  o.print_after = pass;
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return *c->module;
}

// positive(relu(a * b) + a - b): five elementwise ops.
Json FiveOpChain(const std::vector<float>& a, const std::vector<float>& b) {
  const int64_t n = static_cast<int64_t>(a.size());
  return GraphDoc({InputNode(0, {n}, a),
                   InputNode(1, {n}, b),
                   {{"id", 2}, {"op", "mul"}, {"a", 0}, {"b", 1}},
                   {{"id", 3}, {"op", "relu"}, {"a", 2}},
                   {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 0}},
                   {{"id", 5}, {"op", "sub"}, {"a", 4}, {"b", 1}},
                   {{"id", 6}, {"op", "positive"}, {"a", 5}}},
                  {{"y", 6}}, 2);
}

TEST(FuseElementwisePass, FiveOpChainBecomesOneKernel) {
  Module m = After(FiveOpChain({-1, 2, -3, 4}, {5, 6, 7, 8}), "partition");
  ASSERT_EQ(m.kernels.size(), 5u) << Print(m);
  ASSERT_TRUE(FuseElementwise(m).ok());
  ASSERT_EQ(m.kernels.size(), 1u) << Print(m);
  const Kernel& k = m.kernels[0];
  EXPECT_EQ(k.name, "k0_fused_mul_relu_add_sub_positive");
  EXPECT_EQ(k.inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(k.nodes, (std::vector<int>{2, 3, 4, 5, 6}));
  // s0 = a*b; s1 = relu(s0); s2 = s1 + a; s3 = s2 - b; s4 = positive(s3).
  ASSERT_EQ(k.expr.size(), 5u);
  EXPECT_EQ(k.expr[0].operands, (std::vector<int>{0, 1}));
  EXPECT_EQ(k.expr[1].operands, (std::vector<int>{StepRef(0)}));
  EXPECT_EQ(k.expr[2].operands, (std::vector<int>{StepRef(1), 0}));
  EXPECT_EQ(k.expr[3].operands, (std::vector<int>{StepRef(2), 1}));
  EXPECT_EQ(k.expr[4].operands, (std::vector<int>{StepRef(3)}));
  EXPECT_TRUE(Verify(m).ok());
}

// Two carried fields whose updates share p = u * v * v (Gray-Scott's coupling): u' = u - p,
// v' = v + p. `repeat` > 1 makes the graph a loop body.
Json SharedProductLoop(int repeat) {
  Json doc = GraphDoc(
      {{{"id", 0}, {"op", "input"}, {"name", "u"}, {"shape", {4}}, {"data", {1, 2, 3, 4}},
        {"carry", "u_next"}},
       {{"id", 1}, {"op", "input"}, {"name", "v"}, {"shape", {4}}, {"data", {0.5, 0.25, 1, 2}},
        {"carry", "v_next"}},
       {{"id", 2}, {"op", "mul"}, {"a", 0}, {"b", 1}},
       {{"id", 3}, {"op", "mul"}, {"a", 2}, {"b", 1}},
       {{"id", 4}, {"op", "sub"}, {"a", 0}, {"b", 3}},
       {{"id", 5}, {"op", "add"}, {"a", 1}, {"b", 3}}},
      {{"u_next", 4}, {"v_next", 5}}, 5);
  doc["repeat"] = repeat;
  return doc;
}

TEST(FuseElementwisePass, InALoopASmallSharedValueIsRecomputedByEachReader) {
  Module loop = After(SharedProductLoop(3), "fuse-elementwise");
  ASSERT_EQ(loop.kernels.size(), 2u) << Print(loop);  // u' and v', each computing p itself
  for (const Kernel& k : loop.kernels) {
    std::vector<int> inputs = k.inputs;
    std::sort(inputs.begin(), inputs.end());
    EXPECT_EQ(inputs, (std::vector<int>{0, 1})) << k.name;
    EXPECT_EQ(k.expr.size(), 3u) << k.name;  // u*v, *v, then the field's own update
  }
  // Run once, the graph keeps p as a kernel of its own: nothing is dispatched per iteration.
  Json once = SharedProductLoop(1);
  once.erase("repeat");
  for (Json& n : once["nodes"]) n.erase("carry");
  EXPECT_EQ(After(once, "fuse-elementwise").kernels.size(), 3u);
}

TEST(FuseElementwisePass, DisabledTheChainStaysFiveKernels) {
  pipeline::CompileOptions o = ProdOptions();
  o.up_to = pipeline::Rung::kKernel;
  o.disabled_passes = {"fuse-elementwise"};
  auto c = pipeline::Compile(FiveOpChain({1, 2}, {3, 4}).dump(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  ASSERT_EQ(c->module->kernels.size(), 5u) << Print(*c->module);
  for (const Kernel& k : c->module->kernels) EXPECT_EQ(k.expr.size(), 1u) << k.name;
}

TEST(FuseElementwisePass, ValueReadTwiceOrNamedEndsAKernel) {
  // %2 = exp(x) is read by two ops, %3 = neg(%2) is a named output: neither folds.
  Json doc = GraphDoc({InputNode(0, {3}, {0.5f, -1, 2}),
                       {{"id", 2}, {"op", "exp"}, {"a", 0}},
                       {{"id", 3}, {"op", "neg"}, {"a", 2}},
                       {{"id", 4}, {"op", "mul"}, {"a", 3}, {"b", 2}}},
                      {{"n", 3}, {"y", 4}}, 2);
  Module m = After(doc, "partition");
  ASSERT_TRUE(FuseElementwise(m).ok());
  ASSERT_EQ(m.kernels.size(), 3u) << Print(m);
}

// The CPU reference evaluates a fused kernel's steps one scalar op at a time in f32, the same ops
// in the same order as the unfused kernels, so the two give the same bits.
TEST(FuseElementwisePass, FusedAndUnfusedRunsAreBitIdentical) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t rows = 37, cols = 29;
  std::vector<float> x(rows * cols), b(cols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(4 * CounterUniform(seed, i) - 2);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<float>(CounterUniform(seed + 1, i) + 0.1);
  // tanh(exp(x * 0.37) / b - x) + sigmoid(x) * gelu(x), with b broadcast over rows.
  Json doc = GraphDoc({InputNode(0, {rows, cols}, x),
                       InputNode(1, {cols}, b),
                       {{"id", 2}, {"op", "mul"}, {"a", 0}, {"scalar", 0.37}},
                       {{"id", 3}, {"op", "exp"}, {"a", 2}},
                       {{"id", 4}, {"op", "div"}, {"a", 3}, {"b", 1}},
                       {{"id", 5}, {"op", "sub"}, {"a", 4}, {"b", 0}},
                       {{"id", 6}, {"op", "tanh"}, {"a", 5}},
                       {{"id", 7}, {"op", "sigmoid"}, {"a", 0}},
                       {{"id", 8}, {"op", "gelu"}, {"a", 0}},
                       {{"id", 9}, {"op", "mul"}, {"a", 7}, {"b", 8}},
                       {{"id", 10}, {"op", "add"}, {"a", 6}, {"b", 9}}},
                      {{"y", 10}}, 2);
  pipeline::CompileOptions unfused = ProdOptions();
  unfused.disabled_passes = {"fuse-elementwise"};
  auto fused_plan = pipeline::Compile(doc.dump(), ProdOptions());
  auto unfused_plan = pipeline::Compile(doc.dump(), unfused);
  ASSERT_TRUE(fused_plan.ok()) << fused_plan.errors().front().Format();
  ASSERT_TRUE(unfused_plan.ok());
  ASSERT_EQ(fused_plan->plan->steps.size(), 1u);
  ASSERT_GE(unfused_plan->plan->steps.size(), 9u);

  auto fused_run = scellis::testing::CompileAndRun(doc.dump());
  auto unfused_run = scellis::testing::CompileAndRun(doc.dump(), 1, unfused);
  const runtime::HostTensor* f = scellis::testing::FindOutput(fused_run, "y");
  const runtime::HostTensor* u = scellis::testing::FindOutput(unfused_run, "y");
  ASSERT_NE(f, nullptr);
  ASSERT_NE(u, nullptr);
  std::span<const float> fv = f->view<float>(), uv = u->view<float>();
  ASSERT_EQ(fv.size(), x.size());
  ASSERT_EQ(uv.size(), x.size());
  int differing = 0;
  for (size_t i = 0; i < x.size(); ++i)
    differing += std::bit_cast<uint32_t>(fv[i]) != std::bit_cast<uint32_t>(uv[i]);
  EXPECT_EQ(differing, 0);
  // And both are the expression, to float32 rounding (a float64 evaluation).
  for (size_t i = 0; i < x.size(); i += 97) {
    double xi = x[i], bi = b[i % cols];
    double want = std::tanh(std::exp(xi * 0.37) / bi - xi) +
                  1 / (1 + std::exp(-xi)) * 0.5 * xi * (1 + std::erf(xi / std::sqrt(2.0)));
    EXPECT_NEAR(fv[i], want, 1e-5 * (1 + std::abs(want))) << i;
  }
}

// A five-point stencil written as four shifts of u plus q: one kernel of shifted loads of u's
// buffer. A shift of a computed value cannot load it shifted, so that value keeps its kernel.
TEST(FuseElementwisePass, ShiftsOfABufferFuseIntoOneKernel) {
  auto shift = [](int id, int a, std::vector<int64_t> s) {
    return Json{{"id", id}, {"op", "shift"}, {"a", a}, {"shifts", s}, {"boundary", "zero"}};
  };
  std::vector<float> grid(12, 1.0f);
  Json doc = GraphDoc({InputNode(0, {3, 4}, grid),
                       InputNode(1, {3, 4}, grid),
                       shift(2, 0, {1, 0}),
                       shift(3, 0, {-1, 0}),
                       shift(4, 0, {0, 1}),
                       shift(5, 0, {0, -1}),
                       {{"id", 6}, {"op", "add"}, {"a", 2}, {"b", 3}},
                       {{"id", 7}, {"op", "add"}, {"a", 4}, {"b", 5}},
                       {{"id", 8}, {"op", "add"}, {"a", 6}, {"b", 7}},
                       {{"id", 9}, {"op", "add"}, {"a", 8}, {"b", 1}}},
                      {{"y", 9}}, 5);
  Module m = After(doc, "fuse-elementwise");
  ASSERT_EQ(m.kernels.size(), 1u) << Print(m);
  EXPECT_EQ(m.kernels[0].inputs, (std::vector<int>{0, 1}));
  EXPECT_TRUE(ReadsShifted(m.kernels[0], 0));
  EXPECT_FALSE(ReadsShifted(m.kernels[0], 1));

  Json computed = GraphDoc({InputNode(0, {3, 4}, grid),
                            {{"id", 1}, {"op", "relu"}, {"a", 0}},
                            shift(2, 1, {1, 1}),
                            {{"id", 3}, {"op", "add"}, {"a", 2}, {"b", 0}}},
                           {{"y", 3}}, 5);
  Module two = After(computed, "fuse-elementwise");
  ASSERT_EQ(two.kernels.size(), 2u) << Print(two);
  EXPECT_EQ(two.kernels[0].output, 1);  // relu writes the buffer the shift then reads
  EXPECT_EQ(two.kernels[1].inputs, (std::vector<int>{1, 0}));
}

}  // namespace
}  // namespace scellis::kernel
