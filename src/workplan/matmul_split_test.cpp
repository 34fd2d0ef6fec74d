// The matmul WorkPlan: which operand is cut, the blocks, each rank's plan and verdict, the
// refusals, the printer, the JSON form and the verifier; and the blocks computed rank by rank on
// the CPU reference and assembled, bit for bit a plain k-ordered float loop over fresh random
// operands (and the one-process run).
#include "workplan/matmul_split.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "api/run.h"
#include "api/run_split.h"
#include "pipeline/matmul_parallel.h"
#include "runtime/backends/select.h"

namespace scellis::workplan {
namespace {

std::string Example(const std::string& name) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// out = a [m, k] @ b [k, n], both inline data drawn from `seed`.
std::string ProductDoc(int64_t m, int64_t k, int64_t n, uint64_t seed, std::vector<float>& a,
                       std::vector<float>& b, const std::string& after = "") {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  a.resize(static_cast<size_t>(m * k));
  b.resize(static_cast<size_t>(k * n));
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  Json doc = {{"version", 1}, {"nodes", Json::array()}};
  doc["nodes"].push_back({{"id", 0}, {"op", "input"}, {"shape", {m, k}}, {"data", a}});
  doc["nodes"].push_back({{"id", 1}, {"op", "input"}, {"shape", {k, n}}, {"data", b}});
  doc["nodes"].push_back({{"id", 2}, {"op", "matmul"}, {"a", 0}, {"b", 1}});
  int out = 2;
  if (!after.empty()) {
    doc["nodes"].push_back({{"id", 3}, {"op", after}, {"a", 2}});
    out = 3;
  }
  doc["outputs"] = Json::array({{{"name", "y"}, {"id", out}}});
  return doc.dump();
}

// Each element a(i, k) * b(k, j) added for k = 0 .. K - 1 in order, in float, no contraction.
std::vector<float> PlainProduct(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                                int64_t k, int64_t n) {
  std::vector<float> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      volatile float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) {
        volatile float product = a[i * k + p] * b[p * n + j];
        sum = sum + product;
      }
      out[i * n + j] = sum;
    }
  return out;
}

pipeline::CompileOptions Budget(int64_t bytes) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = bytes;
  o.lower.tier = policy::Tier::kDebug;
  return o;
}

Result<pipeline::CompiledMatmulWorkPlan> Plan(const std::string& text, int ranks,
                                              int64_t budget = int64_t{1} << 30) {
  return pipeline::CompileMatmulWorkPlan(
      text, Budget(budget), DeviceSet::Uniform(ranks, execplan::HostMemoryLimits("cpu", "cpu")));
}

// Every rank's block computed on the CPU reference from its slice, then assembled.
std::vector<float> RunRankByRank(const pipeline::CompiledMatmulWorkPlan& c) {
  const MatmulWorkPlan& w = c.plan;
  auto sel = runtime::SelectBackend({.requested = "cpu"});
  EXPECT_TRUE(sel.ok());
  const bool rows = w.axis == SplitAxis::kRows;
  const webir::Node& cut = c.whole.graph->at(rows ? w.site.a : w.site.b);
  auto whole = runtime::SourceData(cut, {});
  EXPECT_TRUE(whole.ok());
  std::vector<float> blocks;
  for (int r = 0; r < w.ranks(); ++r) {
    runtime::Feeds feeds = {{runtime::FeedName(cut), SliceOperand(w, whole.value(), r)}};
    auto run = sel->executor->Run(*w.rank_plans[r], feeds);
    EXPECT_TRUE(run.ok()) << run.errors()[0].Format();
    std::span<const float> v = run->outputs.front().second.view<float>();
    EXPECT_EQ(static_cast<int64_t>(v.size()), BlockCounts(w)[r]);
    blocks.insert(blocks.end(), v.begin(), v.end());
  }
  return Assemble(w, blocks).ToFloats();
}

void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
      << "first element: " << got[0] << " vs " << want[0];
}

TEST(MatmulWorkPlan, TheExampleIsRedAloneAndGreenInRowBlocksOnTwoRanks) {
  // examples/workplan/matmul_blocks.json: a [512, 64] (128 KiB) @ b [64, 32] (8 KiB) = y [512, 32]
  // (64 KiB), 200 KiB on one device against its budget of 160 KiB.
  auto c = pipeline::CompileMatmulWorkPlan(
      Example("workplan/matmul_blocks.json"), {},
      DeviceSet::Uniform(2, execplan::HostMemoryLimits("cpu", "cpu")));
  ASSERT_TRUE(c.ok()) << c.errors()[0].Format();
  const MatmulWorkPlan& w = c->plan;
  EXPECT_EQ(w.whole->verdict, Verdict::kRed);
  EXPECT_EQ(w.whole->memory.allocated, 200 * 1024);
  EXPECT_EQ(w.axis, SplitAxis::kRows);  // a is the larger operand
  EXPECT_EQ(w.verdict, Verdict::kGreen);
  ASSERT_EQ(w.blocks.size(), 2u);
  EXPECT_EQ(w.blocks[0].lo, 0);
  EXPECT_EQ(w.blocks[0].hi, 256);
  EXPECT_EQ(w.blocks[1].lo, 256);
  EXPECT_EQ(w.blocks[1].hi, 512);
  for (const BlockMemory& m : w.memory) {
    // 256 rows of a (64 KiB), b (8 KiB), 256 rows of y (32 KiB).
    EXPECT_EQ(m.plan, 104 * 1024) << "rank " << m.rank;
    EXPECT_EQ(m.budget, 160 * 1024);
    EXPECT_EQ(m.verdict, Verdict::kGreen);
  }
  EXPECT_EQ(w.memory[0].gathered, 64 * 1024);
  EXPECT_EQ(w.memory[1].gathered, 0);
  EXPECT_TRUE(Verify(w).ok());
  const std::string text = Print(w);
  EXPECT_NE(text.find("the output's rows over 2 ranks"), std::string::npos) << text;
  EXPECT_NE(text.find("one_device       : red  memory-over-budget"), std::string::npos) << text;
  EXPECT_NE(text.find("gather  every rank: each block to rank 0, 64.0 KiB"), std::string::npos)
      << text;
  const Json j = ToJson(w);
  EXPECT_EQ(j["axis"], "rows");
  EXPECT_EQ(j["one_device"]["verdict"], "red");
  EXPECT_EQ(j["blocks"][1]["lo"], 256);
  EXPECT_EQ(j["memory"][0]["verdict"], "green");
}

TEST(MatmulWorkPlan, TheLargerOperandIsCut) {
  std::vector<float> a, b;
  auto rows = Plan(ProductDoc(40, 6, 7, 1, a, b), 3);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->plan.axis, SplitAxis::kRows);
  auto cols = Plan(ProductDoc(7, 6, 40, 2, a, b), 3);
  ASSERT_TRUE(cols.ok());
  EXPECT_EQ(cols->plan.axis, SplitAxis::kColumns);
  // 40 columns over 3 ranks: 13, 13, 14.
  ASSERT_EQ(cols->plan.blocks.size(), 3u);
  EXPECT_EQ(cols->plan.blocks[0].hi, 13);
  EXPECT_EQ(cols->plan.blocks[1].hi, 26);
  EXPECT_EQ(cols->plan.blocks[2].hi, 40);
  // Each rank's plan holds all of a and its 13 or 14 columns of b and of the output.
  const webir::Graph& g = cols->plan.rank_plans[2]->graph();
  EXPECT_EQ(g.at(cols->plan.site.b).type.sizes(), (std::vector<int64_t>{6, 14}));
  EXPECT_EQ(g.at(cols->plan.site.a).type.sizes(), (std::vector<int64_t>{7, 6}));
  EXPECT_TRUE(Verify(cols->plan).ok());
}

TEST(MatmulWorkPlan, RowBlocksAssembleToThePlainLoopBitForBit) {
  for (int ranks : {1, 2, 3, 5}) {
    std::vector<float> a, b;
    const uint64_t seed = 100 + static_cast<uint64_t>(ranks);
    auto c = Plan(ProductDoc(37, 53, 9, seed, a, b), ranks);
    ASSERT_TRUE(c.ok()) << c.errors()[0].Format();
    ASSERT_EQ(c->plan.axis, SplitAxis::kRows);
    ExpectSameBits(RunRankByRank(c.value()), PlainProduct(a, b, 37, 53, 9));
  }
}

TEST(MatmulWorkPlan, ColumnBlocksAssembleToThePlainLoopBitForBit) {
  for (int ranks : {2, 4}) {
    std::vector<float> a, b;
    const uint64_t seed = 200 + static_cast<uint64_t>(ranks);
    auto c = Plan(ProductDoc(5, 71, 66, seed, a, b), ranks);
    ASSERT_TRUE(c.ok()) << c.errors()[0].Format();
    ASSERT_EQ(c->plan.axis, SplitAxis::kColumns);
    ExpectSameBits(RunRankByRank(c.value()), PlainProduct(a, b, 5, 71, 66));
  }
}

TEST(MatmulWorkPlan, OneProcessRunOfTheSplitEqualsTheWholeRun) {
  // The example's params come from its initializers: --ranks=1 through the facade, against the
  // whole product run normally (with a budget it fits).
  const std::string text = Example("workplan/matmul_blocks.json");
  api::RunOptions o;
  o.select.requested = "cpu";
  o.compile.plan.budget_bytes = int64_t{1} << 30;
  auto whole = api::Run(text, o);
  ASSERT_TRUE(whole.ok()) << whole.errors()[0].Format();
  o.compile.plan.budget_bytes.reset();  // the document's 160 KiB: red for one device
  auto alone = api::Run(text, o);
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.errors()[0].code, "memory-over-budget");
  std::unique_ptr<Collective> world = SingleProcess();
  auto split = api::RunSplit(text, o, *world);
  ASSERT_FALSE(split.ok());  // one rank is the whole product: still red
  EXPECT_EQ(split.errors()[0].code, "memory-over-budget");
  o.compile.plan.budget_bytes = int64_t{1} << 30;
  split = api::RunSplit(text, o, *world);
  ASSERT_TRUE(split.ok()) << split.errors()[0].Format();
  ASSERT_TRUE(split.value().has_value());
  ExpectSameBits(split.value()->outputs.at(0).second.ToFloats(),
                 whole->outputs.at(0).second.ToFloats());
}

TEST(MatmulWorkPlan, RefusesWhatIsNotOneMatmul) {
  std::vector<float> a, b;
  auto c = Plan(ProductDoc(8, 4, 4, 3, a, b, "relu"), 2);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.errors()[0].code, "workplan-unsupported");
  EXPECT_EQ(c.errors()[0].pointer, "/nodes/3");
  auto trains = Plan(Example("fashion_mlp.json"), 2);
  ASSERT_FALSE(trains.ok());
  EXPECT_EQ(trains.errors()[0].code, "workplan-unsupported");
}

TEST(MatmulWorkPlan, MoreRanksThanRowsIsRed) {
  std::vector<float> a, b;
  auto c = Plan(ProductDoc(3, 4, 2, 4, a, b), 4);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->plan.verdict, Verdict::kRed);
  ASSERT_EQ(c->plan.findings.size(), 1u);
  EXPECT_EQ(c->plan.findings[0].code, "too-few-blocks");
  EXPECT_TRUE(c->plan.blocks.empty());
  EXPECT_TRUE(Verify(c->plan).ok());
}

TEST(MatmulWorkPlan, AnOverBudgetRankMakesThePlanRed) {
  std::vector<float> a, b;
  // a [64, 32] 8 KiB, b [32, 8] 1 KiB, y 2 KiB: 11 KiB alone, 6 KiB per rank on 2.
  auto c = Plan(ProductDoc(64, 32, 8, 5, a, b), 2, 5 * 1024);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->plan.verdict, Verdict::kRed);
  EXPECT_EQ(c->plan.memory[1].verdict, Verdict::kRed);
  EXPECT_TRUE(Verify(c->plan).ok());
}

TEST(MatmulWorkPlan, VerifyCatchesBlocksThatDoNotTileTheOutput) {
  std::vector<float> a, b;
  auto c = Plan(ProductDoc(10, 3, 2, 6, a, b), 2);
  ASSERT_TRUE(c.ok());
  MatmulWorkPlan gap = c->plan;
  gap.blocks[1].lo = 6;  // row 5 in no block
  EXPECT_FALSE(Verify(gap).ok());
  MatmulWorkPlan overlap = c->plan;
  overlap.blocks[0].hi = 6;  // row 5 in both
  EXPECT_FALSE(Verify(overlap).ok());
  MatmulWorkPlan short_end = c->plan;
  short_end.blocks[1].hi = 9;
  EXPECT_FALSE(Verify(short_end).ok());
  MatmulWorkPlan hidden_red = c->plan;
  hidden_red.memory[0].verdict = Verdict::kRed;
  EXPECT_FALSE(Verify(hidden_red).ok());
}

}  // namespace
}  // namespace scellis::workplan
