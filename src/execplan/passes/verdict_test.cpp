// verdict: green, yellow or red from the memory plan and the device's limits.
#include <gtest/gtest.h>

#include "execplan/passes/passes.h"
#include "support/graph.h"

namespace scellis::execplan {
namespace {

using scellis::testing::GraphDoc;
using scellis::testing::InputNode;

// y = relu(x) @ x over 16x16 floats: every buffer is 1 KiB; x, relu(x) and y make 3 KiB.
Plan Assigned() {
  Json doc = GraphDoc({InputNode(0, {16, 16}, std::vector<float>(256, 1.0f)),
                       {{"id", 1}, {"op", "relu"}, {"a", 0}},
                       {{"id", 2}, {"op", "matmul"}, {"a", 1}, {"b", 0}}},
                      {{"y", 2}}, 2);
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.print_after = "assign-buffers";
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return *c->plan;
}

TEST(VerdictPass, BudgetDecidesGreenYellowRed) {
  Plan p = Assigned();
  ASSERT_EQ(p.memory.allocated, 3072);
  p.memory.budget = 4096;  // 75%
  ASSERT_TRUE(JudgeVerdict(p).ok());
  EXPECT_EQ(p.verdict, Verdict::kGreen);
  EXPECT_TRUE(p.findings.empty());

  p.memory.budget = 3600;  // 85%
  ASSERT_TRUE(JudgeVerdict(p).ok());
  EXPECT_EQ(p.verdict, Verdict::kYellow);
  ASSERT_EQ(p.findings.size(), 1u);
  EXPECT_EQ(p.findings[0].code, "near-budget");

  p.memory.budget = 3071;
  ASSERT_TRUE(JudgeVerdict(p).ok());
  EXPECT_EQ(p.verdict, Verdict::kRed);
  ASSERT_EQ(p.findings.size(), 1u);
  EXPECT_EQ(p.findings[0].code, "memory-over-budget");
  EXPECT_NE(p.findings[0].message.find("3.0 KiB"), std::string::npos) << p.findings[0].message;
}

// A red verdict says whether f16 would fit: x, relu(x) and y, 1 KiB each in f32, take 512 B each
// in f16 (1.5 KiB); nothing is trained, so no f32 master copy is kept.
TEST(VerdictPass, RedSaysWhetherF16WouldFit) {
  Plan p = Assigned();
  p.memory.budget = 2048;
  ASSERT_TRUE(JudgeVerdict(p).ok());
  ASSERT_EQ(p.verdict, Verdict::kRed);
  EXPECT_NE(p.findings[0].help.find("with its f32 tensors stored as f16 the plan would need "
                                    "1.5 KiB, which fits"),
            std::string::npos)
      << p.findings[0].help;
  p.memory.budget = 1000;
  ASSERT_TRUE(JudgeVerdict(p).ok());
  EXPECT_NE(p.findings[0].help.find("would need 1.5 KiB, 536 B over: f16 would not fit either"),
            std::string::npos)
      << p.findings[0].help;
}

TEST(VerdictPass, BindingCapTilesWhatItCanAndRefusesTheRest) {
  Plan p = Assigned();
  p.memory.budget = int64_t{1} << 30;
  p.limits.device = "gpu";
  // Every 1 KiB buffer is over the cap. A window of 1000 B, less the 252 B its aligned start may
  // add, holds 187 floats: the matmul's tiles take 11 of B's rows (11 x 16 floats) and 11 rows
  // of A and the output: 2 x 1 x 2 tiles.
  p.limits.max_binding_bytes = 1000;
  ASSERT_TRUE(JudgeVerdict(p).ok());
  EXPECT_EQ(p.verdict, Verdict::kYellow);
  bool tiled_relu = false, tiled_matmul = false;
  for (const Diagnostic& d : p.findings) {
    tiled_relu |= d.code == "tiled-binding" && d.message.find("relu") != std::string::npos;
    tiled_matmul |= d.code == "tiled-binding" && d.message.find("matmul") != std::string::npos &&
                    d.message.find("4 tiles: 2 of 11 rows x 1 of 16 columns x 2 of 11 along K") !=
                        std::string::npos;
  }
  EXPECT_TRUE(tiled_relu);
  EXPECT_TRUE(tiled_matmul);

  // Under 256 B no matmul window can start at an aligned offset and hold anything: refused.
  p.limits.max_binding_bytes = 250;
  ASSERT_TRUE(JudgeVerdict(p).ok());
  EXPECT_EQ(p.verdict, Verdict::kRed);
  bool refused_matmul = false;
  for (const Diagnostic& d : p.findings)
    refused_matmul |=
        d.code == "binding-cap-exceeded" && d.message.find("matmul") != std::string::npos;
  EXPECT_TRUE(refused_matmul);

  p.limits.max_binding_bytes = 1024;
  ASSERT_TRUE(JudgeVerdict(p).ok());
  EXPECT_EQ(p.verdict, Verdict::kGreen);
}

// relu(x) reads 1 buffer and writes 1; the matmul reads 2 and writes 1: over a limit of 2 storage
// buffers a kernel, the matmul is refused with its document node's pointer; no limit, no check.
TEST(VerdictPass, AKernelOverTheStorageBufferLimitIsRefused) {
  Plan p = Assigned();
  p.memory.budget = int64_t{1} << 30;
  p.limits.device = "gpu";
  for (int64_t cap : {int64_t{0}, int64_t{3}, int64_t{2}}) {
    p.limits.max_storage_buffers_per_kernel = cap;
    ASSERT_TRUE(JudgeVerdict(p).ok());
    if (cap != 2) {
      EXPECT_EQ(p.verdict, Verdict::kGreen) << cap;
      continue;
    }
    ASSERT_EQ(p.verdict, Verdict::kRed);
    ASSERT_EQ(p.findings.size(), 1u);
    EXPECT_EQ(p.findings[0].code, "too-many-storage-buffers");
    EXPECT_EQ(p.findings[0].pointer, "/nodes/2");
    EXPECT_NE(p.findings[0].message.find("matmul binds 3 storage buffers"), std::string::npos)
        << p.findings[0].message;
    EXPECT_NE(p.findings[0].message.find("gpu's limit of 2 per shader stage"), std::string::npos)
        << p.findings[0].message;
  }
}

TEST(VerdictPass, NeedsBuffersFirst) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.print_after = "memory-classes";
  auto c = pipeline::Compile(
      GraphDoc({InputNode(0, {2}, {1, 2}), {{"id", 1}, {"op", "relu"}, {"a", 0}}}, {{"y", 1}}, 2)
          .dump(),
      o);
  ASSERT_TRUE(c.ok());
  Plan p = *c->plan;
  EXPECT_FALSE(JudgeVerdict(p).ok());
}

}  // namespace
}  // namespace scellis::execplan
