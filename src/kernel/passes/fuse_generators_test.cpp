// fuse-generators: a uniform read only by elementwise kernels of its shape, at each element's own
// index, is a step of each reader; otherwise it keeps its kernel. The values are checked against
// the hash's definition on the GPU and the reference in runtime/backends/webgpu/
// tiling_random_test.cpp, and through the Ising workload against NumPy (tests/python).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "base/random.h"
#include "kernel/passes/passes.h"
#include "support/graph.h"

namespace scellis::kernel {
namespace {

using scellis::testing::ProdOptions;

Json Step() {
  return {{"id", 0}, {"op", "input"}, {"name", "step"}, {"shape", Json::array()}, {"data", {3.0}}};
}
Json X(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> data(n);
  for (int64_t i = 0; i < n; ++i) data[i] = static_cast<float>(i % 7) / 7.0f;
  return {{"id", 1}, {"op", "input"}, {"name", "x"}, {"shape", shape}, {"data", data}};
}
Json Uniform(int id, const std::vector<int64_t>& shape) {
  return {{"id", id}, {"op", "uniform"}, {"shape", shape}, {"seed", 5}, {"step", 0}};
}
Json Doc(std::vector<Json> nodes, const std::vector<std::pair<std::string, int>>& outputs) {
  Json outs = Json::array();
  for (const auto& [name, id] : outputs) outs.push_back({{"name", name}, {"id", id}});
  return {{"version", 6}, {"nodes", nodes}, {"outputs", outs}};
}

Module Kernels(const Json& doc, bool fuse) {
  pipeline::CompileOptions o = ProdOptions();
  o.up_to = pipeline::Rung::kKernel;
  if (!fuse) o.disabled_passes = {"fuse-generators"};
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return c.ok() ? *c->module : Module{};
}

std::vector<std::string> Names(const Module& m) {
  std::vector<std::string> names;
  for (const Kernel& k : m.kernels) names.push_back(k.name);
  return names;
}

// y = x * u + u (two reads in one kernel), z = x - u (another reader): each computes the draw.
TEST(FuseGeneratorsPass, EveryReaderComputesTheDrawItself) {
  const Json doc = Doc({Step(),
                        X({6, 5}),
                        Uniform(2, {6, 5}),
                        {{"id", 3}, {"op", "mul"}, {"a", 1}, {"b", 2}},
                        {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 2}},
                        {{"id", 5}, {"op", "sub"}, {"a", 1}, {"b", 2}}},
                       {{"y", 4}, {"z", 5}});
  const Module before = Kernels(doc, false);
  EXPECT_EQ(Names(before),
            (std::vector<std::string>{"k0_uniform", "k1_fused_mul_add", "k2_fused_sub"}));
  const Module m = Kernels(doc, true);
  ASSERT_EQ(Names(m),
            (std::vector<std::string>{"k0_fused_uniform_mul_add", "k1_fused_uniform_sub"}));
  for (const Kernel& k : m.kernels) {
    // The draw is step 0, reading the step value (now an input); x stays input 0.
    EXPECT_EQ(k.inputs, (std::vector<int>{1, 0})) << k.name;
    EXPECT_EQ(k.expr[0].op, "uniform");
    EXPECT_EQ(k.expr[0].operands, (std::vector<int>{1}));
    EXPECT_EQ(k.expr[1].operands, (std::vector<int>{0, StepRef(0)})) << k.name;
  }
  EXPECT_EQ(m.kernels[0].expr[2].operands, (std::vector<int>{StepRef(1), StepRef(0)}));
  EXPECT_TRUE(Verify(m).ok());
  const std::string wgsl = m.kernels[0].Wgsl().source;
  EXPECT_NE(wgsl.find("stream_bits(5u, step_u32(x1), gi)"), std::string::npos) << wgsl;
}

// A draw that is an output, read at another element (a shift), or read by a kernel of another
// shape stays a kernel of its own.
TEST(FuseGeneratorsPass, DrawsReadFromABufferKeepTheirKernel) {
  const Json output =
      Doc({Step(), X({6, 5}), Uniform(2, {6, 5}), {{"id", 3}, {"op", "mul"}, {"a", 1}, {"b", 2}}},
          {{"u", 2}, {"y", 3}});
  EXPECT_EQ(Kernels(output, true).kernels.size(), 2u);
  const Json shifted =
      Doc({Step(),
           X({6, 5}),
           Uniform(2, {6, 5}),
           {{"id", 3}, {"op", "shift"}, {"a", 2}, {"shifts", {1, 0}}, {"boundary", "wrap"}},
           {{"id", 4}, {"op", "mul"}, {"a", 1}, {"b", 3}}},
          {{"y", 4}});
  EXPECT_EQ(Kernels(shifted, true).kernels.size(), 2u);
  const Json broadcast =
      Doc({Step(), X({6, 5}), Uniform(2, {1, 5}), {{"id", 3}, {"op", "mul"}, {"a", 1}, {"b", 2}}},
          {{"y", 3}});
  EXPECT_EQ(Kernels(broadcast, true).kernels.size(), 2u);
}

// On the CPU reference the inlined draw gives the uniform kernel's values: y = x * u + u.
TEST(FuseGeneratorsPass, TheReferenceComputesTheHashOfEachElementsIndex) {
  const Json doc = Doc({Step(),
                        X({6, 5}),
                        Uniform(2, {6, 5}),
                        {{"id", 3}, {"op", "mul"}, {"a", 1}, {"b", 2}},
                        {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 2}}},
                       {{"y", 4}});
  const runtime::RunResult r = scellis::testing::CompileAndRun(doc.dump(), 2);
  ASSERT_EQ(r.outputs.size(), 1u);
  const std::vector<float> got = r.outputs[0].second.ToFloats();
  ASSERT_EQ(got.size(), 30u);
  for (uint32_t i = 0; i < 30; ++i) {
    const float u = StreamUniform(5, 3, i);
    const float x = static_cast<float>(i % 7) / 7.0f;
    EXPECT_EQ(got[i], x * u + u) << i;
  }
}

}  // namespace
}  // namespace scellis::kernel
