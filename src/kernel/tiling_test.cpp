// Tile planning for kernels over the storage-binding cap (kernel/tiling.h): the fewest tiles whose
// every window, widened down to the offset alignment, fits the cap — worked out by hand below —
// and no tiling where none exists. The tiles' results are checked on WebGPU in
// runtime/backends/webgpu/tiling_test.cpp.
#include "kernel/tiling.h"

#include <gtest/gtest.h>

#include <tuple>

#include "support/graph.h"

namespace scellis::kernel {
namespace {

using scellis::testing::ProdOptions;

Module LowerToKernel(const Json& doc) {
  pipeline::CompileOptions o = ProdOptions();
  o.up_to = pipeline::Rung::kKernel;
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return std::move(*c->module);
}

std::pair<int64_t, int64_t> Range(int64_t first, int64_t last) {
  return {first, last};
}

const Kernel& OnlyOp(const Module& m, const std::string& op) {
  for (const Kernel& k : m.kernels)
    if (k.op == op) return k;
  ADD_FAILURE() << "no " << op << " kernel";
  return m.kernels.front();
}

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

Json CopyDoc(std::vector<int64_t> shape, Json op) {
  op["id"] = 1;
  op["a"] = 0;
  return {{"version", 4},
          {"nodes", {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", shape}}, op}},
          {"outputs", {{{"name", "y"}, {"id", 1}}}}};
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

// x [`base`] with the slice from `starts` to `stops` by `steps` replaced by s of `src`.
Json ScatterDoc(std::vector<int64_t> base, std::vector<int64_t> src, Json starts, Json stops,
                Json steps) {
  return {{"version", 4},
          {"nodes",
           {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", base}},
            {{"id", 1}, {"op", "input"}, {"name", "s"}, {"shape", src}},
            {{"id", 2},
             {"op", "slice_scatter"},
             {"a", 0},
             {"src", 1},
             {"starts", starts},
             {"stops", stops},
             {"steps", steps}}}},
          {"outputs", {{{"name", "y"}, {"id", 2}}}}};
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
