// fuse-gradient-product-into-loss: the MLP step's gradient's product back through w2 runs in the
// loss's dispatch, over blocks of rows beside the loss's workgroup. (The bits are compared with the
// unfused step's, on the CPU reference and on WebGPU, in runtime/backends/step_fusion_test.cpp.)
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "kernel/emit/wgsl/codegen.h"
#include "kernel/passes/passes.h"
#include "pipeline/compile.h"

namespace scellis::kernel {
namespace {

// examples/fashion_mlp.json (784-256-10), its hidden layer `hidden` wide, into `classes`.
std::string Mlp(int64_t hidden = 256, int64_t classes = 10) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/fashion_mlp.json");
  std::stringstream s;
  s << in.rdbuf();
  Json doc = Json::parse(s.str());
  for (Json& n : doc["nodes"]) {
    if (n["id"] == "w1") n["params"]["shape"] = {784, hidden};
    if (n["id"] == "b1") n["params"]["shape"] = {hidden};
    if (n["id"] == "w2") n["params"]["shape"] = {hidden, classes};
    if (n["id"] == "b2") n["params"]["shape"] = {classes}, n["params"]["init"]["fan_in"] = hidden;
  }
  return doc.dump();
}

// The module as the pass finds it (after hoist-loop-invariants).
Module Before(const std::string& doc, std::set<std::string> disabled = {}) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.print_after = "hoist-loop-invariants";
  o.disabled_passes = std::move(disabled);
  auto c = pipeline::Compile(doc, o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return *c->module;
}

const Kernel* Staged(const Module& m) {
  for (const Kernel& k : m.kernels)
    if (k.kind == KernelKind::kRowStages) return &k;
  return nullptr;
}

std::vector<std::string> Names(const Module& m, const std::vector<int>& nodes) {
  std::vector<std::string> names;
  for (int n : nodes) names.push_back(m.graph().at(n).name);
  return names;
}

TEST(FuseGradientProductIntoLossPass, TheMlpLossTakesItsGradientsProductBackThroughW2) {
  Module m = Before(Mlp());
  const size_t before = m.kernels.size();
  ASSERT_TRUE(FuseGradientProductIntoLoss(m).ok());
  ASSERT_TRUE(Verify(m).ok()) << Verify(m).errors().front().Format();
  EXPECT_EQ(m.kernels.size(), before - 1) << Print(m);
  const Kernel* k = Staged(m);
  ASSERT_NE(k, nullptr) << Print(m);
  ASSERT_EQ(k->stages.size(), 3u);
  const Kernel &loss = k->stages[0], &grad = k->stages[1], &back = k->stages[2];
  EXPECT_EQ(loss.op, "cross_entropy");
  EXPECT_EQ(grad.op, "cross_entropy_grad");
  EXPECT_EQ(back.op, "matmul");
  // The loss and its gradient read the logits; the product the gradient, through w2^T, then its
  // ReLU mask from h.
  EXPECT_EQ(Names(m, loss.inputs), (std::vector<std::string>{"logits", "y"}));
  EXPECT_EQ(grad.inputs[0], loss.inputs[0]);
  EXPECT_EQ(back.inputs[0], grad.output);
  EXPECT_EQ(Names(m, {back.inputs[1]}), std::vector<std::string>{"w2"});
  ASSERT_GE(back.transposed.size(), 2u);
  EXPECT_TRUE(back.transposed[1]);
  EXPECT_TRUE(back.HasEpilogue());
  // Bound: what no stage writes and every stage's output; the seed of the gradient a literal.
  EXPECT_EQ(Names(m, k->inputs), (std::vector<std::string>{"logits", "y", "w2", "h"}));
  EXPECT_EQ(k->Outputs(), (std::vector<int>{loss.output, grad.output, back.output}));
  EXPECT_EQ(k->literals.size(), 1u);
  EXPECT_EQ(k->StorageBindings(), 7);
  // A block of one row (the product's 256 columns give every lane an element): 64 blocks and the
  // loss's workgroup.
  EXPECT_EQ(k->stage_tile, 1);
  EXPECT_EQ(k->name, "k2_cross_entropy_cross_entropy_grad_matmul_positive_mul");
  // Once is all: a kernel of stages is no merged loss to take more products in.
  const std::string once = Print(m);
  ASSERT_TRUE(FuseGradientProductIntoLoss(m).ok());
  EXPECT_EQ(Print(m), once);
}

TEST(FuseGradientProductIntoLossPass, ANarrowProductTakesSeveralRowsABlock) {
  // A hidden layer 10 wide: 25 rows of 10 columns give 250 of the 256 lanes an element.
  Module m = Before(Mlp(10));
  ASSERT_TRUE(FuseGradientProductIntoLoss(m).ok());
  ASSERT_TRUE(Verify(m).ok()) << Verify(m).errors().front().Format();
  ASSERT_NE(Staged(m), nullptr) << Print(m);
  EXPECT_EQ(Staged(m)->stage_tile, 25);
}

TEST(FuseGradientProductIntoLossPass, AProductOverALongKStaysADispatch) {
  // The gradient back through w2 adds one product per class: 32 join, 33 stay apart.
  Module at_most = Before(Mlp(256, 32));
  ASSERT_TRUE(FuseGradientProductIntoLoss(at_most).ok());
  EXPECT_NE(Staged(at_most), nullptr) << Print(at_most);
  Module over = Before(Mlp(256, 33));
  const size_t before = over.kernels.size();
  ASSERT_TRUE(FuseGradientProductIntoLoss(over).ok());
  EXPECT_EQ(Staged(over), nullptr) << Print(over);
  EXPECT_EQ(over.kernels.size(), before);
}

TEST(FuseGradientProductIntoLossPass, ASeedBoundOfItsOwnStillFits) {
  // Without fold-constant-inputs the gradient's seed takes a binding: 8, the most a plan may use.
  Module m = Before(Mlp(), {"fold-constant-inputs"});
  ASSERT_TRUE(FuseGradientProductIntoLoss(m).ok());
  ASSERT_TRUE(Verify(m).ok()) << Verify(m).errors().front().Format();
  const Kernel* k = Staged(m);
  ASSERT_NE(k, nullptr) << Print(m);
  EXPECT_EQ(k->literals.size(), 0u);
  EXPECT_EQ(k->StorageBindings(), kMaxStorageBindings);
}

TEST(FuseGradientProductIntoLossPass, LeavesALossWithoutItsMergedGradientAlone) {
  Module m = Before(Mlp(), {"merge-loss-gradient"});
  const std::string before = Print(m);
  ASSERT_TRUE(FuseGradientProductIntoLoss(m).ok());
  EXPECT_EQ(Print(m), before);
}

TEST(FuseGradientProductIntoLossPass, EmitsTheLossBesideBlocksOfRows) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  auto c = pipeline::Compile(Mlp(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  const Kernel* k = Staged(*c->module);
  ASSERT_NE(k, nullptr) << Print(*c->module);
  // 64 rows, one a block, after the loss's workgroup.
  EXPECT_EQ(k->workgroups, (std::array<uint32_t, 3>{65, 1, 1}));
  const std::string& src = k->Wgsl().source;
  EXPECT_NE(src.find("if (wg.x == 0u) {\n    stage_0(t);\n    return;\n  }"), std::string::npos)
      << src;
  EXPECT_NE(src.find("stage_1(t, r0, r1);\n  storageBarrier();\n  stage_2(t, r0, r1);"),
            std::string::npos)
      << src;
}

TEST(FuseGradientProductIntoLossPass, RenamesWholeIdentifiersAtOnce) {
  const std::map<std::string, std::string> names = {
      {"in0", "out"}, {"out", "out1"}, {"epilogue", "epilogue_2"}};
  EXPECT_EQ(
      wgsl::RenameIdentifiers("out[i] = epilogue(in0[i] * 1.0e-5, i) + in01[2u] + out_x;", names),
      "out1[i] = epilogue_2(out[i] * 1.0e-5, i) + in01[2u] + out_x;");
}

}  // namespace
}  // namespace scellis::kernel
