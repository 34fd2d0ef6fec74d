// Tile planning for kernels over the storage-binding cap (kernel/tiling.h): the fewest tiles whose
// every window, widened down to the offset alignment, fits the cap — worked out by hand below —
// and no tiling where none exists; here matmuls, rank 2 and batched. The tiles' results are
// checked on WebGPU in runtime/backends/webgpu/tiling_test.cpp.
#include <gtest/gtest.h>

#include "kernel/tiling.h"
#include "kernel/tiling_test.h"

namespace scellis::kernel {
namespace {

using testing::CopyDoc;
using testing::LowerToKernel;
using testing::OnlyOp;
using testing::Range;

Json Matmul(std::vector<int64_t> a, std::vector<int64_t> b, bool tb) {
  Json nodes = {{{"id", 0}, {"op", "input"}, {"name", "a"}, {"shape", a}},
                {{"id", 1}, {"op", "input"}, {"name", "b"}, {"shape", b}}};
  int ib = 1;
  if (tb) {
    nodes.push_back({{"id", 2}, {"op", "transpose"}, {"a", 1}});
    ib = 2;
  }
  nodes.push_back({{"id", 3}, {"op", "matmul"}, {"a", 0}, {"b", ib}});
  return {{"version", 2}, {"nodes", nodes}, {"outputs", {{{"name", "c"}, {"id", 3}}}}};
}

// A cap of 4096 B less the 252 B an aligned-down window may add leaves 961 floats per window.
// a [8, 200] @ b [200, 24]: b's window over d rows of K is 24 d floats, so d <= 40; a's over r rows
// is 200 (r - 1) + d, so r <= 5: 2 x 1 x 5 tiles.
TEST(TilePlanning, AMatmulIsCutAlongKWhereBsRowsDoNotFit) {
  Module m = LowerToKernel(Matmul({8, 200}, {200, 24}, false));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "matmul"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_rows, 5);
  EXPECT_EQ(t->tile_cols, 24);
  EXPECT_EQ(t->tile_depth, 40);
  ASSERT_EQ(t->tiles.size(), 10u);
  // Along K in increasing order, the first tile of each block starting afresh.
  EXPECT_FALSE(t->tiles[0].Continues());
  EXPECT_TRUE(t->tiles[1].Continues());
  EXPECT_EQ(t->tiles[4].depth0, 160);
  EXPECT_TRUE(t->tiles[4].Finishes(t->space));
  EXPECT_EQ(t->tiles[5].row0, 5);
  EXPECT_EQ(t->tiles[5].rows, 3);
  // The second row block's second K tile: a's rows 5..7 at K 40..79, b's rows 40..79.
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[6]), Range(5 * 200 + 40, 7 * 200 + 80));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[6]), Range(40 * 24, 80 * 24));
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[6]), Range(5 * 24, 8 * 24));
  EXPECT_EQ(t->Describe(),
            "10 tiles: 2 of 5 rows x 1 of 24 columns x 5 of 40 along K, each tile along K "
            "continuing the partial sums of the one before");
}

// b read transposed is stored [300, 48]: c output columns bind c of its rows, 48 c floats.
TEST(TilePlanning, AMatmulIsCutAlongNWhereBIsReadTransposed) {
  Module m = LowerToKernel(Matmul({2, 48}, {300, 48}, true));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "matmul"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_cols, 20);
  EXPECT_EQ(t->tile_depth, 48);
  EXPECT_EQ(t->tiles.size(), 15u);
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[2]), Range(40 * 48, 60 * 48));
  // Under the cap, one tile covers everything.
  std::optional<Tiling> whole = PlanTiles(m, OnlyOp(m, "matmul"), 1 << 20);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->tiles.size(), 1u);
}

// Batched: a [20, 4, 10] @ b [20, 10, 8]: a product of b is 80 floats, so 12 whole products fit
// in 961 (b's window is 80 n floats, a's 40 n, the output's 32 n): 2 tiles, the second of 8.
TEST(TilePlanning, ABatchedMatmulTakesWholeProductsPerTile) {
  Module m = LowerToKernel(Matmul({20, 4, 10}, {20, 10, 8}, false));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "matmul"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_batches, 12);
  ASSERT_EQ(t->tiles.size(), 2u);
  EXPECT_EQ(t->tiles[1].batch0, 12);
  EXPECT_EQ(t->tiles[1].batch_count, 8);
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(12 * 40, 20 * 40));
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[1]), Range(12 * 80, 20 * 80));
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[1]), Range(12 * 32, 20 * 32));
  EXPECT_EQ(t->Describe(), "2 tiles of 12 of the batch's 20 products, each whole");

  // b [10, 8] broadcast over a [30, 4, 10]'s batch: every tile binds the one b; a's 40 floats per
  // product allow 24.
  Module shared = LowerToKernel(Matmul({30, 4, 10}, {10, 8}, false));
  t = PlanTiles(shared, OnlyOp(shared, "matmul"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_batches, 24);
  ASSERT_EQ(t->tiles.size(), 2u);
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[1]), Range(0, 80));
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[1]), Range(24 * 40, 30 * 40));
}

// a [2, 1, 4, 10] @ b [3, 10, 40] -> [2, 3, 4, 40]: b's products (400 floats) go 0, 400, 800, 0,
// 400, 800 along the batch, so the pair (2, 3) would bind all of b (1200 floats, over 961): one
// product per tile.
TEST(TilePlanning, ABroadcastBatchIsCutWhereEveryTilesWindowsFit) {
  Module m = LowerToKernel(Matmul({2, 1, 4, 10}, {3, 10, 40}, false));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "matmul"), 4096);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tile_batches, 1);
  ASSERT_EQ(t->tiles.size(), 6u);
  EXPECT_EQ(TileRange(t->space, 1, t->tiles[3]), Range(0, 400));
  EXPECT_EQ(TileRange(t->space, 0, t->tiles[3]), Range(40, 80));
  EXPECT_EQ(TileRange(t->space, 2, t->tiles[3]), Range(3 * 160, 4 * 160));
  // Two products at a time would fit from the first place but not from the second.
  Tile pair{0, 4, 0, 40, 0, 10, 2, 2};
  EXPECT_EQ(TileRange(t->space, 1, pair), Range(0, 1200));
}

// When one product is over the cap, each is cut as a rank-2 matmul: a [2, 8, 200] @ b [2, 200, 24]
// is the first test's product twice, 10 tiles each, the second's windows the first's moved by a
// product.
TEST(TilePlanning, ABatchedMatmulWhoseProductIsOverTheCapCutsEachProduct) {
  Module m = LowerToKernel(Matmul({2, 8, 200}, {2, 200, 24}, false));
  std::optional<Tiling> t = PlanTiles(m, OnlyOp(m, "matmul"), 4096);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->tiles.size(), 20u);
  const Tile& second = t->tiles[10 + 6];
  EXPECT_EQ(second.batch0, 1);
  EXPECT_TRUE(second.Continues());
  EXPECT_EQ(TileRange(t->space, 0, second), Range(1600 + 5 * 200 + 40, 1600 + 7 * 200 + 80));
  EXPECT_EQ(TileRange(t->space, 1, second), Range(4800 + 40 * 24, 4800 + 80 * 24));
  EXPECT_EQ(TileRange(t->space, 2, second), Range(192 + 5 * 24, 192 + 8 * 24));
  EXPECT_EQ(t->Describe(),
            "20 tiles: each of the batch's 2 products in 10: 2 of 5 rows x 1 of 24 columns x 5 "
            "of 40 along K, each tile along K continuing the partial sums of the one before");
}

TEST(TilePlanning, NoTilesWhereNoneFitsOrTheKernelHasNoTileSpace) {
  // A cap under the alignment slack plus one element fits nothing.
  Module m = LowerToKernel(Matmul({8, 200}, {200, 24}, false));
  EXPECT_FALSE(PlanTiles(m, OnlyOp(m, "matmul"), 252));
  EXPECT_TRUE(PlanTiles(m, OnlyOp(m, "matmul"), 256));  // one element per window
  // A transpose of [300, 300] under a cap of one element per window: 90000 boxes, more than a
  // copy is cut into.
  Module transpose = LowerToKernel(CopyDoc({300, 300}, {{"op", "transpose"}}));
  EXPECT_TRUE(TileSpaceOf(transpose, OnlyOp(transpose, "transpose")));
  EXPECT_FALSE(PlanTiles(transpose, OnlyOp(transpose, "transpose"), 256));
  EXPECT_TRUE(PlanTiles(transpose, OnlyOp(transpose, "transpose"), 4096));
}

}  // namespace
}  // namespace scellis::kernel
