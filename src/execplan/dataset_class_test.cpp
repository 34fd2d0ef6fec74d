// A training run's dataset in the memory plan: a class of the budget where the backend's buffers
// are host memory, host memory beside the device's buffers elsewhere, and a streamed set's bytes
// sized by the batch the plan is made at.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "execplan/plan.h"
#include "pipeline/compile.h"
#include "support/graph.h"
#include "webir/passes/append_train_step.h"

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

// The train split held on the device (block::LowerOptions::dataset_examples_on_device): the images
// and labels inputs become gathers from two tables — params set once, never updated, no gradient —
// by the one fed i32 input of the batch's row indices, and the tables count as input memory.
TEST(DatasetClass, ASplitHeldOnTheDeviceIsGatheredByFedRowIndices) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.plan.budget_bytes = int64_t{1} << 30;
  auto fed = pipeline::Compile(Example("fashion_mlp.json"), o);
  ASSERT_TRUE(fed.ok()) << fed.errors().front().Format();
  o.lower.dataset_examples_on_device = 1000;
  auto held = pipeline::Compile(Example("fashion_mlp.json"), o);
  ASSERT_TRUE(held.ok()) << held.errors().front().Format();
  const webir::Graph& g = held->plan->graph();

  std::vector<std::string> fed_inputs;
  for (int n : webir::FedInputs(g)) fed_inputs.push_back(g.at(n).label);
  std::sort(fed_inputs.begin(), fed_inputs.end());
  EXPECT_EQ(fed_inputs, (std::vector<std::string>{webir::kBatchIndexInput, webir::kStepInput}));
  std::map<std::string, std::vector<int64_t>> tables;
  for (const webir::Node& n : g.nodes) {
    if (n.label == webir::kBatchIndexInput) {
      EXPECT_EQ(n.type.dtype, DType::kI32);
      EXPECT_EQ(n.type.sizes(), (std::vector<int64_t>{64}));
    }
    if (n.purpose == webir::Purpose::kDataset) {
      EXPECT_EQ(n.role, webir::Role::kParam);
      EXPECT_FALSE(n.init.has_value());
      EXPECT_EQ(held->plan->class_of[n.id], MemClass::kInputs) << n.label;
      tables[n.label] = n.type.sizes();
    }
    if (n.op == "index_select") {
      EXPECT_EQ(g.at(n.args[0]).purpose, webir::Purpose::kDataset);
      EXPECT_EQ(g.at(n.args[1]).label, webir::kBatchIndexInput);
    }
    // Nothing of the tables' size is computed: no gradient flows into the dataset.
    if (n.role == webir::Role::kCompute) EXPECT_LT(n.type.elements(), 1000 * 784) << n.name;
  }
  EXPECT_EQ(tables, (std::map<std::string, std::vector<int64_t>>{
                        {webir::DatasetTableName("images"), {1000, 784}},
                        {webir::DatasetTableName("labels"), {1000}}}));
  for (const webir::Carry& c : g.carries) EXPECT_NE(g.at(c.to).purpose, webir::Purpose::kDataset);

  // fold-row-gathers: the gathers cost no dispatch. The step has the host-fed plan's kernels; the
  // first product and the first weight's gradient read the images' rows from their table, the
  // loss the labels'.
  const kernel::Module& km = held->plan->module();
  size_t gathers = 0;
  for (const kernel::Kernel& k : km.kernels) {
    EXPECT_NE(k.op, "index_select") << k.name;
    gathers += k.row_gathers.size();
  }
  EXPECT_EQ(gathers, 3u) << kernel::Print(km);
  EXPECT_EQ(km.kernels.size(), fed->plan->module().kernels.size()) << kernel::Print(km);

  // The inputs class: the two tables and the indices in place of one batch's images and labels
  // (each buffer rounded up to at most 256 bytes).
  const auto inputs = [](const Plan& p) {
    return p.memory.by_class[static_cast<int>(MemClass::kInputs)];
  };
  const int64_t more = (1000 - 64) * (784 + 1) * 4 + 64 * 4;
  EXPECT_GE(inputs(*held->plan) - inputs(*fed->plan), more - 3 * 256);
  EXPECT_LE(inputs(*held->plan) - inputs(*fed->plan), more + 3 * 256);
}

}  // namespace
}  // namespace scellis::execplan
