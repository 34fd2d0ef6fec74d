// fuse-optimizer-into-gradient: each merged Adam kernel of the MLP step (a weight's update and its
// bias's) runs inside the matmul computing both gradients. (The bits are compared with the unfused
// step's, on the CPU reference and on WebGPU, in runtime/backends/step_fusion_test.cpp.)
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "kernel/passes/passes.h"
#include "pipeline/compile.h"

namespace scellis::kernel {
namespace {

// examples/fashion_mlp.json (784-256-10: w1, b1, w2, b2), trained with Adam.
std::string AdamMlp() {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/fashion_mlp.json");
  std::stringstream s;
  s << in.rdbuf();
  Json doc = Json::parse(s.str());
  doc["train"]["optimizer"] = {{"kind", "adam"}, {"lr", 0.001}};
  return doc.dump();
}

Result<pipeline::Compiled> Compiled(std::set<std::string> disabled = {}) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.disabled_passes = std::move(disabled);
  return pipeline::Compile(AdamMlp(), o);
}

// The module as the pass finds it (after merge-optimizer-kernels).
Module Before() {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.print_after = "merge-optimizer-kernels";
  auto c = pipeline::Compile(AdamMlp(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return *c->module;
}

std::vector<const Kernel*> Updating(const Module& m) {
  std::vector<const Kernel*> ks;
  for (const Kernel& k : m.kernels)
    if (k.UpdatesParameters()) ks.push_back(&k);
  return ks;
}

TEST(FuseOptimizerIntoGradientPass, EachMergedAdamRunsInTheMatmulOfItsGradients) {
  Module m = Before();
  const size_t before = m.kernels.size();
  // The gradient of each parameter, by name, and the matmul computing it.
  std::set<int> weight_gradients;
  for (const Kernel& k : m.kernels)
    if (k.op == "matmul" && k.extra_outputs.size() == 1) weight_gradients.insert(k.output);
  ASSERT_EQ(weight_gradients.size(), 2u) << Print(m);
  ASSERT_TRUE(FuseOptimizerIntoGradient(m).ok());
  ASSERT_TRUE(Verify(m).ok()) << Verify(m).errors().front().Format();
  EXPECT_EQ(m.kernels.size(), before - 2) << Print(m);
  for (const Kernel& k : m.kernels) EXPECT_NE(k.op, "adam_update") << Print(m);
  const std::vector<const Kernel*> fused = Updating(m);
  ASSERT_EQ(fused.size(), 2u);
  for (const Kernel* k : fused) {
    EXPECT_EQ(k->op, "matmul");
    EXPECT_TRUE(weight_gradients.count(k->update_product)) << k->name;
    ASSERT_GE(k->update_column_sums, 0) << k->name;
    EXPECT_EQ(m.graph().at(k->update_column_sums).op, "sum");
    // Operands, two parameters and their moments: eight storage bindings, the step a uniform;
    // every output (the new parameters and moments) over its input.
    EXPECT_EQ(k->StorageBindings(), kMaxStorageBindings) << k->name;
    ASSERT_EQ(k->in_place.size(), 6u);
    for (int i : k->in_place) EXPECT_GE(i, 2) << k->name;
    EXPECT_EQ(std::count(k->uniform_inputs.begin(), k->uniform_inputs.end(), true), 1);
    const std::vector<std::vector<size_t>> parts = OptimizerParts(m, *k);
    ASSERT_EQ(parts.size(), 2u);
    // The weight's update takes the product, the bias's the column sums.
    EXPECT_EQ(m.graph().at(k->Outputs()[parts[0][0]]).args[1], k->update_product);
    EXPECT_EQ(m.graph().at(k->Outputs()[parts[1][0]]).args[1], k->update_column_sums);
    EXPECT_NE(k->name.find("matmul_adam_update_adam_m_adam_v_x2"), std::string::npos) << k->name;
  }
  // Each fused kernel runs where its update ran: after every other kernel reading the parameters
  // it writes over (d_h = d_logits @ w2^T reads the old w2).
  for (size_t j = 0; j < m.kernels.size(); ++j) {
    const Kernel& k = m.kernels[j];
    if (!k.UpdatesParameters()) continue;
    for (int i : k.in_place)
      for (size_t r = j + 1; r < m.kernels.size(); ++r)
        EXPECT_EQ(std::count(m.kernels[r].inputs.begin(), m.kernels[r].inputs.end(), k.inputs[i]),
                  0)
            << m.kernels[r].name << " reads %" << m.graph().at(k.inputs[i]).name << " after "
            << k.name << " wrote over it";
  }
}

TEST(FuseOptimizerIntoGradientPass, TheStepIsSixDispatchesAndTheGradientsHaveNoBuffers) {
  // The gradient back through w2 a dispatch of its own (fuse-gradient-product-into-loss takes it
  // in).
  auto fused = Compiled({"fuse-gradient-product-into-loss"});
  auto apart = Compiled({"fuse-optimizer-into-gradient", "fuse-gradient-product-into-loss"});
  ASSERT_TRUE(fused.ok()) << fused.errors().front().Format();
  ASSERT_TRUE(apart.ok()) << apart.errors().front().Format();
  EXPECT_EQ(fused->plan->steps.size(), 6u) << execplan::Print(*fused->plan);
  EXPECT_EQ(apart->plan->steps.size(), 8u) << execplan::Print(*apart->plan);
  // d_w1, d_b1, d_w2 and d_b2 are in registers: no kernel writes or reads them from a buffer.
  std::set<int> gradients;
  for (const Kernel& k : apart->module->kernels)
    if (k.op == "matmul" && k.extra_outputs.size() == 1)
      gradients.insert({k.output, k.extra_outputs[0]});
  ASSERT_EQ(gradients.size(), 4u);
  for (const Kernel& k : fused->module->kernels) {
    for (int o : k.Outputs()) EXPECT_FALSE(gradients.count(o)) << k.name;
    for (int i : k.inputs) EXPECT_FALSE(gradients.count(i)) << k.name;
  }
  EXPECT_LT(fused->plan->buffers.size(), apart->plan->buffers.size());
}

TEST(FuseOptimizerIntoGradientPass, EmitsTheUpdatesAtTheStoresOfTheProductAndTheColumnSums) {
  auto c = Compiled();
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  for (const Kernel* k : Updating(*c->module)) {
    const std::string& src = k->Wgsl().source;
    EXPECT_NE(src.find("fn update_product(i: u32, grad: f32) {"), std::string::npos) << src;
    EXPECT_NE(src.find("fn update_column_sums(i: u32, grad: f32) {"), std::string::npos) << src;
    EXPECT_NE(src.find("update_column_sums(sc, cs);"), std::string::npos) << src;
    EXPECT_NE(src.find("var<uniform>"), std::string::npos) << src;
    // Nothing stored but the parameters and moments, each through its input's binding.
    EXPECT_EQ(src.find("var<storage, read_write> out"), std::string::npos) << src;
    EXPECT_EQ(src.find("@binding(9)"), std::string::npos) << src;
    EXPECT_NE(src.find("p + minus_step_size * m / denom;"), std::string::npos) << src;
  }
}

// The bias's column sums and update run in a workgroup of their own, past the product's rows of
// tiles, and that row's other workgroups return at once: none of the product's tiles waits for them.
TEST(FuseOptimizerIntoGradientPass, TheBiasUpdateRunsInAWorkgroupOfItsOwn) {
  auto c = Compiled();
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  const std::vector<const Kernel*> updating = Updating(*c->module);
  ASSERT_EQ(updating.size(), 2u);
  for (const Kernel* k : updating) {
    const MatmulShape shape = MatmulShapeOf(*c->module, *k);
    ASSERT_TRUE(k->matmul_schedule.has_value());
    const MatmulSchedule& sch = *k->matmul_schedule;
    const int64_t tile_rows = (shape.m + sch.tile_m - 1) / sch.tile_m;
    const int64_t tile_cols = (shape.n + sch.tile_n - 1) / sch.tile_n;
    EXPECT_EQ(k->workgroups[0], tile_cols);
    EXPECT_EQ(k->workgroups[1], tile_rows + 1);
    const std::string own_row = "wg.y == " + std::to_string(tile_rows) + "u";
    const std::string& src = k->Wgsl().source;
    EXPECT_NE(src.find("if (" + own_row + " && wg.x == 0u && wg.z == 0u) {"), std::string::npos)
        << src;
    EXPECT_NE(src.find("if (" + own_row + ") { return; }"), std::string::npos) << src;
    EXPECT_EQ(src.find("wg.x == 0u && wg.y == 0u"), std::string::npos) << src;
    // The sums come before the product's first barrier, which the returning row never reaches.
    EXPECT_LT(src.find("update_column_sums(sc, cs);"), src.find("workgroupBarrier();")) << src;
  }
}

TEST(FuseOptimizerIntoGradientPass, LeavesAnUpdateOverTheBindingCapAlone) {
  // w1 and its moments are 784 KiB: under a 512 KiB cap the first layer's update keeps its own
  // kernel (its matmul, too); the output layer's runs in its matmul.
  Module m = Before();
  m.binding_cap = 512 << 10;
  const size_t before = m.kernels.size();
  ASSERT_TRUE(FuseOptimizerIntoGradient(m).ok());
  ASSERT_TRUE(Verify(m).ok());
  EXPECT_EQ(m.kernels.size(), before - 1) << Print(m);
  ASSERT_EQ(Updating(m).size(), 1u);
  EXPECT_EQ(m.graph().at(Updating(m)[0]->output).type.elements(), 256 * 10);
}

TEST(FuseOptimizerIntoGradientPass, NeedsTheMatmulToComputeEveryGradientOfTheUpdate) {
  // Without merge-bias-gradient the bias gradients are sum kernels of their own: no matmul
  // computes both gradients an update takes, and nothing is fused.
  auto c = Compiled({"merge-bias-gradient"});
  auto without = Compiled({"merge-bias-gradient", "fuse-optimizer-into-gradient"});
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  ASSERT_TRUE(without.ok());
  EXPECT_TRUE(Updating(*c->module).empty()) << Print(*c->module);
  EXPECT_EQ(c->module->kernels.size(), without->module->kernels.size());
}

}  // namespace
}  // namespace scellis::kernel
