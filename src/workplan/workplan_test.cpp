// The WorkPlan of examples/fashion_mlp.json's step (batch 64): shards, the reduction tree worked
// out by hand, the refusals, the printer, the JSON form and the verifier; and the reduction
// itself, whose sum must not depend on how the chunks are shared among ranks.
#include "workplan/workplan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "pipeline/data_parallel.h"
#include "support/examples.h"

namespace scellis::workplan {
namespace {

using scellis::testing::FashionMlp;

pipeline::CompileOptions Options(int64_t budget = int64_t{1} << 30) {
  pipeline::CompileOptions o;
  o.plan.budget_bytes = budget;
  return o;
}

WorkPlan Plan(int ranks, int chunks, int64_t budget = int64_t{1} << 30) {
  auto c = pipeline::CompileWorkPlan(
      FashionMlp(), Options(budget),
      DeviceSet::Uniform(ranks, execplan::HostMemoryLimits("cpu", "cpu")), chunks);
  EXPECT_TRUE(c.ok()) << c.errors()[0].Format();
  return c.ok() ? std::move(c.value().plan) : WorkPlan{};
}

std::string PartialsText(const WorkPlan& w) {
  std::string s;
  for (const Partial& p : w.partials)
    s += "[" + std::to_string(p.span.lo) + "," + std::to_string(p.span.hi) + ")@" +
         std::to_string(p.rank) + " ";
  return s;
}

TEST(WorkPlan, TwoRanksTakeOneHalfOfTheBatchEach) {
  WorkPlan w = Plan(2, 0);
  EXPECT_EQ(w.verdict, Verdict::kGreen);
  EXPECT_EQ(w.chunks, 2);
  EXPECT_EQ(w.chunk_examples, 32);
  ASSERT_EQ(w.shards.size(), 2u);
  EXPECT_EQ(w.shards[0].first_example, 0);
  EXPECT_EQ(w.shards[0].examples, 32);
  EXPECT_EQ(w.shards[1].first_example, 32);
  EXPECT_EQ(w.shards[1].examples, 32);
  EXPECT_EQ(PartialsText(w), "[0,1)@0 [1,2)@1 ");
  // w1 784x256, b1 256, w2 256x10, b2 10, and the loss.
  EXPECT_EQ(w.params, (std::vector<std::string>{"w1", "b1", "w2", "b2"}));
  EXPECT_EQ(w.gradient_elements, 784 * 256 + 256 + 256 * 10 + 10 + 1);
  // The gradient half is planned at one chunk's batch: its images input is 32 x 784.
  bool found = false;
  for (const webir::Node& n : w.gradients->graph().nodes)
    if (n.role == webir::Role::kInput && n.name == "x") {
      found = true;
      EXPECT_EQ(n.type.sizes(), (std::vector<int64_t>{32, 784}));
    }
  EXPECT_TRUE(found);
  EXPECT_TRUE(Verify(w).ok());
}

// 8 chunks over 3 ranks: [0,2) [2,5) [5,8). The tree splits [0,8) into [0,4) [4,8), [4,8) into
// [4,6) [6,8) and [4,6) into [4,5) [5,6): rank 1 owns [2,4) and [4,5), rank 2 [5,6) and [6,8).
TEST(WorkPlan, UnevenShardsGiveTheLargestSubtreesEachRankOwns) {
  WorkPlan w = Plan(3, 8);
  EXPECT_EQ(w.verdict, Verdict::kYellow);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].code, "uneven-shards");
  EXPECT_EQ(PartialsText(w), "[0,2)@0 [2,4)@1 [4,5)@1 [5,6)@2 [6,8)@2 ");
  EXPECT_EQ(GatherCounts(w), (std::vector<int64_t>{w.gradient_elements, 2 * w.gradient_elements,
                                                   2 * w.gradient_elements}));
  EXPECT_TRUE(Verify(w).ok());
}

TEST(WorkPlan, ABatchThatDoesNotDivideIsRefusedAndSaysWhy) {
  WorkPlan w = Plan(3, 0);  // 64 examples in 3 chunks
  EXPECT_EQ(w.verdict, Verdict::kRed);
  ASSERT_FALSE(w.findings.empty());
  EXPECT_EQ(w.findings[0].code, "batch-not-divisible");
  EXPECT_NE(Print(w).find("does not divide into 3 equal chunks"), std::string::npos);
  EXPECT_TRUE(Verify(w).ok());  // a refused plan is still a well-formed one

  WorkPlan few = Plan(4, 2);
  EXPECT_EQ(few.verdict, Verdict::kRed);
  EXPECT_EQ(few.findings.back().code, "too-few-chunks");
}

TEST(WorkPlan, ARankOverItsBudgetIsRed) {
  WorkPlan w = Plan(2, 0, int64_t{4} << 20);  // 4 MiB: less than the update half alone
  EXPECT_EQ(w.verdict, Verdict::kRed);
  ASSERT_EQ(w.memory.size(), 2u);
  for (const RankMemory& m : w.memory) {
    EXPECT_EQ(m.verdict, Verdict::kRed);
    EXPECT_EQ(m.total, m.gradient_plan + m.update_plan + m.chunk_gradients + m.gathered);
    bool over = false;
    for (const Diagnostic& d : m.findings) over |= d.code == "over-budget";
    EXPECT_TRUE(over);
  }
}

TEST(WorkPlan, PrintShowsShardsStepsAndMemoryPerRank) {
  std::string text = Print(Plan(2, 4));
  for (const char* s :
       {"workplan \"fashion_mlp\"", "batch            : 64 examples in 4 chunks of 16",
        "rank 0  cpu (cpu)  chunks [0,2)  examples [0,32)",
        "rank 1  cpu (cpu)  chunks [2,4)  examples [32,64)", "partials: [0,2)@0 [2,4)@1",
        "local_reduce  rank 0: [0,2)=[0,1)+[1,2)", "all_gather  every rank: 2 partials",
        "combine  every rank: [0,4)=[0,2)+[2,4)", "scale  every rank: divide by 4",
        "memory:", "verdict          : green"})
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
}

TEST(WorkPlan, JsonHoldsTheSameSteps) {
  WorkPlan w = Plan(2, 4);
  Json j = ToJson(w);
  EXPECT_EQ(j["ranks"], 2);
  EXPECT_EQ(j["chunks"], 4);
  EXPECT_EQ(j["verdict"], "green");
  EXPECT_EQ(j["gradients_plan"], w.gradients_hash);
  EXPECT_EQ(j["shards"][1]["first_example"], 32);
  EXPECT_EQ(j["partials"].size(), 2u);
  ASSERT_EQ(j["steps"].size(), w.steps.size());
  Json combine;
  for (const Json& s : j["steps"])
    if (s["kind"] == "combine") combine = s;
  EXPECT_EQ(combine["adds"], Json::parse("[[0, 2, 4]]"));
  EXPECT_EQ(j["memory"][0]["verdict"], "green");
}

TEST(WorkPlan, VerifyRefusesAnAdditionBeforeItsOperandsOrOffTheTree) {
  WorkPlan w = Plan(2, 4);
  ASSERT_TRUE(Verify(w).ok());
  for (WorkStep& s : w.steps)
    if (s.kind == StepKind::kCombine) s.adds = {{0, 1, 4}};  // not the tree's split
  EXPECT_FALSE(Verify(w).ok());

  WorkPlan early = Plan(2, 4);
  // Rank 1 sums [0,2), chunks it never computed.
  for (WorkStep& s : early.steps)
    if (s.kind == StepKind::kLocalReduce && s.rank == 1) s.adds.push_back({0, 1, 2});
  Status st = Verify(early);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.first().message.find("before holding both operands"), std::string::npos);

  WorkPlan gap = Plan(2, 4);
  gap.shards[1].first_chunk = 3;
  EXPECT_FALSE(Verify(gap).ok());
}

// The tree sum written independently: the same split, recursively, in float.
std::vector<float> TreeSum(const std::vector<std::vector<float>>& chunks, int lo, int hi) {
  if (hi - lo == 1) return chunks[lo];
  int mid = lo + (hi - lo) / 2;
  std::vector<float> a = TreeSum(chunks, lo, mid), b = TreeSum(chunks, mid, hi);
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// The sum of any sharing of the chunks among ranks — each rank's partials, concatenated as the
// all-gather does, combined — is the one-rank sum bit for bit, and the tree written out above.
TEST(WorkPlan, TheReductionDoesNotDependOnTheRanks) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
  for (int chunks : {2, 3, 4, 7, 8}) {
    WorkPlan alone = Plan(1, chunks);
    if (alone.verdict == Verdict::kRed) continue;  // 64 does not divide by 3 or 7
    const size_t width = static_cast<size_t>(alone.gradient_elements);
    std::vector<std::vector<float>> values(static_cast<size_t>(chunks), std::vector<float>(width));
    for (auto& v : values)
      for (float& x : v) x = dist(rng);
    std::vector<float> want = TreeSum(values, 0, chunks);
    for (float& x : want) x = x / static_cast<float>(chunks);
    std::vector<float> one = Combine(alone, ReduceLocal(alone, 0, values));
    ASSERT_EQ(one.size(), width);
    EXPECT_EQ(std::memcmp(one.data(), want.data(), width * sizeof(float)), 0) << chunks;
    for (int ranks = 2; ranks <= chunks; ++ranks) {
      SCOPED_TRACE(std::to_string(chunks) + " chunks on " + std::to_string(ranks) + " ranks");
      WorkPlan w = Plan(ranks, chunks);
      ASSERT_TRUE(Verify(w).ok());
      std::vector<float> gathered;
      for (int r = 0; r < ranks; ++r) {
        const Shard& s = w.shards[r];
        std::vector<std::vector<float>> mine(values.begin() + s.first_chunk,
                                             values.begin() + s.first_chunk + s.chunks);
        std::vector<float> p = ReduceLocal(w, r, mine);
        EXPECT_EQ(static_cast<int64_t>(p.size()), GatherCounts(w)[r]);
        gathered.insert(gathered.end(), p.begin(), p.end());
      }
      std::vector<float> sum = Combine(w, gathered);
      EXPECT_EQ(std::memcmp(sum.data(), one.data(), width * sizeof(float)), 0);
    }
  }
}

}  // namespace
}  // namespace scellis::workplan
