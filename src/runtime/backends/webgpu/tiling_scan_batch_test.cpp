// Tiles over the storage-binding cap for batched matmuls (whole products per tile, or each product
// cut as a rank-2 one), running sums (carried along the axis from the sum before each tile), cross
// entropy (whole rows, the tree's lanes handed on) and softmax rows over the cap (cut along
// themselves, three passes): in debug the untiled kernel's bits, the reference's where the GPU's
// exp and log are not involved, and float64's values within rounding. The device is opened with a
// 4 KiB cap so that small tensors exercise the tiles.
#include "runtime/backends/webgpu/tiling_support_test.h"
#include "runtime/device_program.h"

namespace scellis::runtime::webgpu {
namespace {

using namespace tiling_support;

// Each product of a batched C = A B in float64 (ExpectNearFloat64Product's bound), A's and B's
// product for output product p given by `a_of` and `b_of` (their broadcast).
void ExpectNearFloat64Batch(const std::vector<float>& got, int64_t batches, int64_t m, int64_t n,
                            int64_t k, const std::vector<float>& a, const std::vector<float>& b,
                            const std::function<int64_t(int64_t)>& a_of,
                            const std::function<int64_t(int64_t)>& b_of) {
  ASSERT_EQ(got.size(), static_cast<size_t>(batches * m * n));
  for (int64_t p = 0; p < batches; ++p) {
    SCOPED_TRACE("product " + std::to_string(p));
    const float* pa = a.data() + a_of(p) * m * k;
    const float* pb = b.data() + b_of(p) * k * n;
    ExpectNearFloat64Product(
        std::vector<float>(got.begin() + p * m * n, got.begin() + (p + 1) * m * n), m, n, k,
        [&](int64_t r, int64_t kk) { return pa[r * k + kk]; },
        [&](int64_t kk, int64_t c) { return pb[kk * n + c]; });
  }
}

// a [30, 4, 10] (4800 B) @ w [10, 8] shared by every product: 24 whole products of a (3840 B) per
// tile, w bound whole in each: 2 tiles after one poison fill of the output (3840 B).
TEST(Tiling, ABatchedMatmulOverTheCapRunsInTilesOfWholeProducts) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> a = Random(rng, 30 * 4 * 10), w = Random(rng, 10 * 8);
  Json doc = MatmulDoc({30, 4, 10}, {10, 8}, false, false, w);
  doc["version"] = 2;
  std::vector<float> got =
      RunTiled(doc, {{"a", HostTensor::FromFloats(MakeType({30, 4, 10}), a)}},
               "2 tiles of 24 of the batch's 30 products, each whole", 1 + 2, true);
  ExpectNearFloat64Batch(
      got, 30, 4, 8, 10, a, w, [](int64_t p) { return p; }, [](int64_t) { return 0; });
}

// a [2, 1, 4, 10] @ w [3, 10, 40] (4800 B) -> [2, 3, 4, 40]: w's products come 0, 1, 2, 0, 1, 2
// along the batch, so two in a row may need all of w: one product per tile, 6 tiles, each
// starting its operands from the product's place in the whole batch.
TEST(Tiling, ABatchedMatmulWithABroadcastBatchRunsInTilesOfOneProduct) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> a = Random(rng, 2 * 4 * 10), w = Random(rng, 3 * 10 * 40);
  Json doc = MatmulDoc({2, 1, 4, 10}, {3, 10, 40}, false, false, w);
  doc["version"] = 2;
  std::vector<float> got =
      RunTiled(doc, {{"a", HostTensor::FromFloats(MakeType({2, 1, 4, 10}), a)}},
               "6 tiles of 1 of the batch's 6 products, each whole", 1 + 6, true);
  ExpectNearFloat64Batch(
      got, 6, 4, 40, 10, a, w, [](int64_t p) { return p / 3; }, [](int64_t p) { return p % 3; });
}

// a [2, 16, 120] @ w [2, 120, 24]: one product's w (11520 B) is over the cap, so each product is
// cut as the rank-2 one above is (2 x 3 tiles along K), 12 tiles, in every schedule kind.
TEST(Tiling, ABatchedMatmulWhoseProductIsOverTheCapCutsEachProductAlongK) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> a = Random(rng, 2 * 16 * 120), w = Random(rng, 2 * 120 * 24);
  Json doc = MatmulDoc({2, 16, 120}, {2, 120, 24}, false, false, w);
  doc["version"] = 2;
  const Feeds feeds = {{"a", HostTensor::FromFloats(MakeType({2, 16, 120}), a)}};
  kernel::MatmulSchedule blocked{.tile_m = 32,
                                 .tile_n = 32,
                                 .tile_k = 8,
                                 .block_m = 4,
                                 .block_n = 4,
                                 .vec4_a = true,
                                 .vec4_b = true};
  kernel::MatmulSchedule per_element{.kind = kernel::MatmulSchedule::Kind::kPerElement};
  for (const std::optional<kernel::MatmulSchedule>& sch :
       {std::optional<kernel::MatmulSchedule>(), std::optional(blocked),
        std::optional(per_element)}) {
    SCOPED_TRACE(sch ? sch->Name() : "chosen schedule");
    // The output (3072 B) is poisoned in one window.
    std::vector<float> got =
        RunTiled(doc, feeds,
                 "12 tiles: each of the batch's 2 products in 6: 2 of 8 rows x 1 of 24 columns x "
                 "3 of 40 along K, each tile along K",
                 1 + 12, true, sch);
    ExpectNearFloat64Batch(
        got, 2, 16, 24, 120, a, w, [](int64_t p) { return p; }, [](int64_t p) { return p; });
  }
}

// The tiles of one product of a batch carry its start in their offsets, so where the products'
// windows sit alike (here every product is a whole number of 256-byte blocks) the second
// product's tiles take the first's pipelines: 12 dispatches, no more pipelines than 6.
TEST(Tiling, TheProductsOfABatchShareTheirTilesPipelines) {
  auto gpu = SmallCapGpu();
  ASSERT_NE(gpu, nullptr);
  Json doc =
      MatmulDoc({2, 16, 120}, {2, 120, 24}, false, false, std::vector<float>(2 * 120 * 24, 0.5f));
  doc["version"] = 2;
  auto c = Compile(doc, *gpu, policy::Tier::kDebug);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  ProgramLimits limits;
  limits.max_storage_buffer_binding_size = kCap;
  limits.min_storage_buffer_offset_alignment = 256;
  auto p = BuildDeviceProgram(*c->plan, {}, limits);
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  std::vector<const ProgramDispatch*> tiles;
  for (const ProgramDispatch& d : p->dispatches)
    if (d.tile_count >= 0 && d.kernel.find("matmul") != std::string::npos) tiles.push_back(&d);
  ASSERT_EQ(tiles.size(), 12u);
  for (size_t t = 0; t < 6; ++t) {
    EXPECT_EQ(tiles[t + 6]->pipeline, tiles[t]->pipeline) << t;
    // The second product's windows: the first's moved by a product of each operand.
    EXPECT_EQ(tiles[t + 6]->bindings[0].offset, tiles[t]->bindings[0].offset + 16 * 120 * 4);
    EXPECT_EQ(tiles[t + 6]->bindings[1].offset, tiles[t]->bindings[1].offset + 120 * 24 * 4);
    EXPECT_EQ(tiles[t + 6]->bindings[2].offset, tiles[t]->bindings[2].offset + 16 * 24 * 4);
  }
}

// cumsum of x [4, 700, 3] along axis 1 (33600 B): each tile takes one outer row's 3 lines for 319
// steps of the axis (its output window also takes the sums one step before, which it continues
// from): 4 x 3 tiles, after the output's poison fills in 9 windows. Each line adds in index order
// as the untiled kernel and the reference do: their bits, and float64's values within rounding.
TEST(Tiling, ACumsumOverTheCapRunsInTilesCarryingTheRunningSums) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 4 * 700 * 3);
  Json doc = ReduceDoc("cumsum", {4, 700, 3}, 1);
  doc["version"] = 5;
  std::vector<float> got =
      RunTiled(doc, {{"x", HostTensor::FromFloats(MakeType({4, 700, 3}), x)}},
               "12 tiles: 4 of 1 outer rows x 1 of 3 inner columns x 3 of 319 along the axis, "
               "each tile along the axis continuing the running sums",
               9 + 12, true);
  ASSERT_EQ(got.size(), x.size());
  for (int o = 0; o < 4; ++o)
    for (int c = 0; c < 3; ++c) {
      double sum = 0, magnitude = 0;
      for (int j = 0; j < 700; ++j) {
        const int64_t at = (o * 700 + j) * 3 + c;
        sum += x[at];
        magnitude += std::fabs(x[at]);
        ASSERT_NEAR(got[at], sum, 2.0 * (j + 1) * std::ldexp(magnitude, -24)) << o << "," << j;
      }
    }
}

// cross_entropy of logits [1000, 3] (12000 B) with labels [1000]: tiles of 256 whole rows (3072
// B of logits), 4 tiles after the loss's poison fill; the tree's 256 lanes add their rows' losses
// across tiles in a scratch buffer, the last tile combines them: the untiled kernel's bits. The
// GPU's exp and log are not the reference's own, so the reference and float64 are within rounding.
TEST(Tiling, CrossEntropyOverTheCapRunsInTilesOfRowsCarryingTheTreesLanes) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 1000 * 3);
  std::vector<float> labels(1000);
  for (float& l : labels) l = static_cast<float>(rng() % 3);
  const Json doc = {{"version", 2},
                    {"nodes",
                     {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {1000, 3}}},
                      {{"id", 1}, {"op", "input"}, {"shape", {1000}}, {"data", labels}},
                      {{"id", 2}, {"op", "cross_entropy"}, {"a", 0}, {"target", 1}}}},
                    {"outputs", {{{"name", "loss"}, {"id", 2}}}}};
  std::vector<float> got = RunTiled(doc, {{"x", HostTensor::FromFloats(MakeType({1000, 3}), x)}},
                                    "4 tiles of 256 rows, the 256 lanes' partial sums of row "
                                    "losses carried",
                                    1 + 4, false);
  ASSERT_EQ(got.size(), 1u);
  double loss = 0;
  for (int r = 0; r < 1000; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < 3; ++j) mx = std::max<double>(mx, x[r * 3 + j]);
    for (int j = 0; j < 3; ++j) sum += std::exp(double{x[r * 3 + j]} - mx);
    loss += -(double{x[r * 3 + static_cast<int>(labels[r])]} - mx - std::log(sum));
  }
  EXPECT_NEAR(got[0], loss / 1000, 1e-5 * std::max(1.0, std::fabs(loss / 1000)));
}

// softmax and log_softmax of x [2, 1000]: a row (4000 B) is over the cap, so each is cut along
// itself into 2 stretches visited in 3 passes (maximum, sum of exp, writes), 12 tiles after the
// output's poison fills in 2 windows. Row 1 holds a NaN in its second stretch: the NaN flag the
// first pass carries makes the whole row NaN, as untiled. The untiled kernel's bits; float64's
// values within rounding (the GPU's exp is not the reference's).
TEST(Tiling, ASoftmaxRowOverTheCapRunsInThreePassesAlongTheRow) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::vector<float> x = Random(rng, 2 * 1000);
  x[1000 + 990] = std::nanf("");
  for (const char* op : {"softmax", "log_softmax"}) {
    SCOPED_TRACE(op);
    const Json doc = {{"version", 2},
                      {"nodes",
                       {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {2, 1000}}},
                        {{"id", 1}, {"op", op}, {"a", 0}}}},
                      {"outputs", {{{"name", "y"}, {"id", 1}}}}};
    std::vector<float> got =
        RunTiled(doc, {{"x", HostTensor::FromFloats(MakeType({2, 1000}), x)}},
                 "12 tiles: each of 2 blocks of 1 rows in 3 passes (the maximum, the sum of exp, "
                 "the writes) of 2 of 961 along the row",
                 2 + 12, false);
    ASSERT_EQ(got.size(), 2000u);
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < 1000; ++j) mx = std::max<double>(mx, x[j]);
    for (int j = 0; j < 1000; ++j) sum += std::exp(double{x[j]} - mx);
    for (int j = 0; j < 1000; ++j) {
      const double want = std::string(op) == "softmax" ? std::exp(double{x[j]} - mx) / sum
                                                       : double{x[j]} - mx - std::log(sum);
      ASSERT_NEAR(got[j], want, 1e-6 * std::max(1.0, std::fabs(want))) << j;
    }
    for (int j = 1000; j < 2000; ++j) ASSERT_TRUE(std::isnan(got[j])) << j;
  }
}

}  // namespace
}  // namespace scellis::runtime::webgpu
