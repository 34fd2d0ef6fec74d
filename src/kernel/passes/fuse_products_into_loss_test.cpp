// fuse-products-into-loss: the MLP step's logits product and its gradient's product back through
// w2 run as stages of the loss's one workgroup; a product too large for it, or one that would take
// a ninth binding, stays a dispatch of its own. (The bits are compared with the unfused step's, on
// the CPU reference and on WebGPU, in runtime/backends/step_fusion_test.cpp.)
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "kernel/emit/wgsl/codegen.h"
#include "kernel/passes/passes.h"
#include "pipeline/compile.h"

namespace scellis::kernel {
namespace {

// examples/fashion_mlp.json (784-256-10), its hidden layer `hidden` wide.
std::string Mlp(int64_t hidden = 256) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/fashion_mlp.json");
  std::stringstream s;
  s << in.rdbuf();
  Json doc = Json::parse(s.str());
  for (Json& n : doc["nodes"]) {
    if (n["id"] == "w1") n["params"]["shape"] = {784, hidden};
    if (n["id"] == "b1") n["params"]["shape"] = {hidden};
    if (n["id"] == "w2") n["params"]["shape"] = {hidden, 10};
    if (n["id"] == "b2") n["params"]["init"]["fan_in"] = hidden;
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
    if (k.kind == KernelKind::kWorkgroupStages) return &k;
  return nullptr;
}

std::vector<std::string> Names(const Module& m, const std::vector<int>& nodes) {
  std::vector<std::string> names;
  for (int n : nodes) names.push_back(m.graph().at(n).name);
  return names;
}

TEST(FuseProductsIntoLossPass, TheMlpLossTakesItsLogitsAndItsGradientsProduct) {
  Module m = Before(Mlp());
  const size_t before = m.kernels.size();
  ASSERT_TRUE(FuseProductsIntoLoss(m).ok());
  ASSERT_TRUE(Verify(m).ok()) << Verify(m).errors().front().Format();
  EXPECT_EQ(m.kernels.size(), before - 2) << Print(m);
  const Kernel* k = Staged(m);
  ASSERT_NE(k, nullptr) << Print(m);
  ASSERT_EQ(k->stages.size(), 3u);
  const Kernel &logits = k->stages[0], &loss = k->stages[1], &back = k->stages[2];
  EXPECT_EQ(logits.op, "matmul");
  EXPECT_EQ(loss.op, "cross_entropy");
  EXPECT_EQ(back.op, "matmul");
  // The loss reads the logits the first stage writes; the last stage its gradient, through w2^T.
  EXPECT_EQ(loss.inputs[0], logits.output);
  EXPECT_EQ(back.inputs[0], loss.extra_outputs[0]);
  EXPECT_EQ(Names(m, {back.inputs[1]}), std::vector<std::string>{"w2"});
  ASSERT_GE(back.transposed.size(), 2u);
  EXPECT_TRUE(back.transposed[1]);
  // Bound: what no stage writes (h, w2, b2, the labels) and every stage's output; the seed of the
  // loss's gradient a literal. Eight storage bindings, the most a plan may use.
  EXPECT_EQ(Names(m, k->inputs), (std::vector<std::string>{"h", "w2", "b2", "y"}));
  EXPECT_EQ(k->Outputs(),
            (std::vector<int>{logits.output, loss.output, loss.extra_outputs[0], back.output}));
  EXPECT_EQ(k->literals.size(), 1u);
  EXPECT_EQ(k->StorageBindings(), kMaxStorageBindings);
  EXPECT_EQ(k->name, "k1_matmul_add_cross_entropy_cross_entropy_grad_matmul_positive_mul");
  // Once is all: a kernel of stages is no loss to take more products in.
  const std::string once = Print(m);
  ASSERT_TRUE(FuseProductsIntoLoss(m).ok());
  EXPECT_EQ(Print(m), once);
}

TEST(FuseProductsIntoLossPass, AProductOverTheLanesShareStaysADispatch) {
  // The logits of a 2048-wide hidden layer: 64 x 10 x 2048 products, 5 120 a lane (over 2 048);
  // the gradient's product back through w2 as many. At 512 wide, 1 280 a lane: both join.
  Module wide = Before(Mlp(2048));
  ASSERT_TRUE(FuseProductsIntoLoss(wide).ok());
  EXPECT_EQ(Staged(wide), nullptr) << Print(wide);
  Module narrow = Before(Mlp(512));
  ASSERT_TRUE(FuseProductsIntoLoss(narrow).ok());
  ASSERT_NE(Staged(narrow), nullptr) << Print(narrow);
  EXPECT_EQ(Staged(narrow)->stages.size(), 3u);
}

TEST(FuseProductsIntoLossPass, ASeedBoundOfItsOwnLeavesRoomForOneProduct) {
  // Without fold-constant-inputs the gradient's seed takes a binding: the logits' product joins
  // (8 bindings), the gradient's product would make 9.
  Module m = Before(Mlp(), {"fold-constant-inputs"});
  ASSERT_TRUE(FuseProductsIntoLoss(m).ok());
  ASSERT_TRUE(Verify(m).ok()) << Verify(m).errors().front().Format();
  const Kernel* k = Staged(m);
  ASSERT_NE(k, nullptr) << Print(m);
  ASSERT_EQ(k->stages.size(), 2u);
  EXPECT_EQ(k->stages[0].op, "matmul");
  EXPECT_EQ(k->StorageBindings(), kMaxStorageBindings);
}

TEST(FuseProductsIntoLossPass, RenamesWholeIdentifiersAtOnce) {
  const std::map<std::string, std::string> names = {
      {"in0", "out"}, {"out", "out1"}, {"epilogue", "epilogue_2"}};
  EXPECT_EQ(wgsl::RenameIdentifiers("out[i] = epilogue(in0[i] * 1.0e-5, i) + in01[2u] + out_x;",
                                    names),
            "out1[i] = epilogue_2(out[i] * 1.0e-5, i) + in01[2u] + out_x;");
}

}  // namespace
}  // namespace scellis::kernel
