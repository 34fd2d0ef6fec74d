// write-state-in-place and merge-optimizer-kernels: an optimizer's state is updated in its own
// buffers, and the updates of several parameters share a dispatch within the storage-binding cap.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "kernel/passes/passes.h"
#include "pipeline/compile.h"

namespace scellis::kernel {
namespace {

// examples/fashion_mlp.json (784-256-10: w1, b1, w2, b2) with the given optimizer.
std::string Mlp(const Json& optimizer) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/fashion_mlp.json");
  std::stringstream s;
  s << in.rdbuf();
  Json doc = Json::parse(s.str());
  doc["train"]["optimizer"] = optimizer;
  return doc.dump();
}

const Json kAdam = {{"kind", "adam"}, {"lr", 0.001}};

Result<pipeline::Compiled> Compiled(const std::string& doc, std::set<std::string> disabled = {},
                                    int64_t binding_cap = 0) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.disabled_passes = std::move(disabled);
  if (binding_cap) o.plan.limits.max_binding_bytes = binding_cap;
  return pipeline::Compile(doc, o);
}

// The module just before the two passes: merge-optimizer-outputs ran, one Adam kernel a parameter.
Module Before(const std::string& doc, std::set<std::string> disabled = {}) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.disabled_passes = std::move(disabled);
  o.print_after = "fold-constant-inputs";
  auto c = pipeline::Compile(doc, o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return *c->module;
}

std::vector<const Kernel*> OfOp(const Module& m, const std::string& op) {
  std::vector<const Kernel*> ks;
  for (const Kernel& k : m.kernels)
    if (k.op == op) ks.push_back(&k);
  return ks;
}

TEST(WriteStateInPlacePass, AdamWritesParamAndMomentsOverTheirInputs) {
  Module m = Before(Mlp(kAdam));
  ASSERT_TRUE(WriteStateInPlace(m).ok());
  ASSERT_TRUE(Verify(m).ok());
  const std::vector<const Kernel*> adam = OfOp(m, "adam_update");
  ASSERT_EQ(adam.size(), 4u);
  for (const Kernel* k : adam) {
    // param, grad, m, v, t -> param', m', v' over param, m and v.
    EXPECT_EQ(k->in_place, (std::vector<int>{0, 2, 3})) << k->name;
    EXPECT_EQ(k->StorageBindings(), 5) << k->name;
    const std::vector<int> outs = k->Outputs();
    for (size_t j = 0; j < outs.size(); ++j) {
      bool carried = false;
      for (const webir::Carry& c : m.graph().carries)
        carried |= c.from == outs[j] && c.to == k->inputs[k->in_place[j]];
      EXPECT_TRUE(carried) << k->name << " output " << j;
    }
  }
}

TEST(WriteStateInPlacePass, LeavesAnInputALaterKernelReads) {
  // Unmerged, adam_m and adam_v read param, m and v after adam_update: only the last kernel of
  // each parameter (adam_v) writes over its input, v.
  Module m = Before(Mlp(kAdam), {"merge-optimizer-outputs"});
  ASSERT_TRUE(WriteStateInPlace(m).ok());
  ASSERT_TRUE(Verify(m).ok());
  int in_place = 0;
  for (const Kernel& k : m.kernels) {
    if (k.in_place.empty()) continue;
    ++in_place;
    EXPECT_EQ(k.op, "adam_v") << k.name;
    EXPECT_EQ(k.in_place, (std::vector<int>{3})) << k.name;
  }
  EXPECT_EQ(in_place, 4);
}

TEST(MergeOptimizerKernelsPass, TwoParametersADispatchWithinEightStorageBindings) {
  Module m = Before(Mlp(kAdam));
  const size_t before = m.kernels.size();
  ASSERT_TRUE(WriteStateInPlace(m).ok());
  ASSERT_TRUE(MergeOptimizerKernels(m).ok());
  ASSERT_TRUE(Verify(m).ok());
  EXPECT_EQ(m.kernels.size(), before - 2) << Print(m);
  const std::vector<const Kernel*> adam = OfOp(m, "adam_update");
  ASSERT_EQ(adam.size(), 2u);
  for (const Kernel* k : adam) {
    ASSERT_EQ(OptimizerParts(m, *k).size(), 2u) << k->name;
    // Two parameters' param, grad, m, v, and their step once, as a uniform.
    EXPECT_EQ(k->inputs.size(), 9u) << k->name;
    EXPECT_EQ(k->StorageBindings(), kMaxStorageBindings) << k->name;
    ASSERT_EQ(k->uniform_inputs.size(), 9u);
    EXPECT_EQ(std::count(k->uniform_inputs.begin(), k->uniform_inputs.end(), true), 1);
    EXPECT_TRUE(k->uniform_inputs[4]) << k->name;
    EXPECT_EQ(k->in_place, (std::vector<int>{0, 2, 3, 5, 7, 8})) << k->name;
    EXPECT_NE(k->name.find("adam_update_adam_m_adam_v_x2"), std::string::npos) << k->name;
  }
}

TEST(MergeOptimizerKernelsPass, EmitsEachParametersRangeAndBindsTheStepAsAUniform) {
  // Left out, the next pass would run these updates inside the matmuls of their gradients.
  auto c = Compiled(Mlp(kAdam), {"fuse-optimizer-into-gradient"});
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  const std::vector<const Kernel*> adam = OfOp(*c->module, "adam_update");
  ASSERT_EQ(adam.size(), 2u);
  // w1 (784 x 256) then b1 (256).
  const std::string& src = adam[0]->Wgsl().source;
  EXPECT_NE(src.find("@binding(4) var<uniform> in4: f32;"), std::string::npos) << src;
  EXPECT_NE(src.find("@binding(0) var<storage, read_write> in0: array<f32>"), std::string::npos);
  EXPECT_NE(src.find("@binding(1) var<storage, read> in1: array<f32>"), std::string::npos);
  EXPECT_EQ(src.find("@binding(9)"), std::string::npos) << src;
  EXPECT_NE(src.find("if (i < 200704u) { part0(i); return; }"), std::string::npos) << src;
  EXPECT_NE(src.find("if (i < 200960u) { part1(i - 200704u); return; }"), std::string::npos);
  EXPECT_NE(src.find("in5[i] = p + minus_step_size * m / denom;"), std::string::npos) << src;
  EXPECT_NE(src.find("in8[i] = v;"), std::string::npos) << src;
  EXPECT_EQ(adam[0]->workgroups[0], (200960u + 63) / 64);
}

TEST(MergeOptimizerKernelsPass, MlpStepIsEightDispatchesAndTenWithout) {
  // The gradient back through w2 stays a dispatch of its own (fuse-gradient-product-into-loss).
  auto merged =
      Compiled(Mlp(kAdam), {"fuse-optimizer-into-gradient", "fuse-gradient-product-into-loss"});
  auto apart = Compiled(Mlp(kAdam), {"merge-optimizer-kernels", "fuse-gradient-product-into-loss"});
  ASSERT_TRUE(merged.ok()) << merged.errors().front().Format();
  ASSERT_TRUE(apart.ok()) << apart.errors().front().Format();
  EXPECT_LE(merged->plan->steps.size(), 8u) << execplan::Print(*merged->plan);
  EXPECT_EQ(apart->plan->steps.size(), 10u);
  auto copied = Compiled(Mlp(kAdam), {"write-state-in-place", "merge-optimizer-kernels",
                                      "fuse-gradient-product-into-loss"});
  ASSERT_TRUE(copied.ok()) << copied.errors().front().Format();
  EXPECT_EQ(copied->plan->steps.size(), 10u);
  // The new values are written over the old ones: no buffers for them.
  EXPECT_EQ(copied->plan->buffers.size() - merged->plan->buffers.size(), 12u);
  // 2 x (200704 + 256 + 2560 + 10) x 4 B of new parameters and moments kept apart.
  EXPECT_EQ(copied->plan->memory.allocated - merged->plan->memory.allocated,
            3 * (200704 + 256 + 2560 + 10) * 4);
}

TEST(MergeOptimizerKernelsPass, MomentumAndSgdMergeToo) {
  // Momentum: param, grad, buf, t -> param', buf' over param and buf: three storage bindings a
  // parameter, two parameters a kernel. Plain SGD: param, grad -> param' over param.
  for (const Json& opt : {Json{{"kind", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}},
                          Json{{"kind", "sgd"}, {"lr", 0.1}}}) {
    auto c = Compiled(Mlp(opt), {"fuse-optimizer-into-gradient"});
    ASSERT_TRUE(c.ok()) << c.errors().front().Format();
    int parameters = 0, kernels = 0;
    for (const Kernel& k : c->module->kernels) {
      if (!IsOptimizerOp(*c->module, k.op)) continue;
      ++kernels;
      parameters += static_cast<int>(OptimizerParts(*c->module, k).size());
      EXPECT_LE(k.StorageBindings(), kMaxStorageBindings) << k.name;
    }
    EXPECT_EQ(parameters, 4) << opt.dump();
    EXPECT_LT(kernels, 4) << opt.dump() << Print(*c->module);
  }
}

TEST(MergeOptimizerKernelsPass, LeavesAKernelOverTheBindingCapAlone) {
  // w1 and its moments are 784 KiB: under a 512 KiB cap w1's update stays apart, b1 and w2 merge
  // (eight storage bindings), and b2 is left on its own.
  Module m = Before(Mlp(kAdam));
  m.binding_cap = 512 << 10;
  ASSERT_TRUE(WriteStateInPlace(m).ok());
  ASSERT_TRUE(MergeOptimizerKernels(m).ok());
  ASSERT_TRUE(Verify(m).ok());
  const std::vector<const Kernel*> adam = OfOp(m, "adam_update");
  ASSERT_EQ(adam.size(), 3u) << Print(m);
  EXPECT_EQ(OptimizerParts(m, *adam[0]).size(), 1u);
  EXPECT_EQ(OptimizerParts(m, *adam[1]).size(), 2u);
  EXPECT_EQ(OptimizerParts(m, *adam[2]).size(), 1u);
}

}  // namespace
}  // namespace scellis::kernel
