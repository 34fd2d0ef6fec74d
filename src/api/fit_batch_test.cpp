// The fix a red training plan states: the largest batch that fits, checked here by planning the
// answer and the batch above it independently of the search.
#include "api/fit_batch.h"

#include <gtest/gtest.h>

#include "api/session.h"
#include "base/atomic_file.h"
#include "support/examples.h"
#include "support/graph.h"

namespace scellis::api {
namespace {

using scellis::testing::FashionMlp;

pipeline::CompileOptions WithBudget(int64_t bytes) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.plan.budget_bytes = bytes;
  return o;
}

// The plan of Fashion-MNIST's training step at batch `batch`.
execplan::Plan PlanAt(int64_t batch, const pipeline::CompileOptions& options) {
  pipeline::CompileOptions o = options;
  o.lower.bind["B"] = batch;
  auto c = pipeline::Compile(FashionMlp(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return std::move(*c->plan);
}

// 2.54 MiB: under what batch 64 needs (2.65 MiB) and what it would need in mixed precision
// (2.88 MiB), over what the parameters and Adam's moments (updated in place, in the matmuls that
// compute their gradients: no gradient of a parameter is stored) need at batch 1 (2.33 MiB).
constexpr int64_t kBudget = 2600 * 1024;

TEST(LargestBatchThatFits, FashionMnistUnderABudgetBatch64Misses) {
  const pipeline::CompileOptions options = WithBudget(kBudget);
  ASSERT_EQ(PlanAt(64, options).verdict, execplan::Verdict::kRed);

  auto fit = LargestBatchThatFits(FashionMlp(), options, "B", 64);
  ASSERT_TRUE(fit.ok()) << fit.errors().front().Format();
  const int64_t b = fit->largest;
  ASSERT_GT(b, 0);
  ASSERT_LT(b, 64);
  // The answer plans (green or yellow) and the batch above it is red, each planned here.
  const execplan::Plan at_b = PlanAt(b, options);
  EXPECT_NE(at_b.verdict, execplan::Verdict::kRed) << execplan::Print(at_b);
  EXPECT_EQ(at_b.verdict, fit->verdict_at_largest);
  EXPECT_EQ(at_b.memory.allocated, fit->allocated_at_largest);
  EXPECT_LE(at_b.memory.allocated, kBudget);
  EXPECT_EQ(PlanAt(b + 1, options).verdict, execplan::Verdict::kRed);
  // What does not depend on the batch is over 80% of this budget: no batch plans green.
  EXPECT_EQ(fit->largest_green, 0);
  EXPECT_EQ(PlanAt(1, options).verdict, execplan::Verdict::kYellow);
  // A binary search: batch 1, then six halvings of [1, 64).
  EXPECT_LE(fit->plans, 7);
}

// At batch 1024 the batch-sized values weigh enough for a smaller batch to plan green too.
TEST(LargestBatchThatFits, LargestGreenBelowTheLargestYellow) {
  const pipeline::CompileOptions options = WithBudget(6 << 20);
  ASSERT_EQ(PlanAt(1024, options).verdict, execplan::Verdict::kRed);
  auto fit = LargestBatchThatFits(FashionMlp(), options, "B", 1024);
  ASSERT_TRUE(fit.ok());
  const int64_t b = fit->largest, g = fit->largest_green;
  ASSERT_GT(g, 0);
  ASSERT_LT(g, b);
  ASSERT_LT(b, 1024);
  EXPECT_EQ(fit->verdict_at_largest, execplan::Verdict::kYellow);
  EXPECT_EQ(PlanAt(b, options).verdict, execplan::Verdict::kYellow);
  EXPECT_EQ(PlanAt(b + 1, options).verdict, execplan::Verdict::kRed);
  const execplan::Plan at_g = PlanAt(g, options);
  EXPECT_EQ(at_g.verdict, execplan::Verdict::kGreen);
  EXPECT_EQ(at_g.memory.allocated, fit->allocated_at_largest_green);
  EXPECT_EQ(PlanAt(g + 1, options).verdict, execplan::Verdict::kYellow);
  // Two binary searches over at most 1024 batches, batch 1 planned once.
  EXPECT_LE(fit->plans, 1 + 10 + 10);
}

TEST(LargestBatchThatFits, NotEvenBatchOne) {
  // 1 MiB: the first layer's weights alone (784 x 256 f32) take 784 KiB, Adam's moments twice that.
  auto fit = LargestBatchThatFits(FashionMlp(), WithBudget(1 << 20), "B", 64);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->largest, 0);
  EXPECT_EQ(fit->plans, 1);
  EXPECT_EQ(PlanAt(1, WithBudget(1 << 20)).verdict, execplan::Verdict::kRed);
}

TEST(ExplainRedPlan, TheRefusalNamesTheBatch) {
  const pipeline::CompileOptions options = WithBudget(kBudget);
  const std::string text = FashionMlp();
  auto c = pipeline::Compile(text, options);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(ExplainRedPlan(text, options, c.value()).ok());
  ASSERT_TRUE(c->plan->batch_fit.has_value());
  const execplan::BatchFit& fit = *c->plan->batch_fit;
  EXPECT_EQ(fit.dim, "B");
  EXPECT_EQ(fit.planned, 64);
  const Diagnostic& d = c->plan->findings.at(0);
  EXPECT_EQ(d.code, "memory-over-budget");
  const std::string b = std::to_string(fit.largest);
  EXPECT_NE(d.help.find("the largest batch that fits is B=" + b), std::string::npos) << d.help;
  EXPECT_NE(d.help.find("B=" + std::to_string(fit.largest + 1) + " plans red"), std::string::npos)
      << d.help;
  EXPECT_NE(execplan::Print(*c->plan).find("largest_batch    : B=" + b), std::string::npos);
  // Whether f16 would fit, from the classes: every value of this step is f32, so mixed precision
  // halves all but the optimizer's moments and adds an f16 copy beside each f32 parameter.
  const auto& cls = c->plan->memory.by_class;
  auto of = [&](execplan::MemClass m) { return cls[static_cast<int>(m)]; };
  const int64_t mixed = of(execplan::MemClass::kParameters) * 3 / 2 +
                        of(execplan::MemClass::kOptimizerState) +
                        (of(execplan::MemClass::kInputs) + of(execplan::MemClass::kActivations) +
                         of(execplan::MemClass::kGradients) + of(execplan::MemClass::kWorking)) /
                            2;
  ASSERT_GT(mixed, kBudget);  // the moments and master weights alone nearly fill it
  EXPECT_NE(d.help.find("in mixed precision (f16 values and gradients, f32 master weights and "
                        "optimizer state) the plan would need " +
                        execplan::FormatBytes(mixed) + ", " +
                        execplan::FormatBytes(mixed - kBudget) + " over: f16 would not fit either"),
            std::string::npos)
      << d.help;
  EXPECT_EQ(execplan::ToJson(*c->plan)["batch_fit"]["largest"], fit.largest);

  // A green plan, and a red plan of a document that is no training workflow, are left alone.
  auto green = pipeline::Compile(text, WithBudget(int64_t{1} << 30));
  ASSERT_TRUE(green.ok());
  ASSERT_TRUE(ExplainRedPlan(text, WithBudget(int64_t{1} << 30), green.value()).ok());
  EXPECT_FALSE(green->plan->batch_fit.has_value());
  auto doc = ReadFile(std::string(SCELLIS_SOURCE_DIR) + "/examples/center_columns.json", 1 << 20);
  ASSERT_TRUE(doc.ok());
  auto forward = pipeline::Compile(doc.value(), WithBudget(100));
  ASSERT_TRUE(forward.ok());
  ASSERT_EQ(forward->plan->verdict, execplan::Verdict::kRed);
  ASSERT_TRUE(ExplainRedPlan(doc.value(), WithBudget(100), forward.value()).ok());
  EXPECT_FALSE(forward->plan->batch_fit.has_value());
}

// A session refuses a red training step with the fix in its help; the evaluation pass of the same
// workflow (its forward alone) has no training batch to change, and is refused as before.
TEST(ExplainRedPlan, SessionsAndRunsRefuseWithTheFix) {
  pipeline::CompileOptions options = WithBudget(7 << 20);  // batch 1024 needs 7.47 MiB
  options.lower.bind["B"] = 1024;
  auto cpu = [] { return runtime::SelectBackend({.requested = "cpu"}).value(); };
  auto step = Session::Prepare(FashionMlp(), options, cpu());
  ASSERT_FALSE(step.ok());
  auto fit = LargestBatchThatFits(FashionMlp(), options, "B", 1024);
  ASSERT_TRUE(fit.ok());
  const std::string named = "the largest batch that fits is B=" + std::to_string(fit->largest);
  EXPECT_NE(step.errors().front().help.find(named), std::string::npos)
      << step.errors().front().help;

  pipeline::CompileOptions eval = options;
  eval.plan.budget_bytes = 2 << 20;  // under the batch-1024 images alone (3.1 MiB)
  eval.lower.mode = block::LowerMode::kForward;
  auto forward = Session::Prepare(FashionMlp(), eval, cpu());
  ASSERT_FALSE(forward.ok());
  EXPECT_EQ(forward.errors().front().code, "memory-over-budget");
  EXPECT_EQ(forward.errors().front().help.find("largest batch"), std::string::npos);
}

}  // namespace
}  // namespace scellis::api
