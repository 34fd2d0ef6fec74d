// schedule-elementwise: which fused kernels are wide, from their inputs' layout and dtypes; the
// period at which each input repeats along the output; the choice printed in the kernel rung and
// its JSON; and the grid the wide kernel gets. (Its bits on WebGPU:
// emit/wgsl/vec4_test.)
#include <gtest/gtest.h>

#include "kernel/emit/wgsl/codegen.h"
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

// The module of `nodes` (output: the last node) after the kernel passes.
Module Lower(const std::vector<Json>& nodes) {
  Json doc = scellis::testing::GraphDoc(nodes, {{"y", nodes.back()["id"].get<int>()}}, 5);
  auto c = pipeline::Compile(doc.dump(), scellis::testing::ProdOptions());
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.errors().front().Format());
  return c.ok() ? *c->module : Module{};
}

// The schedule name of the one fused kernel of `nodes`.
std::string ScheduleOf(const std::vector<Json>& nodes) {
  const Module m = Lower(nodes);
  for (const Kernel& k : m.kernels)
    if (k.kind == KernelKind::kElementwise && k.elementwise_schedule)
      return k.elementwise_schedule->Name();
  return "(none)";
}

Json Binary(int id, const std::string& op, int a, int b) {
  return {{"id", id}, {"op", op}, {"a", a}, {"b", b}};
}

TEST(ScheduleElementwisePass, WideOnlyOverMultiplesOf4) {
  for (int64_t n : {4, 8, 1 << 20})
    EXPECT_EQ(ScheduleOf({Input(0, {n}), Input(1, {n}), Binary(2, "add", 0, 1)}), "vec4/256x4")
        << n;
  for (int64_t n : {1, 2, 3, 5, 6, 7, 4099})
    EXPECT_EQ(ScheduleOf({Input(0, {n}), Input(1, {n}), Binary(2, "add", 0, 1)}), "scalar") << n;
}

TEST(ScheduleElementwisePass, BroadcastInWholeVectorsOnly) {
  // A single element, and trailing dimensions of a multiple of 4 elements: wide.
  EXPECT_EQ(ScheduleOf({Input(0, {6, 8}), Input(1, {1}), Binary(2, "mul", 0, 1)}), "vec4/256x4");
  EXPECT_EQ(ScheduleOf({Input(0, {6, 8}), Input(1, {8}), Binary(2, "mul", 0, 1)}), "vec4/256x4");
  EXPECT_EQ(ScheduleOf({Input(0, {5, 3, 4}), Input(1, {3, 4}), Binary(2, "mul", 0, 1)}),
            "vec4/256x4");
  EXPECT_EQ(ScheduleOf({Input(0, {5, 3, 4}), Input(1, {1, 3, 4}), Binary(2, "mul", 0, 1)}),
            "vec4/256x4");
  // A row of 6 splits vectors; a column, or a middle dimension, is no suffix of the output.
  EXPECT_EQ(ScheduleOf({Input(0, {4, 6}), Input(1, {6}), Binary(2, "mul", 0, 1)}), "scalar");
  EXPECT_EQ(ScheduleOf({Input(0, {6, 8}), Input(1, {6, 1}), Binary(2, "mul", 0, 1)}), "scalar");
  EXPECT_EQ(ScheduleOf({Input(0, {2, 4, 8}), Input(1, {4, 1}), Binary(2, "mul", 0, 1)}), "scalar");
}

TEST(ScheduleElementwisePass, WordDtypesOnlyAndNoShiftedLoads) {
  for (const char* t : {"i32", "u32"})
    EXPECT_EQ(ScheduleOf({Input(0, {16}, t), Input(1, {16}, t), Binary(2, "add", 0, 1)}),
              "vec4/256x4")
        << t;
  EXPECT_EQ(ScheduleOf({Input(0, {16}), Input(1, {16}), Binary(2, "lt", 0, 1)}), "vec4/256x4");
  EXPECT_EQ(ScheduleOf({Input(0, {16}, "f16"), Input(1, {16}, "f16"), Binary(2, "add", 0, 1)}),
            "scalar");
  EXPECT_EQ(
      ScheduleOf({Input(0, {8, 8}),
                  {{"id", 1}, {"op", "shift"}, {"a", 0}, {"shifts", {1, 0}}, {"boundary", "zero"}},
                  Binary(2, "add", 0, 1)}),
      "scalar");
}

// An index ramp needs each element's coordinates and a butterfly reads a permuted element: both
// keep their kernel one element per invocation (graph protocol version 6).
TEST(ScheduleElementwisePass, IndexRampsAndButterfliesStayScalar) {
  auto schedule_v6 = [](const std::vector<Json>& nodes) {
    Json doc = scellis::testing::GraphDoc(nodes, {{"y", nodes.back()["id"].get<int>()}}, 6);
    auto c = pipeline::Compile(doc.dump(), scellis::testing::ProdOptions());
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.errors().front().Format());
    for (const Kernel& k : c->module->kernels)
      if (k.kind == KernelKind::kElementwise && k.elementwise_schedule)
        return k.elementwise_schedule->Name();
    return std::string("(none)");
  };
  EXPECT_EQ(schedule_v6({Input(0, {16}), Input(1, {16}), Binary(2, "add", 0, 1)}), "vec4/256x4");
  EXPECT_EQ(schedule_v6({Input(0, {16}),
                         {{"id", 1}, {"op", "arange"}, {"shape", {16}}, {"dtype", "f32"}},
                         Binary(2, "add", 0, 1)}),
            "scalar");
  EXPECT_EQ(schedule_v6({Input(0, {16}), {{"id", 1}, {"op", "butterfly"}, {"a", 0}, {"mask", 1}},
                         Binary(2, "add", 0, 1)}),
            "scalar");
}

TEST(ScheduleElementwisePass, ReadPeriodIsTheTrailingSpan) {
  const Module m = Lower({Input(0, {5, 3, 4}), Input(1, {3, 4}), Input(2, {1}), Input(3, {5, 1, 4}),
                          Binary(4, "add", 0, 1), Binary(5, "add", 4, 2), Binary(6, "add", 5, 3)});
  ASSERT_EQ(m.kernels.size(), 1u);
  const Kernel& k = m.kernels[0];
  ASSERT_EQ(k.inputs.size(), 4u);
  EXPECT_EQ(ReadPeriod(m, k, 0), 60);
  EXPECT_EQ(ReadPeriod(m, k, 1), 12);
  EXPECT_EQ(ReadPeriod(m, k, 2), 1);
  EXPECT_EQ(ReadPeriod(m, k, 3), std::nullopt);
}

TEST(ScheduleElementwisePass, PrintedAndGridSizedToTheWork) {
  // 2^20 elements: 2^18 vectors, 1024 per workgroup of 256 invocations x 4.
  const Module m = Lower({Input(0, {1 << 20}), Input(1, {1 << 20}), Binary(2, "add", 0, 1)});
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_NE(Print(m).find("schedule vec4/256x4  grid 256x1"), std::string::npos) << Print(m);
  EXPECT_EQ(ToJson(m)["kernels"][0]["elementwise_schedule"]["width"], 4);
  const std::string& wgsl = m.kernels[0].Wgsl().source;
  EXPECT_NE(wgsl.find("array<vec4<f32>>"), std::string::npos) << wgsl;
  EXPECT_NE(wgsl.find("@workgroup_size(256)"), std::string::npos) << wgsl;
  // 2^30 elements would want 2^18 workgroups: capped at one dimension's 65535, the loop covers
  // the rest.
  Kernel big = m.kernels[0];
  ElementwiseSchedule s = *big.elementwise_schedule;
  EXPECT_EQ(wgsl::VectorTile(m, big, s, 0, int64_t{1} << 30).workgroups,
            (std::array<uint32_t, 3>{65535, 1, 1}));
  EXPECT_EQ(wgsl::VectorTile(m, big, s, 0, 4).workgroups, (std::array<uint32_t, 3>{1, 1, 1}));
}

}  // namespace
}  // namespace scellis::kernel
