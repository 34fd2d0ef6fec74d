// merge-optimizer-outputs: an optimizer update split by output becomes one kernel per parameter.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "kernel/emit/wgsl/codegen.h"
#include "kernel/passes/passes.h"
#include "pipeline/compile.h"

namespace scellis::kernel {
namespace {

// examples/fashion_mlp.json (784-256-10, four parameters) with the given optimizer.
std::string Mlp(const Json& optimizer) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/fashion_mlp.json");
  std::stringstream s;
  s << in.rdbuf();
  Json doc = Json::parse(s.str());
  doc["train"]["optimizer"] = optimizer;
  return doc.dump();
}

Module Before(const std::string& doc) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.print_after = "fuse-matmul-epilogue";
  auto c = pipeline::Compile(doc, o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return *c->module;
}

int CountOp(const Module& m, const std::string& op) {
  int n = 0;
  for (const Kernel& k : m.kernels) n += k.op == op;
  return n;
}

TEST(MergeOptimizerOutputsPass, AdamWritesParamAndMomentsFromOneKernel) {
  Module m = Before(Mlp({{"kind", "adam"}, {"lr", 0.001}}));
  const size_t before = m.kernels.size();
  ASSERT_EQ(CountOp(m, "adam_update"), 4);
  ASSERT_EQ(CountOp(m, "adam_m"), 4);
  ASSERT_EQ(CountOp(m, "adam_v"), 4);
  ASSERT_TRUE(MergeOptimizerOutputs(m).ok());
  EXPECT_EQ(m.kernels.size(), before - 8) << Print(m);
  EXPECT_EQ(CountOp(m, "adam_m") + CountOp(m, "adam_v"), 0);
  int merged = 0;
  for (const Kernel& k : m.kernels) {
    if (k.op != "adam_update") continue;
    ++merged;
    ASSERT_EQ(k.extra_outputs.size(), 2u) << k.name;
    EXPECT_EQ(m.graph().at(k.extra_outputs[0]).op, "adam_m");
    EXPECT_EQ(m.graph().at(k.extra_outputs[1]).op, "adam_v");
    EXPECT_EQ(k.inputs.size(), 5u);  // param, grad, m, v, t
    EXPECT_EQ(k.Outputs(), (std::vector<int>{k.output, k.extra_outputs[0], k.extra_outputs[1]}));
    EXPECT_NE(k.name.find("adam_update_adam_m_adam_v"), std::string::npos) << k.name;
  }
  EXPECT_EQ(merged, 4);
  EXPECT_TRUE(Verify(m).ok());
}

TEST(MergeOptimizerOutputsPass, MomentumMergesAndPlainSgdHasNothingToMerge) {
  Module momentum = Before(Mlp({{"kind", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}}));
  const size_t before = momentum.kernels.size();
  ASSERT_TRUE(MergeOptimizerOutputs(momentum).ok());
  EXPECT_EQ(momentum.kernels.size(), before - 4) << Print(momentum);
  EXPECT_EQ(CountOp(momentum, "momentum_velocity"), 0);
  for (const Kernel& k : momentum.kernels)
    if (k.op == "momentum_update") EXPECT_EQ(k.extra_outputs.size(), 1u) << k.name;

  Module sgd = Before(Mlp({{"kind", "sgd"}, {"lr", 0.1}}));
  const size_t sgd_before = sgd.kernels.size();
  ASSERT_TRUE(MergeOptimizerOutputs(sgd).ok());
  EXPECT_EQ(sgd.kernels.size(), sgd_before);
}

// The kernels of this pass alone: each output in a buffer of its own, one parameter a kernel.
const std::set<std::string> kStateMerges = {"write-state-in-place", "merge-optimizer-kernels"};

TEST(MergeOptimizerOutputsPass, EmitsOneShaderThatStoresEveryOutput) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.disabled_passes = kStateMerges;
  o.up_to = pipeline::Rung::kKernel;
  auto c = pipeline::Compile(Mlp({{"kind", "adam"}, {"lr", 0.001}}), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  bool found = false;
  for (const Kernel& k : c->module->kernels) {
    if (k.op != "adam_update") continue;
    found = true;
    const std::string& src = k.Wgsl().source;
    // Five inputs, then out (the parameter), out1 (m), out2 (v).
    EXPECT_NE(src.find("@binding(5) var<storage, read_write> out: array<f32>"), std::string::npos);
    EXPECT_NE(src.find("@binding(6) var<storage, read_write> out1: array<f32>"), std::string::npos);
    EXPECT_NE(src.find("@binding(7) var<storage, read_write> out2: array<f32>"), std::string::npos);
    EXPECT_NE(src.find("out1[i] = m;"), std::string::npos) << src;
    EXPECT_NE(src.find("out2[i] = v;"), std::string::npos) << src;
  }
  EXPECT_TRUE(found);
}

TEST(MergeOptimizerOutputsPass, GivesEveryOutputABufferApartFromTheInputs) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.disabled_passes = kStateMerges;
  auto c = pipeline::Compile(Mlp({{"kind", "adam"}, {"lr", 0.001}}), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  const execplan::Plan& p = *c->plan;
  for (const execplan::Step& s : p.steps) {
    const Kernel& k = p.module().kernels[s.kernel];
    if (k.extra_outputs.empty()) continue;
    if (k.op == "adam_update") ASSERT_EQ(s.extra_writes.size(), 2u);
    const std::vector<int> writes = s.Writes();
    for (int w : writes) {
      EXPECT_EQ(std::count(s.reads.begin(), s.reads.end(), w), 0) << k.name;
      EXPECT_EQ(std::count(writes.begin(), writes.end(), w), 1) << k.name;
    }
  }
}

}  // namespace
}  // namespace scellis::kernel
