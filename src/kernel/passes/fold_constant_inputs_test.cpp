// fold-constant-inputs: the loss gradient's seed (a constant 1 the step recomputed in a kernel of
// its own) becomes a literal of the kernel that reads it. (The bits are compared with the
// unfolded step's in runtime/backends/step_fusion_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>

#include "kernel/passes/passes.h"
#include "pipeline/compile.h"
#include "support/examples.h"

namespace scellis::kernel {
namespace {

using scellis::testing::FashionMlp;

pipeline::CompileOptions Options() {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  return o;
}

bool IsConstantKernel(const Kernel& k) {
  return k.kind == KernelKind::kElementwise && k.inputs.empty();
}

TEST(FoldConstantInputsPass, SeedOfTheLossGradientIsALiteral) {
  pipeline::CompileOptions o = Options();
  o.print_after = "merge-bias-gradient";
  auto c = pipeline::Compile(FashionMlp(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  Module m = *c->module;
  const size_t before = m.kernels.size();
  int seed = -1;
  for (const Kernel& k : m.kernels)
    if (IsConstantKernel(k)) seed = k.output;
  ASSERT_GE(seed, 0) << Print(m);
  ASSERT_EQ(m.graph().at(seed).attrs.at("value").get<double>(), 1.0);

  ASSERT_TRUE(FoldConstantInputs(m).ok());
  EXPECT_EQ(m.kernels.size(), before - 1) << Print(m);
  int readers = 0;
  for (const Kernel& k : m.kernels) {
    EXPECT_FALSE(IsConstantKernel(k)) << k.name;
    EXPECT_EQ(std::count(k.inputs.begin(), k.inputs.end(), seed), 0) << k.name;
    if (k.literals.empty()) continue;
    ++readers;
    EXPECT_EQ(k.op, "cross_entropy");
    ASSERT_EQ(k.literals.size(), 1u);
    EXPECT_EQ(k.literals[0].node, seed);
    EXPECT_EQ(k.literals[0].value, 1.0);
    EXPECT_EQ(k.inputs.size(), 2u);  // the logits and the labels stay bound
  }
  EXPECT_EQ(readers, 1);
  EXPECT_TRUE(Verify(m).ok());
  EXPECT_NE(Print(m).find("cross_entropy(%logits, %y, 1)"), std::string::npos) << Print(m);
}

TEST(FoldConstantInputsPass, UnmergedGradientTakesTheLiteralToo) {
  pipeline::CompileOptions o = Options();
  o.up_to = pipeline::Rung::kKernel;
  o.disabled_passes = {"merge-loss-gradient", "merge-bias-gradient"};
  auto c = pipeline::Compile(FashionMlp(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  bool found = false;
  for (const Kernel& k : c->module->kernels) {
    EXPECT_FALSE(IsConstantKernel(k)) << k.name;
    if (k.op != "cross_entropy_grad") continue;
    found = true;
    ASSERT_EQ(k.literals.size(), 1u);
    const std::string& src = k.Wgsl().source;
    // The seed reads from a private array where its binding was; the output takes binding 2.
    EXPECT_NE(src.find("var<private> in2: array<f32, 1> = array<f32, 1>(f32(1.0));"),
              std::string::npos)
        << src;
    EXPECT_NE(src.find("@binding(2) var<storage, read_write> out: array<f32>"), std::string::npos);
    EXPECT_EQ(src.find("@binding(3)"), std::string::npos);
  }
  EXPECT_TRUE(found);
}

TEST(FoldConstantInputsPass, VerifierRejectsALiteralThatIsNoConstant) {
  pipeline::CompileOptions o = Options();
  o.up_to = pipeline::Rung::kKernel;
  auto c = pipeline::Compile(FashionMlp(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  Module m = *c->module;
  for (Kernel& k : m.kernels)
    if (!k.literals.empty()) k.literals[0].node = k.inputs[0];  // the logits: no constant
  EXPECT_FALSE(Verify(m).ok());
}

}  // namespace
}  // namespace scellis::kernel
