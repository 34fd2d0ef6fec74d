// The tile spaces of the layout copies (kernel/tiling_copy.cpp) — transpose, permute, slice, flip,
// reshape, and batches of boxes — planned under the binding cap, their boxes and windows worked
// out by hand below.
#include <gtest/gtest.h>

#include <tuple>

#include "kernel/tiling.h"
#include "kernel/tiling_test.h"

namespace scellis::kernel {
namespace {

using testing::CopyDoc;
using testing::LowerToKernel;
using testing::OnlyOp;
using testing::Range;

// transpose of x [40, 100]: the output [100, 40] is the box 1 x 100 x 40, read with strides
// (1, 100) and written with (40, 1). A box of c output rows x d output columns spans 100 (d - 1) +
// c input elements and 40 (c - 1) + d output elements: d <= 10 for the input, then c <= 24 for the
// output: 5 x 4 tiles.
TEST(TilePlanning, ATransposeIsCutIntoBoxesWhoseInputAndOutputWindowsFit) {
  Module m = LowerToKernel(CopyDoc({40, 100}, {{"op", "transpose"}}));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "transpose"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->space.kind, TileSpace::Kind::kCopy);
  EXPECT_EQ(t->space.layouts[0], (TileStrides{0, 1, 100}));
  EXPECT_EQ(t->space.layouts[1], (TileStrides{0, 40, 1}));
  EXPECT_EQ(t->tile_cols, 24);
  EXPECT_EQ(t->tile_depth, 10);
  ASSERT_EQ(t->tiles.size(), 20u);
  // The sixth box: output rows 24..47, columns 10..19; input rows 10..19, columns 24..47.
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[5]), Range(10 * 100 + 24, 19 * 100 + 48));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[5]), Range(24 * 40 + 10, 47 * 40 + 20));
  EXPECT_EQ(t->Describe(),
            "20 tiles of 1 x 24 x 10 of the output's 1 x 100 x 40 (its axes merged where they "
            "move together), each moving its box of elements");
}

// permute [0, 2, 1] of x [3, 20, 30]: three axes; a slice from (5, 2) by (2, 3) of x [50, 40]
// reads output (r, c) at 5 * 40 + 2 + 80 r + 3 c; a reshape and a permute that keeps the order are
// one axis of every element.
TEST(TilePlanning, LayoutCopiesAreAffineBoxesOfTheirOutputs) {
  Module batched = LowerToKernel(CopyDoc({3, 20, 30}, {{"op", "permute"}, {"dims", {0, 2, 1}}}));
  std::optional<TileSpace> s = TileSpaceOf(batched, OnlyOp(batched, "permute"));
  ASSERT_TRUE(s);
  EXPECT_EQ(std::make_tuple(s->rows, s->cols, s->depth), std::make_tuple(3, 30, 20));
  EXPECT_EQ(s->layouts[0], (TileStrides{600, 1, 30}));
  EXPECT_EQ(s->layouts[1], (TileStrides{600, 20, 1}));

  Module slice = LowerToKernel(CopyDoc(
      {50, 40}, {{"op", "slice"}, {"starts", {5, 2}}, {"stops", {45, 38}}, {"steps", {2, 3}}}));
  s = TileSpaceOf(slice, OnlyOp(slice, "slice"));
  ASSERT_TRUE(s);
  EXPECT_EQ(std::make_tuple(s->rows, s->cols, s->depth), std::make_tuple(1, 20, 12));
  EXPECT_EQ(s->layouts[0], (TileStrides{0, 80, 3}));
  EXPECT_EQ(s->origins, (std::vector<int64_t>{202, 0}));
  std::optional<Tiling> t = PlanTiles(slice, OnlyOp(slice, "slice"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[0]).first, 202);

  for (const Json& op :
       {Json{{"op", "reshape"}, {"shape", {30, 100}}}, Json{{"op", "permute"}, {"dims", {0, 1}}}}) {
    Module m = LowerToKernel(CopyDoc({30, 100}, op));
    s = TileSpaceOf(m, OnlyOp(m, op["op"].get<std::string>()));
    ASSERT_TRUE(s) << op;
    EXPECT_EQ(std::make_tuple(s->rows, s->cols, s->depth), std::make_tuple(1, 1, 3000)) << op;
    EXPECT_EQ(s->layouts[0], (TileStrides{0, 0, 1})) << op;
  }
}

// flip of x [40, 100] along axis 1: output (r, c) reads 99 + 100 r - c, so the input's layout steps
// back along depth. A box of c rows x 100 spans 100 (c - 1) + 100 elements of either operand,
// within 961 for c <= 9: 5 tiles. The second box (rows 9..17) starts at input element 999 and
// reaches down to 900.
TEST(TilePlanning, AFlipWalksItsInputBackwardsFromTheBoxsHighestElement) {
  Module m = LowerToKernel(CopyDoc({40, 100}, {{"op", "flip"}, {"axes", {1}}}));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "flip"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->space.layouts[0], (TileStrides{0, 100, -1}));
  EXPECT_EQ(t->space.layouts[1], (TileStrides{0, 100, 1}));
  EXPECT_EQ(t->space.origins, (std::vector<int64_t>{99, 0}));
  EXPECT_EQ(t->tile_cols, 9);
  ASSERT_EQ(t->tiles.size(), 5u);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(900, 1800));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[1]), Range(900, 1800));
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[4]), Range(3600, 4000));

  // Flipped along both axes the input runs backwards as one axis: output i reads 3999 - i, in
  // stretches of 961; the second reads 3038 down to 2078.
  Module both = LowerToKernel(CopyDoc({40, 100}, {{"op", "flip"}, {"axes", {0, 1}}}));
  t = PlanTiles(both, OnlyOp(both, "flip"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->space.layouts[0], (TileStrides{0, 0, -1}));
  EXPECT_EQ(t->tile_depth, 961);
  ASSERT_EQ(t->tiles.size(), 5u);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(2078, 3039));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[1]), Range(961, 1922));
}

// x [50, 40] sliced from (44, 2) by steps (-2, 3): output (r, c) reads 1762 - 80 r + 3 c. A box of
// c rows spans 80 (c - 1) + 34 input elements, within 961 for c <= 12: 2 tiles; the first reads
// rows 44 down to 22.
TEST(TilePlanning, ASliceWithANegativeStepReachesBelowItsStart) {
  Module m = LowerToKernel(CopyDoc(
      {50, 40}, {{"op", "slice"}, {"starts", {44, 2}}, {"stops", {4, 38}}, {"steps", {-2, 3}}}));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "slice"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(std::make_tuple(t->space.rows, t->space.cols, t->space.depth),
            std::make_tuple(1, 20, 12));
  EXPECT_EQ(t->space.layouts[0], (TileStrides{0, -80, 3}));
  EXPECT_EQ(t->space.origins, (std::vector<int64_t>{1762, 0}));
  EXPECT_EQ(t->tile_cols, 12);
  ASSERT_EQ(t->tiles.size(), 2u);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[0]), Range(22 * 40 + 2, 44 * 40 + 36));
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(6 * 40 + 2, 20 * 40 + 36));
}

// permute [0, 2, 1, 3] of x [4, 6, 10, 8] into [4, 10, 6, 8] (the heads' swap of attention): no two
// neighbouring axes move together in both, so the inner three are the box, 10 x 6 x 8 read at
// (8, 80, 1), and the outer axis a batch of 4 boxes, 480 elements apart in input and output alike.
// Two whole boxes span 960 elements: 2 tiles of 2.
TEST(TilePlanning, APermuteOfFourAxesIsABatchOfBoxes) {
  Module m = LowerToKernel(CopyDoc({4, 6, 10, 8}, {{"op", "permute"}, {"dims", {0, 2, 1, 3}}}));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "permute"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(std::make_tuple(t->space.rows, t->space.cols, t->space.depth),
            std::make_tuple(10, 6, 8));
  EXPECT_EQ(t->space.layouts[0], (TileStrides{8, 80, 1}));
  EXPECT_EQ(t->space.layouts[1], (TileStrides{48, 8, 1}));
  EXPECT_EQ(t->space.batch_dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(t->space.batch_strides, (std::vector<std::vector<int64_t>>{{480}, {480}}));
  ASSERT_EQ(t->tiles.size(), 2u);
  EXPECT_EQ(t->tiles[1].batch0, 2);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(960, 1920));
  EXPECT_EQ(t->Describe(),
            "2 tiles of 2 of the output's 4 boxes of 10 x 6 x 8 (its axes merged where they move "
            "together, the outer ones beyond three a batch of boxes), each moving its boxes' "
            "elements");
}

// flip of x [4, 5, 6, 10] along axes 0 and 2: its input strides (-300, 60, -10, 1) merge nowhere,
// so a batch of 4 boxes of 5 x 6 x 10, box g read from 950 - 300 g down to 50 below and up to 250
// above: the batch runs backwards through the input. Three boxes span 900 elements (from 300),
// four 1200: tiles of 3, the second of box 3 alone, reading from 0.
TEST(TilePlanning, ABackwardsBatchTakesTheWindowOfItsLowestToItsHighestBox) {
  Module m = LowerToKernel(CopyDoc({4, 5, 6, 10}, {{"op", "flip"}, {"axes", {0, 2}}}));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "flip"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->space.layouts[0], (TileStrides{60, -10, 1}));
  EXPECT_EQ(t->space.origins, (std::vector<int64_t>{950, 0}));
  EXPECT_EQ(t->space.batch_strides, (std::vector<std::vector<int64_t>>{{-300}, {300}}));
  ASSERT_EQ(t->tiles.size(), 2u);
  EXPECT_EQ(t->tile_batches, 3);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[0]), Range(300, 1200));
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(0, 300));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[1]), Range(900, 1200));
}

// permute [0, 2, 1, 3] of x [2, 3, 40, 20] into [2, 40, 3, 20]: a batch of 2 boxes of 40 x 3 x 20,
// each spanning 2400 input elements, so each box is cut. Its columns lie 800 apart in the input:
// a box of one column and r rows spans 20 r input and 60 (r - 1) + 20 output elements (r <= 16),
// 3 x 3 boxes; two columns hold 8 rows at most, 5 x 2. The second box's second tile reads column
// 1's rows 0..15: input from 2400 + 800, output from 2400 + 20.
TEST(TilePlanning, ABatchOfBoxesOverTheCapCutsEachBox) {
  Module m = LowerToKernel(CopyDoc({2, 3, 40, 20}, {{"op", "permute"}, {"dims", {0, 2, 1, 3}}}));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "permute"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->space.layouts[0], (TileStrides{20, 800, 1}));
  ASSERT_EQ(t->tiles.size(), 18u);
  EXPECT_EQ(std::make_tuple(t->tile_rows, t->tile_cols, t->tile_depth), std::make_tuple(16, 1, 20));
  const Tile& tile = t->tiles[10];
  EXPECT_EQ(std::make_tuple(tile.batch0, tile.row0, tile.col0), std::make_tuple(1, 0, 1));
  EXPECT_EQ(TileRange(t->space, 0, tile), Range(3200, 3520));
  EXPECT_EQ(TileRange(t->space, 1, tile), Range(2420, 3340));
  EXPECT_EQ(t->Describe(),
            "18 tiles: each of the output's 2 boxes of 40 x 3 x 20 (its axes merged where they "
            "move together, the outer ones beyond three a batch of boxes) in 9 of 16 x 1 x 20");
}

}  // namespace
}  // namespace scellis::kernel
