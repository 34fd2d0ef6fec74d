// schedule-sum: which sums run wide (whole-tensor f32 sum and mean, along a long axis with
// nothing after it, or along a long axis with few outputs after it; prod and fast only, within
// the binding cap), the chunks a count gets (a
// function of the count and the rows alone), the second kernel the emitter adds, and the choice
// printed in the kernel rung. (Their values on WebGPU: runtime/backends/webgpu/wide_sum_test.)
#include <gtest/gtest.h>

#include "kernel/passes/passes.h"
#include "support/graph.h"

namespace scellis::kernel {
namespace {

Json Input(int id, const std::vector<int64_t>& shape, const std::string& dtype = "f32") {
  return {{"id", id},
          {"op", "input"},
          {"name", "in" + std::to_string(id)},
          {"shape", shape},
          {"dtype", dtype}};
}

Json Reduce(int id, const std::string& op, int a, std::optional<int> axis = std::nullopt) {
  Json j = {{"id", id}, {"op", op}, {"a", a}};
  if (axis) j["axis"] = *axis;
  return j;
}

// The one reducing kernel of `nodes` (output: the last node) after the kernel passes.
Kernel Lowered(const std::vector<Json>& nodes, pipeline::CompileOptions o) {
  Json doc = scellis::testing::GraphDoc(nodes, {{"y", nodes.back()["id"].get<int>()}}, 5);
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.errors().front().Format());
  if (!c.ok()) return {};
  EXPECT_EQ(c->module->kernels.size(), 1u) << Print(*c->module);
  return c->module->kernels.empty() ? Kernel{} : c->module->kernels.back();
}

pipeline::CompileOptions Tier(policy::Tier t) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.lower.tier = t;
  return o;
}

TEST(ScheduleSumPass, ChunksAreTheSmallestMultipleOf1024GivingAtMost2048) {
  // Hand-worked: ceil(n / 1024) steps of 1024, chunk = ceil(steps / 2048) steps.
  struct Case {
    int64_t n, chunk, groups;
  } cases[] = {{1, 1024, 1},          {1024, 1024, 1},       {1025, 1024, 2},
               {1000003, 1024, 977},  {2097152, 1024, 2048}, {2097153, 2048, 1025},
               {1 << 26, 32768, 2048}};
  for (const Case& c : cases) {
    const SumSchedule s = SumSchedule::For(c.n);
    EXPECT_EQ(s.chunk, c.chunk) << c.n;
    EXPECT_EQ(s.groups, c.groups) << c.n;
    EXPECT_EQ(s.TwoStages(), c.groups > 1) << c.n;
  }
}

TEST(ScheduleSumPass, RowsTakeUpTo8StepsPerChunkWhileTheGridKeeps8192Workgroups) {
  // Hand-worked: passes per chunk = clamp(rows * steps / 8192, 1, 8), at least ceil(steps / 2048).
  struct Case {
    int64_t len, rows, chunk, groups;
  } cases[] = {{1 << 22, 16, 8192, 512},   // 65 536 steps: 8 passes, 16 x 512 workgroups
               {1 << 20, 16, 2048, 512},   // 16 384 steps: 2
               {1 << 20, 4, 1024, 1024},   // 4 096 steps: 1
               {1 << 24, 16, 8192, 2048},  // the least (8) and the fill (8) agree
               {1 << 23, 1, 4096, 2048}};  // one row: the least, 4
  for (const Case& c : cases) {
    const SumSchedule s = SumSchedule::For(c.len, c.rows);
    EXPECT_EQ(s.chunk, c.chunk) << c.len << " x " << c.rows;
    EXPECT_EQ(s.groups, c.groups) << c.len << " x " << c.rows;
  }
}

TEST(ScheduleSumPass, AForcedChunkIsRoundedToSteps_AndRaisedWhereARowWouldTakeTooMany) {
  // Hand-worked: the chunk rounded up to a multiple of 1024, then at least ceil(n / 2048) rounded
  // so.
  EXPECT_EQ(SumSchedule::For(1 << 26, 1, 65536).chunk, 65536);
  EXPECT_EQ(SumSchedule::For(1 << 26, 1, 65536).groups, 1024);
  EXPECT_EQ(SumSchedule::For(1 << 26, 1, 5000).chunk, 32768);  // 5120 would be 13108 chunks
  EXPECT_EQ(SumSchedule::For(1 << 20, 16, 5000).chunk, 5120);
  EXPECT_EQ(SumSchedule::For(1 << 20, 16, 5000).groups, 205);
  EXPECT_EQ(SumSchedule::For(1 << 20, 16, 5000).rows, 16);
  // Through the options, for a whole-tensor sum and a row sum alike.
  pipeline::CompileOptions o = Tier(policy::Tier::kProd);
  o.sum_chunk = 4096;
  const Kernel whole = Lowered({Input(0, {100000}), Reduce(1, "sum", 0)}, o);
  ASSERT_TRUE(whole.sum_schedule.has_value());
  EXPECT_EQ(whole.sum_schedule->chunk, 4096);
  EXPECT_EQ(whole.sum_schedule->groups, 25);
  const Kernel rows = Lowered({Input(0, {4, 100000}), Reduce(1, "sum", 0, 1)}, o);
  ASSERT_TRUE(rows.sum_schedule.has_value());
  EXPECT_EQ(rows.sum_schedule->chunk, 4096);
  EXPECT_EQ(rows.sum_schedule->rows, 4);
}

TEST(ScheduleSumPass, ProdAndFastWholeTensorF32SumsRunWideWithASecondKernel) {
  for (policy::Tier t : {policy::Tier::kProd, policy::Tier::kFast})
    for (const char* op : {"sum", "mean"}) {
      const Kernel k = Lowered({Input(0, {1000, 7}), Reduce(1, op, 0)}, Tier(t));
      ASSERT_TRUE(k.sum_schedule) << op;
      EXPECT_EQ(k.sum_schedule->Name(), "wide 7x1024");
      EXPECT_EQ(k.workgroups[0], 7u);
      ASSERT_NE(k.Source(kWgslSumFinishTarget), nullptr);
      // The first kernel writes the 7 partial sums, the second adds them.
      EXPECT_NE(k.Wgsl().source.find("out[wg.x] = partial[0];"), std::string::npos);
      EXPECT_NE(k.Source(kWgslSumFinishTarget)->source.find("j < 7u"), std::string::npos);
    }
  // One chunk: one kernel, which writes the result.
  const Kernel one = Lowered({Input(0, {300}), Reduce(1, "mean", 0)}, Tier(policy::Tier::kProd));
  ASSERT_TRUE(one.sum_schedule);
  EXPECT_EQ(one.Source(kWgslSumFinishTarget), nullptr);
  EXPECT_NE(one.Wgsl().source.find("partial[0] / f32(300.0)"), std::string::npos)
      << one.Wgsl().source;
}

TEST(ScheduleSumPass, DebugOtherDtypesAxisSumsAndDisabledKeepTheLaneTree) {
  EXPECT_FALSE(
      Lowered({Input(0, {5000}), Reduce(1, "sum", 0)}, Tier(policy::Tier::kDebug)).sum_schedule);
  for (const char* dtype : {"i32", "f16"})
    EXPECT_FALSE(Lowered({Input(0, {5000}, dtype), Reduce(1, "sum", 0)}, Tier(policy::Tier::kProd))
                     .sum_schedule)
        << dtype;
  EXPECT_FALSE(Lowered({Input(0, {50, 100}), Reduce(1, "sum", 0, 0)}, Tier(policy::Tier::kProd))
                   .sum_schedule);
  pipeline::CompileOptions off = Tier(policy::Tier::kProd);
  off.disabled_passes.insert("schedule-sum");
  const Kernel k = Lowered({Input(0, {5000}), Reduce(1, "sum", 0)}, off);
  EXPECT_FALSE(k.sum_schedule);
  EXPECT_EQ(k.workgroups[0], 1u);
}

// Along an axis with nothing after it and at least kWideAxisMinLength elements: one row per
// output, each row the whole-tensor schedule of its length (hand-worked: 5000 and 4099 elements
// are 5 chunks of 1024), the first grid chunks x rows, the finish one workgroup per row.
TEST(ScheduleSumPass, LongContiguousAxisSumsRunWideRowByRow) {
  struct Case {
    std::vector<int64_t> shape;
    int axis;
    const char* name;
    uint32_t groups, rows;
  } cases[] = {{{3, 5000}, 1, "wide 3x5x1024", 5, 3},
               {{2, 7, 4099}, 2, "wide 14x5x1024", 5, 14},
               {{2, 7, 4099}, -1, "wide 14x5x1024", 5, 14},
               {{2, 4096, 1}, 1, "wide 2x4x1024", 4, 2},
               {{4096}, 0, "wide 4x1024", 4, 1}};
  for (policy::Tier t : {policy::Tier::kProd, policy::Tier::kFast})
    for (const char* op : {"sum", "mean"})
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(op) + " " + c.name + " axis " + std::to_string(c.axis));
        const Kernel k = Lowered({Input(0, c.shape), Reduce(1, op, 0, c.axis)}, Tier(t));
        ASSERT_TRUE(k.sum_schedule);
        EXPECT_EQ(k.sum_schedule->Name(), c.name);
        EXPECT_EQ(k.sum_schedule->rows, c.rows);
        EXPECT_EQ(k.workgroups[0], c.groups);
        EXPECT_EQ(k.workgroups[1], c.rows);
        const EmittedSource* finish = k.Source(kWgslSumFinishTarget);
        ASSERT_NE(finish, nullptr);
        EXPECT_NE(finish->source.find("j < " + std::to_string(c.groups) + "u"), std::string::npos);
        if (c.rows > 1)
          EXPECT_NE(k.Wgsl().source.find("out[wg.y * " + std::to_string(c.groups) + "u + wg.x]"),
                    std::string::npos)
              << k.Wgsl().source;
        // The mean divides once, in the finish, by the axis' length.
        const std::string len = std::to_string(c.shape[c.axis < 0 ? c.shape.size() - 1 : c.axis]);
        EXPECT_EQ(finish->source.find(" / f32(" + len + ".0)") != std::string::npos,
                  std::string(op) == "mean")
            << finish->source;
      }
}

TEST(ScheduleSumPass, ShortStridedOrDebugAxisSumsKeepOneInvocationPerOutput) {
  const pipeline::CompileOptions prod = Tier(policy::Tier::kProd);
  // One element short of the threshold; elements after the axis; the debug tier; another dtype.
  EXPECT_FALSE(
      Lowered({Input(0, {3, kWideAxisMinLength - 1}), Reduce(1, "sum", 0, 1)}, prod).sum_schedule);
  EXPECT_TRUE(
      Lowered({Input(0, {3, kWideAxisMinLength}), Reduce(1, "sum", 0, 1)}, prod).sum_schedule);
  EXPECT_FALSE(Lowered({Input(0, {kWideColumnMinLength - 1, 3}), Reduce(1, "sum", 0, 0)}, prod)
                   .sum_schedule);
  // Elements after the axis and more outputs than kMaxWideColumnOutputs: the walk fills a GPU.
  EXPECT_FALSE(Lowered({Input(0, {1024, 2, 32769}), Reduce(1, "sum", 0, 0)}, prod).sum_schedule);
  EXPECT_TRUE(Lowered({Input(0, {1024, 2, 32768}), Reduce(1, "sum", 0, 0)}, prod).sum_schedule);
  EXPECT_FALSE(Lowered({Input(0, {3, 5000}), Reduce(1, "sum", 0, 1)}, Tier(policy::Tier::kDebug))
                   .sum_schedule);
  EXPECT_FALSE(Lowered({Input(0, {3, 5000}, "f16"), Reduce(1, "sum", 0, 1)}, prod).sum_schedule);
  // Over the binding cap: the tiles keep the serial order.
  pipeline::CompileOptions capped = prod;
  capped.plan.limits.max_binding_bytes = 16384;
  EXPECT_FALSE(Lowered({Input(0, {3, 5000}), Reduce(1, "sum", 0, 1)}, capped).sum_schedule);
}

// Along an axis with elements after it, few outputs and a long axis: columns per workgroup the
// power of two covering them (at most 64), 256 / columns lanes per column, chunks sized for about
// 1024 workgroups with at least 16 steps per lane, a multiple of the lanes (hand-worked below);
// the first grid column blocks x chunks x rows, the finish's blocks of at most 4 columns x rows,
// each column's chunks [0, groups) summed by 256 / 4 lanes.
TEST(ScheduleSumPass, AxisSumsWithFewColumnsRunWideColumnByColumn) {
  struct Case {
    std::vector<int64_t> shape;
    int axis;
    const char* name;
    std::array<uint32_t, 3> grid;
    std::array<uint32_t, 3> finish_grid;
  } cases[] = {
      // 16 columns: 16 lanes each; 1 block wants 1024 chunks, 16 lanes x 16 steps = 256 at least.
      {{4096, 16}, 0, "wide 16x256 of 16 columns by 16", {1, 16, 1}, {4, 1, 1}},
      // 300 columns in blocks of 64 (4 lanes): 15 blocks want 69 chunks, ceil(5000 / 69) = 73
      // steps, 76 as a multiple of 4, so 66 chunks.
      {{3, 5000, 300}, 1, "wide 3x66x76 of 300 columns by 64", {5, 66, 3}, {75, 3, 1}},
      // 3 columns in a block of 4 (64 lanes): 64 x 16 = 1024 steps a chunk, 2 chunks.
      {{2, 1100, 3}, 1, "wide 2x2x1024 of 3 columns by 4", {1, 2, 2}, {1, 2, 1}},
  };
  for (const char* op : {"sum", "mean"})
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(op) + " " + c.name);
      const Kernel k =
          Lowered({Input(0, c.shape), Reduce(1, op, 0, c.axis)}, Tier(policy::Tier::kProd));
      ASSERT_TRUE(k.sum_schedule);
      EXPECT_EQ(k.sum_schedule->Name(), c.name);
      EXPECT_EQ(k.workgroups, c.grid);
      const EmittedSource* finish = k.Source(kWgslSumFinishTarget);
      ASSERT_NE(finish, nullptr);
      EXPECT_NE(finish->source.find("let hi = " + std::to_string(c.grid[1]) + "u;"),
                std::string::npos)
          << finish->source;
      EXPECT_NE(finish->source.find("let lane = t / " +
                                    std::to_string(k.sum_schedule->FinishColumns()) + "u;"),
                std::string::npos);
      EXPECT_EQ(k.sum_schedule->FinishWorkgroups(), c.finish_grid);
      const std::string len = std::to_string(c.shape[c.axis]);
      EXPECT_EQ(finish->source.find(" / f32(" + len + ".0)") != std::string::npos,
                std::string(op) == "mean");
    }
}

// One workgroup per row in the finish: rows beyond one grid dimension keep the serial walk.
TEST(ScheduleSumPass, AxisSumsOfMoreRowsThanOneGridDimensionKeepOneInvocationPerOutput) {
  pipeline::CompileOptions o = Tier(policy::Tier::kProd);
  o.plan.limits.max_binding_bytes = 0;  // no cap: the rows alone decide
  EXPECT_FALSE(
      Lowered({Input(0, {kMaxWideRows + 1, kWideAxisMinLength}), Reduce(1, "sum", 0, 1)}, o)
          .sum_schedule);
  const Kernel k =
      Lowered({Input(0, {kMaxWideRows, kWideAxisMinLength}), Reduce(1, "sum", 0, 1)}, o);
  ASSERT_TRUE(k.sum_schedule);
  EXPECT_EQ(k.sum_schedule->rows, kMaxWideRows);
}

TEST(ScheduleSumPass, AnInputOverTheBindingCapKeepsTheTiledLaneTree) {
  pipeline::CompileOptions o = Tier(policy::Tier::kProd);
  o.plan.limits.max_binding_bytes = 4096;
  EXPECT_FALSE(Lowered({Input(0, {5000}), Reduce(1, "sum", 0)}, o).sum_schedule);
  EXPECT_TRUE(Lowered({Input(0, {1024}), Reduce(1, "sum", 0)}, o).sum_schedule);
}

TEST(ScheduleSumPass, TheScheduleIsPrintedAndInTheJson) {
  Json doc = scellis::testing::GraphDoc({Input(0, {5000}), Reduce(1, "sum", 0)}, {{"y", 1}}, 5);
  auto c = pipeline::Compile(doc.dump(), Tier(policy::Tier::kProd));
  ASSERT_TRUE(c.ok());
  EXPECT_NE(Print(*c->module).find("schedule wide 5x1024"), std::string::npos);
  const Json j = ToJson(*c->module);
  EXPECT_EQ(j["kernels"][0]["sum_schedule"]["groups"], 5);
  EXPECT_EQ(j["kernels"][0]["sum_schedule"]["rows"], 1);
  EXPECT_NE(PrintWgsl(*c->module).find("(the partial sums)"), std::string::npos);
}

}  // namespace
}  // namespace scellis::kernel
