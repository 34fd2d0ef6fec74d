// Tensors over the storage-binding cap: elementwise kernels, rank-2 matmuls (over M, N and K),
// sums and softmax rows run in tiles that each bind at most the cap (batched matmuls, running
// sums, cross entropy and softmax rows over the cap: tiling_scan_batch_test.cpp); kernels that
// must bind a whole tensor are refused in planning. The device is opened with a small cap
// (SwiftShader's real one is 1 GiB) so the tiles are exercised with small tensors. Tiles along a
// reduced axis hand on f32 partial sums, so in debug they give the untiled kernel's bits: checked
// against the CPU reference (whose order the untiled kernels share), against the untiled kernel on
// a device with the full cap, and within rounding of a float64 computation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"
#include "runtime/backends/webgpu/executor.h"
#include "runtime/backends/webgpu/tiling_support_test.h"

namespace scellis::runtime::webgpu {
namespace {

using namespace tiling_support;

// relu(x * y_row + z) * 0.5 over [301, 97] (29197 elements: 29 tiles, the last one partial), with
// x fed per run and y broadcast along the rows (bound whole in every tile).
Json ChainDoc(std::mt19937& rng, std::vector<float>& x) {
  std::uniform_real_distribution<float> u(-2, 2);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    return v;
  };
  x = random(301 * 97);
  return {{"version", 2},
          {"nodes",
           {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {301, 97}}},
            {{"id", 1}, {"op", "input"}, {"shape", {97}}, {"data", random(97)}},
            {{"id", 2}, {"op", "input"}, {"shape", {301, 97}}, {"data", random(301 * 97)}},
            {{"id", 3}, {"op", "mul"}, {"a", 0}, {"b", 1}},
            {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 2}},
            {{"id", 5}, {"op", "relu"}, {"a", 4}},
            {{"id", 6}, {"op", "mul"}, {"a", 5}, {"scalar", 0.5}}}},
          {"outputs", {{{"name", "y"}, {"id", 6}}}}};
}

TEST(Tiling, ElementwiseOverTheCapRunsInTilesAndMatchesTheReference) {
  auto gpu = SmallCapGpu();
  ASSERT_NE(gpu, nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::vector<float> x;
  Json doc = ChainDoc(rng, x);
  auto c = Compile(doc, *gpu);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  EXPECT_EQ(c->plan->verdict, execplan::Verdict::kYellow);
  EXPECT_EQ(c->plan->findings.front().code, "tiled-binding");

  Feeds feeds = {{"x", HostTensor::FromFloats(MakeType({301, 97}), x)}};
  // Poisoned outputs prove every tile wrote its window and nothing else was left unwritten.
  auto got = gpu->Run(*c->plan, feeds, {.poison_outputs = true});
  ASSERT_TRUE(got.ok()) << got.errors().front().Format();
  EXPECT_GE(got->stats["dispatches"].get<int>(), 29);

  cpu::CpuExecutor ref({.threads = 1});
  auto want = ref.Run(*c->plan, feeds);
  ASSERT_TRUE(want.ok());
  const auto& a = got->outputs[0].second.ToFloats();
  const auto& b = want->outputs[0].second.ToFloats();
  ASSERT_EQ(a.size(), b.size());
  // mul/add/relu are exact; the GPU may contract the multiply-add into one FMA.
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-6 + 2e-6 * std::fabs(b[i])) << i;
}

TEST(Tiling, FedInputsOverTheCapAreWindowedPerStep) {
  auto gpu = SmallCapGpu();
  ASSERT_NE(gpu, nullptr);
  std::mt19937 rng(11);
  std::vector<float> x0, x1;
  Json doc = ChainDoc(rng, x0);
  auto c = Compile(doc, *gpu);
  ASSERT_TRUE(c.ok());
  std::uniform_real_distribution<float> u(-2, 2);
  x1.resize(x0.size());
  for (float& f : x1) f = u(rng);
  auto session = gpu->Prepare(*c->plan);
  ASSERT_TRUE(session.ok());
  auto r = session.value()->RunSteps({{{"x", HostTensor::FromFloats(MakeType({301, 97}), x0)}},
                                      {{"x", HostTensor::FromFloats(MakeType({301, 97}), x1)}}},
                                     {"y"});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  cpu::CpuExecutor ref({.threads = 1});
  for (int k = 0; k < 2; ++k) {
    auto want =
        ref.Run(*c->plan, {{"x", HostTensor::FromFloats(MakeType({301, 97}), k ? x1 : x0)}});
    ASSERT_TRUE(want.ok());
    const auto& a = r->watched[0].second[k].ToFloats();
    const auto& b = want->outputs[0].second.ToFloats();
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], 1e-6 + 2e-6 * std::fabs(b[i])) << k << ":" << i;
  }
}

// x [300, 40] (48000 B) @ w [40, 24] = [300, 24] (28800 B): A and the output are over the 4 KiB
// cap, B is not. Tiles of 24 rows (the most whose A window, widened down to a multiple of 256
// bytes, stays under the cap; 13 tiles, the last of 12 rows). In debug every output element adds
// its 40 products in increasing order on both backends, so the tiled kernel equals the reference
// bit for bit.
TEST(Tiling, AMatmulOverTheCapRunsInRowTilesWithTheReferencesBits) {
  auto gpu = SmallCapGpu();
  ASSERT_NE(gpu, nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> x(300 * 40), w(40 * 24);
  for (float& f : x) f = u(rng);
  for (float& f : w) f = u(rng);
  Json doc = {{"version", 1},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {300, 40}}},
                {{"id", 1}, {"op", "input"}, {"shape", {40, 24}}, {"data", w}},
                {{"id", 2}, {"op", "matmul"}, {"a", 0}, {"b", 1}}}},
              {"outputs", {{{"name", "c"}, {"id", 2}}}}};
  auto c = Compile(doc, *gpu, policy::Tier::kDebug);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  EXPECT_EQ(c->plan->verdict, execplan::Verdict::kYellow);
  ASSERT_FALSE(c->plan->findings.empty());
  EXPECT_EQ(c->plan->findings.front().code, "tiled-binding");
  EXPECT_NE(c->plan->findings.front().message.find("rows"), std::string::npos);

  Feeds feeds = {{"x", HostTensor::FromFloats(MakeType({300, 40}), x)}};
  auto got = gpu->Run(*c->plan, feeds, {.poison_outputs = true});
  ASSERT_TRUE(got.ok()) << got.errors().front().Format();
  // The 13 tiles after poison fills of the output (28800 B) in windows of the 4 KiB cap.
  EXPECT_EQ(got->stats["dispatches"].get<int>(), 13 + 8);
  cpu::CpuExecutor ref({.threads = 1});
  auto want = ref.Run(*c->plan, feeds);
  ASSERT_TRUE(want.ok());
  const auto& a = got->outputs[0].second.ToFloats();
  const auto& b = want->outputs[0].second.ToFloats();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0) << i << ": " << a[i] << " vs " << b[i];
}

// relu(x @ w + bias) + r over the cap: fuse-matmul-epilogue leaves the matmul alone (tiles take no
// epilogue), so the matmul runs in its tiles and the elementwise kernel in its own. The same bits
// as the reference, and float64's values.
TEST(Tiling, AMatmulOverTheCapKeepsItsEpilogueApartAndBothTile) {
  auto gpu = SmallCapGpu();
  ASSERT_NE(gpu, nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> x(300 * 40), w(40 * 24), bias(24), r(300 * 24);
  for (auto* v : {&x, &w, &bias, &r})
    for (float& f : *v) f = u(rng);
  Json doc = {{"version", 2},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {300, 40}}},
                {{"id", 1}, {"op", "input"}, {"shape", {40, 24}}, {"data", w}},
                {{"id", 2}, {"op", "input"}, {"shape", {24}}, {"data", bias}},
                {{"id", 3}, {"op", "input"}, {"shape", {300, 24}}, {"data", r}},
                {{"id", 4}, {"op", "matmul"}, {"a", 0}, {"b", 1}},
                {{"id", 5}, {"op", "add"}, {"a", 4}, {"b", 2}},
                {{"id", 6}, {"op", "relu"}, {"a", 5}},
                {{"id", 7}, {"op", "add"}, {"a", 6}, {"b", 3}}}},
              {"outputs", {{{"name", "c"}, {"id", 7}}}}};
  auto c = Compile(doc, *gpu, policy::Tier::kDebug);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  ASSERT_EQ(c->module->kernels.size(), 2u) << kernel::Print(*c->module);
  EXPECT_FALSE(c->module->kernels[0].HasEpilogue());
  EXPECT_EQ(c->plan->verdict, execplan::Verdict::kYellow);

  Feeds feeds = {{"x", HostTensor::FromFloats(MakeType({300, 40}), x)}};
  auto got = gpu->Run(*c->plan, feeds, {.poison_outputs = true});
  ASSERT_TRUE(got.ok()) << got.errors().front().Format();
  EXPECT_GT(got->stats["dispatches"].get<int>(), 2);  // tiles of both kernels
  cpu::CpuExecutor ref({.threads = 1});
  auto want = ref.Run(*c->plan, feeds);
  ASSERT_TRUE(want.ok());
  const auto& a = got->outputs[0].second.ToFloats();
  const auto& b = want->outputs[0].second.ToFloats();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0) << i << ": " << a[i] << " vs " << b[i];
  // And against float64, so the reference's epilogue is checked too.
  for (int i = 0; i < 300; ++i)
    for (int j = 0; j < 24; ++j) {
      double sum = 0;
      for (int k = 0; k < 40; ++k) sum += double{x[i * 40 + k]} * w[k * 24 + j];
      const double want64 = std::max(0.0, sum + bias[j]) + r[i * 24 + j];
      ASSERT_NEAR(b[i * 24 + j], want64, 1e-4) << i << "," << j;
    }
}

// ---- matmuls over N and K, sums and softmax ----

// a [16, 120] @ w [120, 24]: w (11520 B) and a (7680 B) are over the 4 KiB cap; a row of a is
// not. A tile of w binds 40 of its rows (the most whose window, widened down to 256 bytes, fits),
// so K runs in 3 tiles, each continuing the output's partial sums, over 2 tiles of 8 rows: 6
// tiles (the two row blocks' tiles share their WGSL: their windows sit alike). Every schedule kind
// (one output per invocation, register-blocked with vec4 loads, per-element) continues from the
// stored partial and gives the untiled kernel's bits.
TEST(Tiling, AMatmulWhoseBIsOverTheCapRunsInKTilesWithTheReferencesBits) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> a = Random(rng, 16 * 120), w = Random(rng, 120 * 24);
  const Json doc = MatmulDoc({16, 120}, {120, 24}, false, false, w);
  const Feeds feeds = {{"a", HostTensor::FromFloats(MakeType({16, 120}), a)}};
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
    // 2 x 3 tiles after one poison fill of the output (1536 B).
    std::vector<float> got = RunTiled(
        doc, feeds, "6 tiles: 2 of 8 rows x 1 of 24 columns x 3 of 40 along K, each tile along K",
        1 + 6, true, sch);
    ExpectNearFloat64Product(
        got, 16, 24, 120, [&](int64_t r, int64_t k) { return a[r * 120 + k]; },
        [&](int64_t k, int64_t c) { return w[k * 24 + c]; });
  }
}

// a [2, 48] @ w^T with w stored [100, 48] (19200 B): B read transposed has its columns as w's
// rows, so a tile of 20 output columns binds 20 rows of w (3840 B): 5 tiles over N, K whole.
TEST(Tiling, AMatmulWithATransposedBOverTheCapRunsInNTiles) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> a = Random(rng, 2 * 48), w = Random(rng, 100 * 48);
  std::vector<float> got =
      RunTiled(MatmulDoc({2, 48}, {100, 48}, false, true, w),
               {{"a", HostTensor::FromFloats(MakeType({2, 48}), a)}},
               "5 tiles: 1 of 2 rows x 5 of 20 columns x 1 of 48 along K", 1 + 5, true);
  ExpectNearFloat64Product(
      got, 2, 100, 48, [&](int64_t r, int64_t k) { return a[r * 48 + k]; },
      [&](int64_t k, int64_t c) { return w[c * 48 + k]; });
}

// A read transposed, its rows of K = 700 over the cap: a^T with a stored [700, 4] (11200 B), times
// w [700, 5] (14000 B). A tile along K binds a stretch of a's rows and of w's: K in 4 tiles.
TEST(Tiling, AMatmulWhoseTransposedAIsOverTheCapRunsInKTiles) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> a = Random(rng, 700 * 4), w = Random(rng, 700 * 5);
  std::vector<float> got = RunTiled(
      MatmulDoc({700, 4}, {700, 5}, true, false, w),
      {{"a", HostTensor::FromFloats(MakeType({700, 4}), a)}},
      "4 tiles: 1 of 4 rows x 1 of 5 columns x 4 of 192 along K, each tile along K", 4 + 1, true);
  ExpectNearFloat64Product(
      got, 4, 5, 700, [&](int64_t r, int64_t k) { return a[k * 4 + r]; },
      [&](int64_t k, int64_t c) { return w[k * 5 + c]; });
}

// sum of x [5000] (20000 B): tiles of 768 elements (3 x 256: each lane of the tree gets its own
// elements in every tile), 7 tiles; the 256 lanes' partial sums go from tile to tile in a scratch
// buffer and the last tile runs the tree, the reference's order.
TEST(Tiling, AWholeTensorSumOverTheCapCarriesTheTreesLanesAcrossTiles) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 5000);
  std::vector<float> got = RunTiled(
      ReduceDoc("sum", {5000}, nullptr), {{"x", HostTensor::FromFloats(MakeType({5000}), x)}},
      "7 tiles of 768 elements, the 256 lanes' partial sums carried", 7 + 1, true);
  ASSERT_EQ(got.size(), 1u);
  double sum = 0, magnitude = 0;
  for (float v : x) sum += v, magnitude += std::fabs(v);
  EXPECT_NEAR(got[0], sum, 5000.0 * std::ldexp(magnitude, -24));
}

// sum and mean of x [300, 30] over axis 0 (36000 B): the 30 outputs each walk 300 elements 30
// apart; a tile binds 32 of the axis's rows, so the axis runs in 10 tiles, each continuing the
// partial sums stored in the output, and the mean's last tile divides by 300. (WGSL's division
// is not correctly rounded, so the mean's bits are the untiled kernel's, not the reference's.)
TEST(Tiling, ASumAndAMeanAlongAnAxisOverTheCapRunInTilesAlongTheAxis) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 300 * 30);
  for (const char* op : {"sum", "mean"}) {
    SCOPED_TRACE(op);
    const bool mean = std::string(op) == "mean";
    std::vector<float> got = RunTiled(
        ReduceDoc(op, {300, 30}, 0), {{"x", HostTensor::FromFloats(MakeType({300, 30}), x)}},
        "10 tiles: 1 of 1 outer rows x 1 of 30 inner columns x 10 of 32 along the axis, each "
        "tile along the axis continuing",
        1 + 10, !mean);
    ASSERT_EQ(got.size(), 30u);
    for (int c = 0; c < 30; ++c) {
      double sum = 0, magnitude = 0;
      for (int r = 0; r < 300; ++r) sum += x[r * 30 + c], magnitude += std::fabs(x[r * 30 + c]);
      const double scale = mean ? 300 : 1;
      EXPECT_NEAR(got[c], sum / scale, (2.0 * 300 * std::ldexp(magnitude, -24) + 1e-6) / scale)
          << c;
    }
  }
}

// softmax of x [40, 100] (16000 B): tiles of 9 whole rows (3600 B), 5 tiles. A row's maximum and
// sum are its own, so the tiles give the untiled kernel's bits; the GPU's exp differs from the
// reference's own in the last bits, so the reference and float64 are within the default class.
TEST(Tiling, SoftmaxOverTheCapRunsInTilesOfRows) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 40 * 100);
  const Json doc = {{"version", 2},
                    {"nodes",
                     {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {40, 100}}},
                      {{"id", 1}, {"op", "softmax"}, {"a", 0}}}},
                    {"outputs", {{{"name", "y"}, {"id", 1}}}}};
  const Feeds feeds = {{"x", HostTensor::FromFloats(MakeType({40, 100}), x)}};
  // The output (16000 B) is poisoned in 4 windows under the cap, then 5 tiles.
  std::vector<float> got = RunTiled(doc, feeds, "5 tiles of 9 rows", 4 + 5, false);
  ASSERT_EQ(got.size(), 4000u);
  for (int r = 0; r < 40; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < 100; ++j) mx = std::max<double>(mx, x[r * 100 + j]);
    for (int j = 0; j < 100; ++j) sum += std::exp(double{x[r * 100 + j]} - mx);
    for (int j = 0; j < 100; ++j)
      ASSERT_NEAR(got[r * 100 + j], std::exp(double{x[r * 100 + j]} - mx) / sum, 1e-6)
          << r << "," << j;
  }
}

// What still cannot tile must bind its tensor whole: refused in planning — an index_select whose
// table is over the cap, each output row reading the row its index names, anywhere in the table.
TEST(Tiling, KernelsThatBindWholeTensorsAreRefusedInPlanning) {
  auto gpu = SmallCapGpu();
  ASSERT_NE(gpu, nullptr);
  auto refused = [&](const Json& doc, const std::string& kernel) {
    auto c = Compile(doc, *gpu);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->plan->verdict, execplan::Verdict::kRed);
    ASSERT_FALSE(c->plan->findings.empty());
    EXPECT_EQ(c->plan->findings.front().code, "binding-cap-exceeded");
    EXPECT_NE(c->plan->findings.front().message.find(kernel), std::string::npos);
  };
  refused({{"version", 4},
           {"nodes",
            {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {40, 100}}},
             {{"id", 1}, {"op", "input"}, {"name", "i"}, {"shape", {3}}, {"dtype", "i32"}},
             {{"id", 2}, {"op", "index_select"}, {"a", 0}, {"index", 1}, {"axis", 0}}}},
           {"outputs", {{{"name", "y"}, {"id", 2}}}}},
          "index_select");
}

}  // namespace
}  // namespace scellis::runtime::webgpu
