// merge-loss-gradient and merge-bias-gradient: the loss and its gradient of a training step become
// one kernel; each layer's bias gradient joins its weight's (or, where no matmul can take it, the
// loss kernel, a third output). (The bits are compared with the unmerged step's in
// runtime/backends/step_fusion_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>

#include "kernel/passes/passes.h"
#include "pipeline/compile.h"
#include "support/examples.h"

namespace scellis::kernel {
namespace {

using scellis::testing::FashionMlp;

Module After(const std::string& pass) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.print_after = pass;
  auto c = pipeline::Compile(FashionMlp(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return *c->module;
}

const Kernel* FindOp(const Module& m, const std::string& op) {
  for (const Kernel& k : m.kernels)
    if (k.op == op) return &k;
  return nullptr;
}

int CountOp(const Module& m, const std::string& op) {
  int n = 0;
  for (const Kernel& k : m.kernels) n += k.op == op;
  return n;
}

TEST(MergeLossGradientPass, LossKernelWritesTheGradientToo) {
  Module m = After("merge-optimizer-outputs");
  const size_t before = m.kernels.size();
  ASSERT_EQ(CountOp(m, "cross_entropy"), 1);
  ASSERT_EQ(CountOp(m, "cross_entropy_grad"), 1);
  const int grad = FindOp(m, "cross_entropy_grad")->output;
  const std::vector<int> grad_inputs = FindOp(m, "cross_entropy_grad")->inputs;
  ASSERT_TRUE(MergeLossGradient(m).ok());
  EXPECT_EQ(m.kernels.size(), before - 1) << Print(m);
  EXPECT_EQ(CountOp(m, "cross_entropy_grad"), 0);
  const Kernel* k = FindOp(m, "cross_entropy");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->extra_outputs, std::vector<int>{grad});
  EXPECT_EQ(k->inputs, grad_inputs);  // logits, labels, the upstream gradient
  EXPECT_EQ(m.graph().at(k->output).op, "cross_entropy");
  EXPECT_TRUE(Verify(m).ok());
  // Every kernel still follows the kernels whose outputs it reads.
  std::set<int> computed, written;
  for (const Kernel& kk : m.kernels)
    for (int o : kk.Outputs()) computed.insert(o);
  for (const Kernel& kk : m.kernels) {
    for (int in : kk.inputs)
      EXPECT_TRUE(!computed.count(in) || written.count(in)) << kk.name << " reads %" << in;
    for (int o : kk.Outputs()) written.insert(o);
  }
}

TEST(MergeBiasGradientPass, EachBiasGradientJoinsTheMatmulComputingItsWeights) {
  Module m = After("merge-loss-gradient");
  const size_t before = m.kernels.size();
  const Kernel* loss = FindOp(m, "cross_entropy");
  ASSERT_NE(loss, nullptr);
  ASSERT_EQ(loss->extra_outputs.size(), 1u);
  const int d_logits = loss->extra_outputs[0];
  // The two column sums: of the loss's gradient (d_b2) and of the hidden layer's (d_b1).
  int d_b2 = -1, d_b1 = -1, d_h = -1;
  for (const Kernel& k : m.kernels) {
    if (k.op != "sum") continue;
    (k.inputs[0] == d_logits ? d_b2 : d_b1) = k.output;
    if (k.inputs[0] != d_logits) d_h = k.inputs[0];
  }
  ASSERT_GE(d_b2, 0) << Print(m);
  ASSERT_GE(d_b1, 0) << Print(m);
  ASSERT_TRUE(MergeBiasGradient(m).ok());
  EXPECT_EQ(m.kernels.size(), before - 2) << Print(m);
  EXPECT_EQ(FindOp(m, "sum"), nullptr) << Print(m);
  loss = FindOp(m, "cross_entropy");
  EXPECT_EQ(loss->extra_outputs, (std::vector<int>{d_logits}));
  // d_b2 beside d_w2 = h^T @ d_logits, d_b1 beside d_w1 = x^T @ d_h: the matmuls reading what
  // they sum as B, each before the sum's reader.
  for (const auto& [sum, summed] : {std::pair{d_b2, d_logits}, std::pair{d_b1, d_h}}) {
    int host = -1, reader = -1;
    for (size_t i = 0; i < m.kernels.size(); ++i) {
      const Kernel& k = m.kernels[i];
      if (k.extra_outputs == std::vector<int>{sum}) host = static_cast<int>(i);
      if (std::count(k.inputs.begin(), k.inputs.end(), sum)) reader = static_cast<int>(i);
    }
    ASSERT_GE(host, 0) << Print(m);
    EXPECT_EQ(m.kernels[host].op, "matmul");
    EXPECT_EQ(m.kernels[host].inputs[1], summed);
    EXPECT_LT(host, reader);
  }
  EXPECT_TRUE(Verify(m).ok());
}

TEST(MergeBiasGradientPass, TheLossKernelTakesItsGradientsSumWhereNoMatmulCan) {
  // Under a 32 KiB cap the hidden activations (64 x 256 f32, 64 KiB) are over it: d_w2 = h^T @
  // d_logits runs in tiles, which add no column sums, so the loss kernel that writes d_logits
  // adds them; d_h (64 KiB) keeps its own sum kernel.
  Module m = After("merge-loss-gradient");
  m.binding_cap = 32 << 10;
  const Kernel* loss = FindOp(m, "cross_entropy");
  ASSERT_NE(loss, nullptr);
  const int d_logits = loss->extra_outputs.at(0);
  int d_b2 = -1;
  for (const Kernel& k : m.kernels)
    if (k.op == "sum" && k.inputs[0] == d_logits) d_b2 = k.output;
  ASSERT_GE(d_b2, 0) << Print(m);
  ASSERT_TRUE(MergeBiasGradient(m).ok());
  EXPECT_EQ(FindOp(m, "cross_entropy")->extra_outputs, (std::vector<int>{d_logits, d_b2}));
  EXPECT_EQ(CountOp(m, "sum"), 1) << Print(m);
  EXPECT_TRUE(Verify(m).ok());
}

TEST(MergeLossGradientPass, EmitsOneWorkgroupWritingAllThreeOutputs) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.up_to = pipeline::Rung::kKernel;
  // Under a 32 KiB cap no matmul can add d_b2's column sums (see above): the loss kernel does.
  o.plan.limits.max_binding_bytes = 32 << 10;
  auto c = pipeline::Compile(FashionMlp(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  const Kernel* k = FindOp(*c->module, "cross_entropy");
  ASSERT_NE(k, nullptr);
  const std::string& src = k->Wgsl().source;
  // The logits and the labels bound; the upstream gradient a literal (fold-constant-inputs).
  EXPECT_NE(src.find("@binding(2) var<storage, read_write> out: array<f32>"), std::string::npos);
  EXPECT_NE(src.find("@binding(3) var<storage, read_write> out1: array<f32>"), std::string::npos);
  EXPECT_NE(src.find("@binding(4) var<storage, read_write> out2: array<f32>"), std::string::npos);
  EXPECT_NE(src.find("storageBarrier();"), std::string::npos) << src;
  EXPECT_EQ(k->workgroups, (std::array<uint32_t, 3>{1, 1, 1}));
}

TEST(MergeLossGradientPass, LeavesKernelsOverTheBindingCapAlone) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.print_after = "merge-optimizer-outputs";
  auto c = pipeline::Compile(FashionMlp(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  Module m = *c->module;
  // The logits of a batch of 64 x 10 f32 take 2560 bytes: under a cap below it the merged
  // kernel would run in tiles of 256 rows (10 KiB), which do not fit either, so both stay apart.
  m.binding_cap = 1024;
  const size_t before = m.kernels.size();
  ASSERT_TRUE(MergeLossGradient(m).ok());
  ASSERT_TRUE(MergeBiasGradient(m).ok());
  EXPECT_EQ(m.kernels.size(), before);
}

}  // namespace
}  // namespace scellis::kernel
