// A training run's dataset in the memory plan: a class of the budget where the backend's buffers
// are host memory, host memory beside the device's buffers elsewhere, and a streamed set's bytes
// sized by the batch the plan is made at.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "execplan/plan.h"
#include "pipeline/compile.h"
#include "support/graph.h"

namespace scellis::execplan {
namespace {

std::string Example(const std::string& name) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// mlp_step.json, or fashion_mlp.json at batch `batch` (its images' first dimension, B).
Plan PlanWith(const HostDataset& d, bool buffers_in_host, int64_t batch = 0) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.plan.dataset = d;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits.buffers_in_host_memory = buffers_in_host;
  o.plan.limits.host_memory_bytes = int64_t{64} << 30;
  if (batch > 0) o.lower.bind["B"] = batch;
  auto c = pipeline::Compile(Example(batch > 0 ? "fashion_mlp.json" : "mlp_step.json"), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return std::move(*c->plan);
}

TEST(DatasetClass, HeldSetIsABudgetClassOnlyWhereBuffersAreHostMemory) {
  HostDataset d;
  d.source = "idx:a,b";
  d.whole_bytes = 123457;  // odd, so no other class can match it by chance
  pipeline::CompileOptions bare = scellis::testing::ProdOptions();
  bare.plan.budget_bytes = int64_t{1} << 30;
  auto without = pipeline::Compile(Example("mlp_step.json"), bare);
  ASSERT_TRUE(without.ok());
  const MemoryPlan& base = without->plan->memory;

  const Plan cpu = PlanWith(d, /*buffers_in_host=*/true);
  EXPECT_EQ(cpu.memory.by_class[static_cast<int>(MemClass::kDataset)], 123457);
  EXPECT_EQ(cpu.memory.allocated, base.allocated + 123457);
  EXPECT_EQ(cpu.memory.peak_live, base.peak_live + 123457);
  EXPECT_EQ(cpu.memory.host_staging, base.host_staging);
  EXPECT_EQ(ToJson(cpu)["dataset"]["in_budget"], true);
  EXPECT_NE(Print(cpu).find("                     dataset          120.6 KiB"), std::string::npos)
      << Print(cpu);

  const Plan gpu = PlanWith(d, /*buffers_in_host=*/false);
  EXPECT_EQ(gpu.memory.by_class[static_cast<int>(MemClass::kDataset)], 0);
  EXPECT_EQ(gpu.memory.allocated, base.allocated);
  EXPECT_EQ(gpu.memory.host_staging, base.host_staging + 123457);
  EXPECT_EQ(ToJson(gpu)["dataset"]["in_budget"], false);
  EXPECT_NE(Print(gpu).find("not held by the device budget"), std::string::npos) << Print(gpu);
}

TEST(DatasetClass, StreamedSetHoldsTheBatchesOfThePlansBatch) {
  HostDataset d;
  d.source = "idx:a,b";
  d.whole_bytes = 1 << 20;
  d.streamed = true;
  d.batch_dim = "B";
  d.batches = 3;
  d.example_bytes = 20;
  d.eval_examples = 5;  // the evaluation batch: its own size, whatever B is bound to
  for (int64_t batch : {1, 7}) {
    const Plan p = PlanWith(d, true, batch);
    EXPECT_EQ(p.dataset_bytes, 3 * batch * 20 + 5 * 20) << "B=" << batch;
    EXPECT_EQ(p.memory.by_class[static_cast<int>(MemClass::kDataset)], 3 * batch * 20 + 5 * 20);
    EXPECT_EQ(ToJson(p)["dataset"]["eval_batch"], 5);
  }
}

// Held whole, the set's bytes and the evaluation batch gathered from its test split.
TEST(DatasetClass, HeldSetCountsTheEvaluationBatchBeside) {
  HostDataset d;
  d.source = "idx:a,b";
  d.whole_bytes = 1 << 20;
  d.example_bytes = 20;
  d.eval_examples = 7;
  const Plan p = PlanWith(d, true);
  EXPECT_EQ(p.dataset_bytes, (1 << 20) + 7 * 20);
  EXPECT_EQ(p.memory.by_class[static_cast<int>(MemClass::kDataset)], (1 << 20) + 7 * 20);
  EXPECT_NE(Print(p).find("; the evaluation batch of 7 gathered beside)"), std::string::npos)
      << Print(p);
}

}  // namespace
}  // namespace scellis::execplan
