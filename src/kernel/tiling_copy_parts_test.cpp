// The tile spaces of the copies in parts (kernel/tiling_copy.cpp) — concat, stack, pad and
// slice_scatter — planned under the binding cap, part after part, their boxes and windows worked
// out by hand below.
#include <gtest/gtest.h>

#include "kernel/tiling.h"
#include "kernel/tiling_test.h"

namespace scellis::kernel {
namespace {

using testing::CopyDoc;
using testing::LowerToKernel;
using testing::OnlyOp;
using testing::Range;
using testing::ScatterDoc;

// A concat or stack of inputs of `shapes` along `axis`.
Json JoinDoc(const std::string& op, const std::vector<std::vector<int64_t>>& shapes, int axis) {
  Json nodes = Json::array(), inputs = Json::array();
  for (size_t i = 0; i < shapes.size(); ++i) {
    nodes.push_back(
        {{"id", i}, {"op", "input"}, {"name", "x" + std::to_string(i)}, {"shape", shapes[i]}});
    inputs.push_back(i);
  }
  nodes.push_back({{"id", shapes.size()}, {"op", op}, {"inputs", inputs}, {"axis", axis}});
  return {{"version", 4}, {"nodes", nodes}, {"outputs", {{{"name", "y"}, {"id", shapes.size()}}}}};
}

// concat along axis 1 of [20, 30], [20, 50], [20, 20] into [20, 100]: input p is a box of 20 rows
// x its length, written 100 apart from its column offset (0, 30, 80). r rows of the middle input
// span 100 (r - 1) + 50 output elements, within 961 for r <= 10: 2 tiles per input, each binding
// one element of the other inputs.
TEST(TilePlanning, AConcatIsCutPerInputIntoBoxesOfItsPlaceInTheOutput) {
  Module m = LowerToKernel(JoinDoc("concat", {{20, 30}, {20, 50}, {20, 20}}, 1));
  const Kernel& k = OnlyOp(m, "concat");
  std::optional<TileSpace> s = TileSpaceOf(m, k);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->parts.size(), 3u);
  EXPECT_EQ(s->parts[1].layouts,
            (std::vector<TileStrides>{{0, 0, 0}, {0, 50, 1}, {0, 0, 0}, {0, 100, 1}}));
  EXPECT_EQ(s->parts[1].origins, (std::vector<int64_t>{0, 0, 0, 30}));
  EXPECT_EQ(s->parts[2].origins, (std::vector<int64_t>{0, 0, 0, 80}));
  std::optional<Tiling> t = PlanTiles(m, k, 4096);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->tiles.size(), 6u);
  const Tile& second = t->tiles[3];  // the middle input's rows 10..19
  EXPECT_EQ(second.part, 1);
  EXPECT_EQ(second.col0, 10);
  EXPECT_EQ(TileRange(t->space, 1, second), Range(500, 1000));
  EXPECT_EQ(TileRange(t->space, 3, second), Range(1030, 1980));
  EXPECT_EQ(TileRange(t->space, 0, second), Range(0, 1));
  EXPECT_EQ(TileRange(t->space, 2, second), Range(0, 1));
  EXPECT_EQ(t->Describe(),
            "6 tiles, by input 2 + 2 + 2, each moving a box of one input's elements to its place "
            "in the output");

  // Along axis 0 an input is one run of the output: [12, 100] in 2 stretches (961 + 239), [3, 100]
  // whole from element 1200.
  Module rows = LowerToKernel(JoinDoc("concat", {{12, 100}, {3, 100}}, 0));
  t = PlanTiles(rows, OnlyOp(rows, "concat"), 4096);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->tiles.size(), 3u);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(961, 1200));
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[2]), Range(1200, 1500));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[2]), Range(0, 300));
}

// stack along axis 1 of three [10, 40] into [10, 3, 40]: input p's row r lands at 120 r + 40 p; r
// rows span 120 (r - 1) + 40 output elements, within 961 for r <= 8: 2 tiles per input.
TEST(TilePlanning, AStackIsCutPerInputAsAConcatOfLengthOne) {
  Module m = LowerToKernel(JoinDoc("stack", {{10, 40}, {10, 40}, {10, 40}}, 1));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "stack"), 4096);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->tiles.size(), 6u);
  EXPECT_EQ(t->tile_cols, 8);
  EXPECT_EQ(TileRange(t->space, 3, t->tiles[4]), Range(80, 80 + 7 * 120 + 40));
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[5]), Range(320, 400));
}

// concat along axis 1 of [20, 30], [20, 0] and [20, 70] into [20, 100]: the empty input moves
// nothing and has no box (its binding one element, which no tile reads). The first input takes
// 2 boxes of 10 rows as above; the third, from column 30, r rows spanning 100 (r - 1) + 70 output
// elements (r <= 9), 3 boxes. A stack's inputs share one shape: an empty one leaves nothing to
// copy, and nothing to tile.
TEST(TilePlanning, AnEmptyInputOfAConcatHasNoBox) {
  Module m = LowerToKernel(JoinDoc("concat", {{20, 30}, {20, 0}, {20, 70}}, 1));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "concat"), 4096);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->space.parts.size(), 2u);
  EXPECT_EQ(t->space.parts[1].copy_input, 2);
  EXPECT_EQ(t->space.parts[1].layouts,
            (std::vector<TileStrides>{{0, 0, 0}, {0, 0, 0}, {0, 70, 1}, {0, 100, 1}}));
  EXPECT_EQ(t->space.parts[1].origins, (std::vector<int64_t>{0, 0, 0, 30}));
  ASSERT_EQ(t->tiles.size(), 5u);
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[2]), Range(0, 1));
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[3]), Range(9 * 70, 18 * 70));
  EXPECT_EQ(TileRange(t->space, 3, t->tiles[4]), Range(18 * 100 + 30, 19 * 100 + 100));
  EXPECT_EQ(t->Describe(),
            "5 tiles, by input 2 + 0 + 3, each moving a box of one input's elements to its place "
            "in the output");

  Module stack = LowerToKernel(JoinDoc("stack", {{0, 40}, {0, 40}}, 0));
  EXPECT_FALSE(TileSpaceOf(stack, OnlyOp(stack, "stack")));
}

// x [0, 300] padded by 2 rows on either side into [4, 300]: only the value to write, over the
// output's 1200 elements in stretches of 961.
TEST(TilePlanning, APadOfAnEmptyInputOnlyWritesItsValue) {
  Module m = LowerToKernel(CopyDoc({0, 300}, {{"op", "pad"}, {"pads", {{2, 2}, {0, 0}}}}));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "pad"), 4096);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->space.parts.size(), 1u);
  ASSERT_EQ(t->tiles.size(), 2u);
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[1]), Range(961, 1200));
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(0, 1));
  EXPECT_EQ(t->Describe(), "2 tiles: writing the pad value over the output (the input is empty)");
}

// pad of x [30, 40] by rows (2, 3) and columns (5, 1) into [35, 46]: first the output's 1610
// elements written with the value in stretches of 961, then the input moved inside from output
// element 2 * 46 + 5 = 97, r rows of it spanning 46 (r - 1) + 40 output elements (r <= 21).
TEST(TilePlanning, APadWritesItsValueOverTheOutputThenMovesTheInputInside) {
  Module m =
      LowerToKernel(CopyDoc({30, 40}, {{"op", "pad"}, {"pads", {{2, 3}, {5, 1}}}, {"value", 1.5}}));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "pad"), 4096);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->space.parts.size(), 2u);
  EXPECT_EQ(t->space.parts[0].copy_input, -1);
  EXPECT_EQ(t->space.parts[1].layouts, (std::vector<TileStrides>{{0, 40, 1}, {0, 46, 1}}));
  EXPECT_EQ(t->space.parts[1].origins, (std::vector<int64_t>{0, 97}));
  ASSERT_EQ(t->tiles.size(), 4u);
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[1]), Range(961, 1610));
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(0, 1));
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[3]), Range(21 * 40, 30 * 40));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[3]), Range(97 + 21 * 46, 97 + 29 * 46 + 40));
  EXPECT_EQ(t->Describe(),
            "4 tiles: 2 writing the pad value over the output, then 2 moving boxes of the input "
            "to its place inside");
}

// x [40, 100] with its even rows replaced by s [20, 100]: first the base's 4000 elements copied in
// stretches of 961 (5 tiles), then s moved into rows 0, 2, ..., its row r at output element 200 r:
// r rows span 200 (r - 1) + 100 output elements (r <= 5), 4 boxes.
TEST(TilePlanning, ASliceScatterCopiesItsBaseThenMovesTheSourceIntoItsWindow) {
  Module m = LowerToKernel(ScatterDoc({40, 100}, {20, 100}, {0, 0}, {40, 100}, {2, 1}));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "slice_scatter"), 4096);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->space.parts.size(), 2u);
  EXPECT_EQ(t->space.parts[0].layouts, (std::vector<TileStrides>{{0, 0, 1}, {0, 0, 0}, {0, 0, 1}}));
  EXPECT_EQ(t->space.parts[1].layouts,
            (std::vector<TileStrides>{{0, 0, 0}, {0, 100, 1}, {0, 200, 1}}));
  ASSERT_EQ(t->tiles.size(), 9u);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[4]), Range(4 * 961, 4000));
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[4]), Range(4 * 961, 4000));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[4]), Range(0, 1));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[6]), Range(500, 1000));
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[6]), Range(1000, 1900));
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[6]), Range(0, 1));
  EXPECT_EQ(t->Describe(),
            "9 tiles: 5 copying the base to the output, then 4 moving boxes of the source into its "
            "strided window");

  // An empty source (rows 0 up to 0) replaces nothing: only the base is copied.
  Module empty = LowerToKernel(ScatterDoc({40, 100}, {0, 100}, {0, 0}, {0, 100}, {1, 1}));
  t = PlanTiles(empty, OnlyOp(empty, "slice_scatter"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Describe(), "5 tiles: copying the base to the output (the source is empty)");
}

// x [50, 40] with the slice from (44, 37) by steps (-2, -3) replaced by s [20, 12]: s (r, c) lands
// at output element 1797 - 80 r - 3 c, so the window's strides are negative. r rows of s span
// 80 (r - 1) + 34 output elements (r <= 12): 2 boxes after the base's 3; the first reaches from
// output element 1797 down to row 22's column 4.
TEST(TilePlanning, ASliceScatterWithNegativeStepsWritesItsWindowBackwards) {
  Module m = LowerToKernel(ScatterDoc({50, 40}, {20, 12}, {44, 37}, {4, 1}, {-2, -3}));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "slice_scatter"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->space.parts[1].layouts[2], (TileStrides{0, -80, -3}));
  EXPECT_EQ(t->space.parts[1].origins, (std::vector<int64_t>{0, 0, 1797}));
  ASSERT_EQ(t->tiles.size(), 5u);
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[3]), Range(22 * 40 + 4, 1798));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[3]), Range(0, 144));
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[4]), Range(6 * 40 + 4, 20 * 40 + 38));
}

}  // namespace
}  // namespace scellis::kernel
