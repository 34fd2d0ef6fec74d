// The tile spaces of the kernels that reduce (kernel/tiling_space.cpp) — sums, softmax, cumsum,
// cross entropy and its gradient — planned under the binding cap, their tiles and windows worked
// out by hand below.
#include <gtest/gtest.h>

#include "kernel/tiling.h"
#include "kernel/tiling_test.h"

namespace scellis::kernel {
namespace {

using scellis::testing::ProdOptions;
using testing::LowerToKernel;
using testing::OnlyOp;
using testing::Range;

Json Reduce(const std::string& op, std::vector<int64_t> shape, Json axis) {
  Json node = {{"id", 1}, {"op", op}, {"a", 0}};
  if (!axis.is_null()) node["axis"] = axis;
  return {{"version", 2},
          {"nodes", {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", shape}}, node}},
          {"outputs", {{{"name", "y"}, {"id", 1}}}}};
}

TEST(TilePlanning, SumsAreCutAlongTheReducedAxisAndSoftmaxByRows) {
  // Whole-tensor: depth tiles are multiples of the tree's 256 lanes (768 <= 961 < 1024).
  Module whole = LowerToKernel(Reduce("sum", {5000}, nullptr));
  std::optional<Tiling> t = PlanTiles(whole, OnlyOp(whole, "sum"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_depth, 768);
  EXPECT_EQ(t->tiles.size(), 7u);
  EXPECT_EQ(t->tiles.back().depth, 5000 - 6 * 768);
  EXPECT_EQ(t->space.scratch_elements, 256);

  // Axis 0 of [300, 30]: 30 outputs, each over 300 elements 30 apart: 30 d <= 961.
  Module axis = LowerToKernel(Reduce("sum", {300, 30}, 0));
  t = PlanTiles(axis, OnlyOp(axis, "sum"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_cols, 30);
  EXPECT_EQ(t->tile_depth, 32);
  EXPECT_EQ(t->tiles.size(), 10u);

  // Softmax takes whole rows: 9 of 100, and none when a row is over the cap.
  Module soft = LowerToKernel({{"version", 2},
                               {"nodes",
                                {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {40, 100}}},
                                 {{"id", 1}, {"op", "softmax"}, {"a", 0}}}},
                               {"outputs", {{{"name", "y"}, {"id", 1}}}}});
  t = PlanTiles(soft, OnlyOp(soft, "softmax"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_rows, 9);
  EXPECT_EQ(t->tile_depth, 100);
  EXPECT_EQ(t->Describe(), "5 tiles of 9 rows");
  t = PlanTiles(soft, OnlyOp(soft, "softmax"), 252 + 4 * 100);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->passes, 1);
  // A cap under one row cuts the rows along themselves, in three passes.
  t = PlanTiles(soft, OnlyOp(soft, "softmax"), 252 + 4 * 100 - 4);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->passes, 3);
  EXPECT_EQ(t->tile_depth, 99);
}

// softmax of [2, 1000]: a row (4000 B) is over the cap, so each row is cut along itself into
// 2 stretches of at most 961 elements, and each row's stretches are visited in 3 passes: 12 tiles,
// carrying 4 f32 of the row's partial results.
TEST(TilePlanning, ASoftmaxRowOverTheCapIsCutAlongItselfInThreePasses) {
  Module m = LowerToKernel({{"version", 2},
                            {"nodes",
                             {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {2, 1000}}},
                              {{"id", 1}, {"op", "softmax"}, {"a", 0}}}},
                            {"outputs", {{{"name", "y"}, {"id", 1}}}}});
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "softmax"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->passes, 3);
  EXPECT_EQ(t->tile_rows, 1);
  EXPECT_EQ(t->tile_depth, 961);
  EXPECT_EQ(t->space.scratch_elements, 4);
  ASSERT_EQ(t->tiles.size(), 12u);
  const int passes[] = {0, 0, 1, 1, 2, 2};
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(t->tiles[i].pass, passes[i % 6]) << i;
    EXPECT_EQ(t->tiles[i].row0, static_cast<int64_t>(i / 6)) << i;
    EXPECT_EQ(t->tiles[i].depth0, i % 2 ? 961 : 0) << i;
  }
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[7]), Range(1000 + 961, 2000));
  EXPECT_EQ(t->Describe(),
            "12 tiles: each of 2 blocks of 1 rows in 3 passes (the maximum, the sum of exp, the "
            "writes) of 2 of 961 along the row, each carrying the row's partial results");
}

// A running sum: a tile along the axis continues from the sum the tile before stored at the element
// just before it, so its output window takes that element too. cumsum of [2000]: the input window
// is d floats, the output's d + 1, so d = 960 (961 floats + 252 B = 4096 B): 3 tiles.
TEST(TilePlanning, ARunningSumIsCutAlongItsAxisWithTheSumBeforeInTheOutputWindow) {
  Json doc = Reduce("cumsum", {2000}, 0);
  doc["version"] = 5;
  Module m = LowerToKernel(doc);
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "cumsum"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_depth, 960);
  ASSERT_EQ(t->tiles.size(), 3u);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[0]), Range(0, 960));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[0]), Range(0, 960));
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(960, 1920));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[1]), Range(959, 1920));
  EXPECT_EQ(t->Describe(),
            "3 tiles: 1 of 1 outer rows x 1 of 1 inner columns x 3 of 960 along the axis, each "
            "tile along the axis continuing the running sums the one before stored");

  // Along axis 1 of [4, 700, 3]: lines 3 apart, a tile of all 3 binds 3 d floats of the input
  // and 3 (d + 1) of the output: d = 319, over 4 outer rows one at a time (a second row is 2100
  // floats on).
  doc = Reduce("cumsum", {4, 700, 3}, 1);
  doc["version"] = 5;
  m = LowerToKernel(doc);
  t = PlanTiles(m, OnlyOp(m, "cumsum"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_rows, 1);
  EXPECT_EQ(t->tile_cols, 3);
  EXPECT_EQ(t->tile_depth, 319);
  EXPECT_EQ(t->tiles.size(), 12u);
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[4]), Range(2100 + 318 * 3, 2100 + 638 * 3));
}

// Cross entropy of [1000, 3]: tiles of whole rows in multiples of the tree's 256 lanes; 3 d floats
// of logits fit 961 for d <= 320, so 256 rows a tile. With 10 classes not even 256 rows fit.
TEST(TilePlanning, CrossEntropyIsCutIntoRowsInMultiplesOfTheTreesLanes) {
  auto doc = [](int64_t classes) -> Json {
    return {{"version", 2},
            {"nodes",
             {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {1000, classes}}},
              {{"id", 1}, {"op", "input"}, {"name", "t"}, {"shape", {1000}}},
              {{"id", 2}, {"op", "cross_entropy"}, {"a", 0}, {"target", 1}}}},
            {"outputs", {{{"name", "loss"}, {"id", 2}}}}};
  };
  Module m = LowerToKernel(doc(3));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "cross_entropy"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_depth, 256);
  EXPECT_EQ(t->tile_cols, 3);
  ASSERT_EQ(t->tiles.size(), 4u);
  EXPECT_EQ(t->space.scratch_elements, 256);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[3]), Range(768 * 3, 1000 * 3));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[3]), Range(768, 1000));
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[3]), Range(0, 1));
  EXPECT_EQ(t->Describe(),
            "4 tiles of 256 rows, the 256 lanes' partial sums of row losses carried from tile to "
            "tile");
  Module wide = LowerToKernel(doc(10));
  EXPECT_TRUE(TileSpaceOf(wide, OnlyOp(wide, "cross_entropy")));
  EXPECT_FALSE(PlanTiles(wide, OnlyOp(wide, "cross_entropy"), 4096));
}

// The loss and its gradient of logits [rows, classes]: cross_entropy and cross_entropy_grad of an
// upstream gradient b [], both published.
Json LossAndGradientDoc(int64_t rows, int64_t classes) {
  return {{"version", 2},
          {"nodes",
           {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {rows, classes}}},
            {{"id", 1}, {"op", "input"}, {"name", "t"}, {"shape", {rows}}},
            {{"id", 2}, {"op", "input"}, {"name", "b"}, {"shape", Json::array()}},
            {{"id", 3}, {"op", "cross_entropy"}, {"a", 0}, {"target", 1}},
            {{"id", 4}, {"op", "cross_entropy_grad"}, {"a", 0}, {"target", 1}, {"b", 2}}}},
          {"outputs", {{{"name", "loss"}, {"id", 3}}, {{"name", "grad"}, {"id", 4}}}}};
}

Module LowerToKernelUnderCap(const Json& doc, int64_t cap) {
  pipeline::CompileOptions o = ProdOptions();
  o.up_to = pipeline::Rung::kKernel;
  o.plan.limits.max_binding_bytes = cap;
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return std::move(*c->module);
}

// cross_entropy_grad of [300, 10] alone (the loss not published): whole rows, 10 r floats of
// logits and of the gradient within 961 for r <= 96: 4 tiles, the last of 12 rows; the labels'
// window is the tile's rows, the upstream gradient one element.
TEST(TilePlanning, ALossGradientIsCutIntoWholeRows) {
  Json doc = LossAndGradientDoc(300, 10);
  doc["nodes"].erase(3);  // the loss
  doc["outputs"] = {{{"name", "grad"}, {"id", 4}}};
  Module m = LowerToKernel(doc);
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "cross_entropy_grad"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_rows, 96);
  EXPECT_EQ(t->tile_cols, 10);
  ASSERT_EQ(t->tiles.size(), 4u);
  EXPECT_EQ(t->tiles[3].rows, 12);
  EXPECT_EQ(t->space.scratch_elements, 0);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(960, 1920));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[1]), Range(96, 192));
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[1]), Range(0, 1));
  EXPECT_EQ(TileRange(t->space, 3, t->tiles[3]), Range(2880, 3000));
  EXPECT_EQ(t->Describe(), "4 tiles of 96 rows");
}

// The loss merged with its gradient (merge-loss-gradient) of [1000, 3]: the loss's tiles of 256
// rows, whose windows of the gradient (its fifth binding) are the logits' own.
TEST(TilePlanning, TheLossMergedWithItsGradientIsCutAsTheLossWritingItsRowsOfTheGradient) {
  Module m = LowerToKernelUnderCap(LossAndGradientDoc(1000, 3), 4096);
  ASSERT_EQ(m.kernels.size(), 1u) << Print(m);
  const Kernel& k = OnlyOp(m, "cross_entropy");
  ASSERT_EQ(k.extra_outputs.size(), 1u);
  std::optional<Tiling> t = PlanTiles(m, k, 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_depth, 256);
  ASSERT_EQ(t->tiles.size(), 4u);
  ASSERT_EQ(t->space.layouts.size(), 5u);
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[2]), Range(0, 1));
  EXPECT_EQ(TileRange(t->space, 3, t->tiles[2]), Range(0, 1));
  EXPECT_EQ(TileRange(t->space, 4, t->tiles[2]), Range(512 * 3, 768 * 3));
  EXPECT_EQ(t->Describe(),
            "4 tiles of 256 rows, the 256 lanes' partial sums of row losses carried from tile to "
            "tile, each tile writing its rows of the gradient");
  // With 10 classes 256 rows do not fit, but single rows of the gradient do: the two stay apart,
  // the gradient in tiles of whole rows.
  Module wide = LowerToKernelUnderCap(LossAndGradientDoc(1000, 10), 4096);
  ASSERT_EQ(wide.kernels.size(), 2u) << Print(wide);
  EXPECT_TRUE(OnlyOp(wide, "cross_entropy").extra_outputs.empty());
  EXPECT_TRUE(PlanTiles(wide, OnlyOp(wide, "cross_entropy_grad"), 4096));
}

}  // namespace
}  // namespace scellis::kernel
