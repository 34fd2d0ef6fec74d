// Tiles over the storage-binding cap for layout copies (kernel::CopyTileSpace, JoinTileSpace,
// PadTileSpace, ScatterTileSpace): a transpose, a permute of the last two axes of a batch, slices
// with steps (negative ones too), flips, a reshape, concats (one with an empty input), a stack,
// pads (one of an empty input), slice_scatters (negative steps too), and permutes and a flip of
// four axes that do not merge into three (a batch of boxes), each cut into boxes of its output
// whose windows of input and output both fit. A copy moves elements without arithmetic: the untiled
// kernel's and the reference's bits, and each element where the index arithmetic worked out here
// puts it. The device is opened with a 4 KiB cap so that small tensors exercise the tiles.
#include "kernel/tiling_test.h"
#include "runtime/backends/webgpu/tiling_support_test.h"

namespace scellis::runtime::webgpu {
namespace {

using namespace tiling_support;
using kernel::testing::CopyDoc;
using kernel::testing::ScatterDoc;

std::vector<float> RunCopy(const std::vector<int64_t>& shape, const Json& op,
                           const std::vector<float>& x, const std::string& tiling, int dispatches) {
  return RunTiled(CopyDoc(shape, op), {{"x", HostTensor::FromFloats(MakeType(shape), x)}}, tiling,
                  dispatches, true);
}

// x [40, 100] (16000 B) transposed: the input's window of a box of 24 output rows x d output
// columns spans 100 (d - 1) + 24 elements, the output's 40 * 23 + d, within 961 for d <= 10:
// 5 x 4 boxes, after 4 poison fills of the output.
TEST(TilingLayout, ATransposeOverTheCapRunsInBoxesWhoseWindowsBothFit) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 40 * 100);
  std::vector<float> got = RunCopy({40, 100}, {{"op", "transpose"}}, x,
                                   "20 tiles of 1 x 24 x 10 of the output's 1 x 100 x 40", 4 + 20);
  ASSERT_EQ(got.size(), x.size());
  for (int r = 0; r < 100; ++r)
    for (int c = 0; c < 40; ++c) ASSERT_EQ(got[r * 40 + c], x[c * 100 + r]) << r << "," << c;
}

// x [3, 20, 30] (7200 B) with its last two axes swapped: the batch is the box's first axis. One
// product spans 600 elements of input and of output, two 1200, over 961: 3 tiles of one product
// each, after 2 poison fills of the output.
TEST(TilingLayout, ABatchedTransposeOverTheCapRunsInBoxesOfTheBatch) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 3 * 20 * 30);
  std::vector<float> got = RunCopy({3, 20, 30}, {{"op", "permute"}, {"dims", {0, 2, 1}}}, x,
                                   "3 tiles of 1 x 30 x 20 of the output's 3 x 30 x 20", 2 + 3);
  ASSERT_EQ(got.size(), x.size());
  for (int p = 0; p < 3; ++p)
    for (int r = 0; r < 30; ++r)
      for (int c = 0; c < 20; ++c)
        ASSERT_EQ(got[(p * 30 + r) * 20 + c], x[(p * 20 + c) * 30 + r])
            << p << "," << r << "," << c;
}

// x [50, 40] (8000 B) sliced from (5, 2) by steps (2, 3): the output [20, 12] (960 B) fits, the
// input does not. A box of c output rows spans 80 (c - 1) + 3 * 11 + 1 input elements, within 961
// for c <= 12: 2 tiles after one poison fill; the first box's window starts at the slice's start.
TEST(TilingLayout, ASliceOfAnInputOverTheCapRunsInBoxesFromTheSlicesStart) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 50 * 40);
  std::vector<float> got = RunCopy(
      {50, 40}, {{"op", "slice"}, {"starts", {5, 2}}, {"stops", {45, 38}}, {"steps", {2, 3}}}, x,
      "2 tiles of 1 x 12 x 12 of the output's 1 x 20 x 12", 1 + 2);
  ASSERT_EQ(got.size(), 20u * 12u);
  for (int r = 0; r < 20; ++r)
    for (int c = 0; c < 12; ++c)
      ASSERT_EQ(got[r * 12 + c], x[(5 + 2 * r) * 40 + 2 + 3 * c]) << r << "," << c;
}

// x [3000] (12000 B) reshaped to [30, 100]: one axis of every element, in tiles of 961 elements
// (4096 B less the 252 B an aligned-down window may add), 4 of them after 3 poison fills of the
// output.
TEST(TilingLayout, AReshapeOverTheCapRunsInTilesOfItsElements) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 3000);
  std::vector<float> got = RunCopy({3000}, {{"op", "reshape"}, {"shape", {30, 100}}}, x,
                                   "4 tiles of 1 x 1 x 961 of the output's 1 x 1 x 3000", 3 + 4);
  ASSERT_EQ(got.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], x[i]) << i;
}

// x [40, 100] (16000 B) flipped along its last axis: boxes of 9 rows x 100, whose input windows
// run backwards from each row's last element; 5 tiles after 4 poison fills.
TEST(TilingLayout, AFlipOverTheCapRunsInBoxesReadingItsInputBackwards) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 40 * 100);
  std::vector<float> got = RunCopy({40, 100}, {{"op", "flip"}, {"axes", {1}}}, x,
                                   "5 tiles of 1 x 9 x 100 of the output's 1 x 40 x 100", 4 + 5);
  ASSERT_EQ(got.size(), x.size());
  for (int r = 0; r < 40; ++r)
    for (int c = 0; c < 100; ++c) ASSERT_EQ(got[r * 100 + c], x[r * 100 + 99 - c]) << r << "," << c;
}

// x [6, 10, 30] (7200 B) flipped along axes 0 and 2: the input's strides (-300, 10, -1) mix
// directions. A box of r x 10 x 30 spans 300 (r - 1) + 300 elements of either operand, within 961
// for r <= 3: 2 tiles after 2 poison fills.
TEST(TilingLayout, AFlipOfTwoAxesOverTheCapRunsInBoxesOfMixedDirections) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 6 * 10 * 30);
  std::vector<float> got = RunCopy({6, 10, 30}, {{"op", "flip"}, {"axes", {0, 2}}}, x,
                                   "2 tiles of 3 x 10 x 30 of the output's 6 x 10 x 30", 2 + 2);
  ASSERT_EQ(got.size(), x.size());
  for (int p = 0; p < 6; ++p)
    for (int r = 0; r < 10; ++r)
      for (int c = 0; c < 30; ++c)
        ASSERT_EQ(got[(p * 10 + r) * 30 + c], x[((5 - p) * 10 + r) * 30 + 29 - c])
            << p << "," << r << "," << c;
}

// x [50, 40] (8000 B) sliced from (44, 37) by steps (-2, -3): output (r, c) reads row 44 - 2 r,
// column 37 - 3 c, [20, 12]. A box of c output rows spans 80 (c - 1) + 34 input elements, within
// 961 for c <= 12: 2 tiles after one poison fill, each window below the box's first element.
TEST(TilingLayout, ASliceWithNegativeStepsOverTheCapRunsInBoxesReadingBackwards) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 50 * 40);
  std::vector<float> got = RunCopy(
      {50, 40}, {{"op", "slice"}, {"starts", {44, 37}}, {"stops", {4, 1}}, {"steps", {-2, -3}}}, x,
      "2 tiles of 1 x 12 x 12 of the output's 1 x 20 x 12", 1 + 2);
  ASSERT_EQ(got.size(), 20u * 12u);
  for (int r = 0; r < 20; ++r)
    for (int c = 0; c < 12; ++c)
      ASSERT_EQ(got[r * 12 + c], x[(44 - 2 * r) * 40 + 37 - 3 * c]) << r << "," << c;
}

// A concat or stack of inputs of `shapes` along `axis`, each fed seeded random values.
std::vector<float> RunJoin(const std::string& op, const std::vector<std::vector<int64_t>>& shapes,
                           int axis, const std::vector<std::vector<float>>& x,
                           const std::string& tiling, int dispatches) {
  Json nodes = Json::array(), inputs = Json::array();
  Feeds feeds;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string name = "x" + std::to_string(i);
    nodes.push_back({{"id", i}, {"op", "input"}, {"name", name}, {"shape", shapes[i]}});
    inputs.push_back(i);
    feeds.emplace(name, HostTensor::FromFloats(MakeType(shapes[i]), x[i]));
  }
  nodes.push_back({{"id", shapes.size()}, {"op", op}, {"inputs", inputs}, {"axis", axis}});
  const Json doc = {
      {"version", 4}, {"nodes", nodes}, {"outputs", {{{"name", "y"}, {"id", shapes.size()}}}}};
  return RunTiled(doc, feeds, tiling, dispatches, true);
}

// [20, 30], [20, 50] and [20, 20] joined along axis 1 into [20, 100] (8000 B): each input in 2
// boxes of 10 rows (the middle one's output window spans 100 * 9 + 50 elements), 6 tiles after 2
// poison fills; output (r, c) is the input whose columns hold c, at its column c - offset.
TEST(TilingLayout, AConcatOverTheCapRunsInBoxesOfOneInputEach) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<int64_t> widths = {30, 50, 20};
  std::vector<std::vector<float>> x;
  for (int64_t w : widths) x.push_back(Random(rng, static_cast<size_t>(20 * w)));
  std::vector<float> got =
      RunJoin("concat", {{20, 30}, {20, 50}, {20, 20}}, 1, x, "6 tiles, by input 2 + 2 + 2", 2 + 6);
  ASSERT_EQ(got.size(), 2000u);
  for (int r = 0; r < 20; ++r)
    for (int c = 0; c < 100; ++c) {
      const int p = c < 30 ? 0 : c < 80 ? 1 : 2;
      const int offset = p == 0 ? 0 : p == 1 ? 30 : 80;
      ASSERT_EQ(got[r * 100 + c], x[p][r * widths[p] + c - offset]) << r << "," << c;
    }
}

// Three [10, 40] stacked along axis 1 into [10, 3, 40] (4800 B): each input in 2 boxes of at most
// 8 rows, 6 tiles after 2 poison fills; output (r, p, c) is input p's (r, c). Then [12, 100] and
// [3, 100] joined along axis 0 (6000 B): the first input in 2 stretches, the second whole, 3 tiles.
TEST(TilingLayout, AStackAndARowConcatOverTheCapRunInBoxesOfOneInputEach) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::vector<std::vector<float>> x = {Random(rng, 400), Random(rng, 400), Random(rng, 400)};
  std::vector<float> got =
      RunJoin("stack", {{10, 40}, {10, 40}, {10, 40}}, 1, x, "6 tiles, by input 2 + 2 + 2", 2 + 6);
  ASSERT_EQ(got.size(), 1200u);
  for (int r = 0; r < 10; ++r)
    for (int p = 0; p < 3; ++p)
      for (int c = 0; c < 40; ++c)
        ASSERT_EQ(got[(r * 3 + p) * 40 + c], x[p][r * 40 + c]) << r << "," << p << "," << c;

  x = {Random(rng, 1200), Random(rng, 300)};
  got = RunJoin("concat", {{12, 100}, {3, 100}}, 0, x, "3 tiles, by input 2 + 1", 2 + 3);
  ASSERT_EQ(got.size(), 1500u);
  for (int i = 0; i < 1500; ++i) ASSERT_EQ(got[i], i < 1200 ? x[0][i] : x[1][i - 1200]) << i;
}

// [20, 30], [20, 0] and [20, 70] joined along axis 1 into [20, 100] (8000 B): the empty input
// has no box; the first input in 2 boxes, the third in 3, 5 tiles after 2 poison fills.
TEST(TilingLayout, AConcatWithAnEmptyInputOverTheCapRunsInBoxesOfTheOthers) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::vector<std::vector<float>> x = {Random(rng, 20 * 30), {}, Random(rng, 20 * 70)};
  std::vector<float> got =
      RunJoin("concat", {{20, 30}, {20, 0}, {20, 70}}, 1, x, "5 tiles, by input 2 + 0 + 3", 2 + 5);
  ASSERT_EQ(got.size(), 2000u);
  for (int r = 0; r < 20; ++r)
    for (int c = 0; c < 100; ++c)
      ASSERT_EQ(got[r * 100 + c], c < 30 ? x[0][r * 30 + c] : x[2][r * 70 + c - 30])
          << r << "," << c;
}

// x [30, 40] padded by rows (2, 3) and columns (5, 1) with 1.5 into [35, 46] (6440 B): the value
// over the whole output in 2 tiles, then the input inside in 2 boxes of at most 21 rows, after 2
// poison fills; output (r, c) is x (r - 2, c - 5) inside, 1.5 around.
TEST(TilingLayout, APadOverTheCapWritesItsValueThenMovesTheInputInside) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 30 * 40);
  std::vector<float> got =
      RunCopy({30, 40}, {{"op", "pad"}, {"pads", {{2, 3}, {5, 1}}}, {"value", 1.5}}, x,
              "4 tiles: 2 writing the pad value over the output, then 2 moving boxes", 2 + 4);
  ASSERT_EQ(got.size(), 35u * 46u);
  for (int r = 0; r < 35; ++r)
    for (int c = 0; c < 46; ++c) {
      const bool inside = r >= 2 && r < 32 && c >= 5 && c < 45;
      ASSERT_EQ(got[r * 46 + c], inside ? x[(r - 2) * 40 + c - 5] : 1.5f) << r << "," << c;
    }
}

// x [0, 300] padded by 2 rows on either side with -3 into [4, 300] (4800 B): the value written
// over the output in 2 tiles after 2 poison fills, nothing moved.
TEST(TilingLayout, APadOfAnEmptyInputOverTheCapOnlyWritesItsValue) {
  std::vector<float> got =
      RunCopy({0, 300}, {{"op", "pad"}, {"pads", {{2, 2}, {0, 0}}}, {"value", -3}}, {},
              "2 tiles: writing the pad value over the output", 2 + 2);
  ASSERT_EQ(got.size(), 1200u);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], -3.0f) << i;
}

// x [`base`] with the slice from `starts` to `stops` by `steps` replaced by s [`src`], each fed
// seeded random values.
std::vector<float> RunScatter(const std::vector<int64_t>& base, const std::vector<int64_t>& src,
                              const Json& starts, const Json& stops, const Json& steps,
                              const std::vector<float>& x, const std::vector<float>& s,
                              const std::string& tiling, int dispatches) {
  const Json doc = ScatterDoc(base, src, starts, stops, steps);
  return RunTiled(doc,
                  {{"x", HostTensor::FromFloats(MakeType(base), x)},
                   {"s", HostTensor::FromFloats(MakeType(src), s)}},
                  tiling, dispatches, true);
}

// x [40, 100] (16000 B) with its even rows replaced by s [20, 100]: the base copied in 5 tiles,
// then s in 4 boxes of at most 5 rows, after 4 poison fills; output (r, c) is s (r / 2, c) on an
// even row, x (r, c) on an odd one.
TEST(TilingLayout, ASliceScatterOverTheCapCopiesItsBaseThenMovesTheSourceIn) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 40 * 100), s = Random(rng, 20 * 100);
  std::vector<float> got =
      RunScatter({40, 100}, {20, 100}, {0, 0}, {40, 100}, {2, 1}, x, s,
                 "9 tiles: 5 copying the base to the output, then 4 moving boxes", 4 + 9);
  ASSERT_EQ(got.size(), 4000u);
  for (int r = 0; r < 40; ++r)
    for (int c = 0; c < 100; ++c)
      ASSERT_EQ(got[r * 100 + c], r % 2 == 0 ? s[r / 2 * 100 + c] : x[r * 100 + c])
          << r << "," << c;
}

// x [50, 40] (8000 B) with the slice from (44, 37) by steps (-2, -3) replaced by s [20, 12]: the
// base in 3 tiles, then s in 2 boxes whose output windows run backwards, after 2 poison fills;
// output (r, c) is s ((44 - r) / 2, (37 - c) / 3) where both divide and lie in range.
TEST(TilingLayout, ASliceScatterWithNegativeStepsOverTheCapWritesItsWindowBackwards) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 50 * 40), s = Random(rng, 20 * 12);
  std::vector<float> got =
      RunScatter({50, 40}, {20, 12}, {44, 37}, {4, 1}, {-2, -3}, x, s,
                 "5 tiles: 3 copying the base to the output, then 2 moving boxes", 2 + 5);
  ASSERT_EQ(got.size(), 2000u);
  for (int r = 0; r < 50; ++r)
    for (int c = 0; c < 40; ++c) {
      const bool on_row = r <= 44 && (44 - r) % 2 == 0 && (44 - r) / 2 < 20;
      const bool on_col = c <= 37 && (37 - c) % 3 == 0 && (37 - c) / 3 < 12;
      ASSERT_EQ(got[r * 40 + c],
                on_row && on_col ? s[(44 - r) / 2 * 12 + (37 - c) / 3] : x[r * 40 + c])
          << r << "," << c;
    }
}

// x [4, 6, 10, 8] (7680 B) with its axes 1 and 2 swapped: a batch of 4 boxes of 10 x 6 x 8, 2
// whole boxes per tile, 2 tiles after 2 poison fills.
TEST(TilingLayout, APermuteOfFourAxesOverTheCapRunsInWholeBoxesOfTheBatch) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 4 * 6 * 10 * 8);
  std::vector<float> got = RunCopy({4, 6, 10, 8}, {{"op", "permute"}, {"dims", {0, 2, 1, 3}}}, x,
                                   "2 tiles of 2 of the output's 4 boxes of 10 x 6 x 8", 2 + 2);
  ASSERT_EQ(got.size(), x.size());
  for (int b = 0; b < 4; ++b)
    for (int s = 0; s < 10; ++s)
      for (int h = 0; h < 6; ++h)
        for (int d = 0; d < 8; ++d)
          ASSERT_EQ(got[((b * 10 + s) * 6 + h) * 8 + d], x[((b * 6 + h) * 10 + s) * 8 + d])
              << b << "," << s << "," << h << "," << d;
}

// x [4, 5, 6, 10] (4800 B) flipped along axes 0 and 2: a batch of 4 boxes whose input starts
// fall with the box (950, 650, ...), 3 boxes in the first tile, found from the tile's first box
// through the batch's stride, the last box alone in the second; 2 tiles after 2 poison fills.
TEST(TilingLayout, AFlipOfFourAxesOverTheCapRunsInBoxesOfABatchRunningBackwards) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 4 * 5 * 6 * 10);
  std::vector<float> got = RunCopy({4, 5, 6, 10}, {{"op", "flip"}, {"axes", {0, 2}}}, x,
                                   "2 tiles of 3 of the output's 4 boxes of 5 x 6 x 10", 2 + 2);
  ASSERT_EQ(got.size(), x.size());
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 6; ++k)
        for (int l = 0; l < 10; ++l)
          ASSERT_EQ(got[((i * 5 + j) * 6 + k) * 10 + l],
                    x[(((3 - i) * 5 + j) * 6 + 5 - k) * 10 + l])
              << i << "," << j << "," << k << "," << l;
}

// x [2, 3, 40, 20] (19200 B) with its axes 1 and 2 swapped: a batch of 2 boxes of 40 x 3 x 20,
// each over the cap and cut into 9 boxes of 16 x 1 x 20; 18 tiles after 5 poison fills.
TEST(TilingLayout, APermuteWhoseBoxesAreOverTheCapCutsEachBox) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 2 * 3 * 40 * 20);
  std::vector<float> got = RunCopy({2, 3, 40, 20}, {{"op", "permute"}, {"dims", {0, 2, 1, 3}}}, x,
                                   "18 tiles: each of the output's 2 boxes of 40 x 3 x 20", 5 + 18);
  ASSERT_EQ(got.size(), x.size());
  for (int b = 0; b < 2; ++b)
    for (int s = 0; s < 40; ++s)
      for (int h = 0; h < 3; ++h)
        for (int d = 0; d < 20; ++d)
          ASSERT_EQ(got[((b * 40 + s) * 3 + h) * 20 + d], x[((b * 3 + h) * 40 + s) * 20 + d])
              << b << "," << s << "," << h << "," << d;
}

}  // namespace
}  // namespace scellis::runtime::webgpu
