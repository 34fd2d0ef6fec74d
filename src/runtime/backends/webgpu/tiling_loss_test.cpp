// Tiles over the storage-binding cap for the loss's gradient: cross_entropy_grad alone in tiles of
// whole rows; the loss merged with its gradient (merge-loss-gradient) in the loss's tiles of 256
// rows, each writing its rows of the gradient; and the bias gradient's column sum, which the merged
// kernel cannot take over the cap, kept apart and cut along its axis. In debug every output has
// the untiled kernels' bits (the device opened with the full cap runs the merged kernels whole),
// and float64's values within rounding (the GPU's exp and log are not the reference's). The device
// is opened with a 4 KiB cap so that small tensors exercise the tiles.
#include <algorithm>

#include "runtime/backends/webgpu/tiling_support_test.h"

namespace scellis::runtime::webgpu {
namespace {

using namespace tiling_support;

// Runs `doc` (in debug) tiled on the small-cap device and untiled on one with the full cap; checks
// the tiled plan is yellow with only `tiled-binding` findings, one of them mentioning `tiling`,
// that the tiled run has `dispatches` dispatches (the tiles and the outputs' poison fills), and
// that every output has the untiled run's bits. Returns the tiled outputs.
std::vector<std::vector<float>> RunAllTiled(const Json& doc, const Feeds& feeds,
                                            const std::string& tiling, int dispatches) {
  auto gpu = SmallCapGpu();
  auto whole = SmallCapGpu(0);
  if (!gpu || !whole) return {};
  auto c = Compile(doc, *gpu, policy::Tier::kDebug);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  if (!c.ok()) return {};
  EXPECT_EQ(c->plan->verdict, execplan::Verdict::kYellow) << execplan::Print(*c->plan);
  bool described = false;
  for (const Diagnostic& d : c->plan->findings) {
    EXPECT_EQ(d.code, "tiled-binding") << d.Format();
    described |= d.message.find(tiling) != std::string::npos;
  }
  EXPECT_TRUE(described) << execplan::Print(*c->plan);
  auto got = gpu->Run(*c->plan, feeds, {.poison_outputs = true});
  EXPECT_TRUE(got.ok()) << got.errors().front().Format();
  if (!got.ok()) return {};
  EXPECT_EQ(got->stats["dispatches"].get<int>(), dispatches);

  auto untiled_plan = Compile(doc, *whole, policy::Tier::kDebug);
  EXPECT_TRUE(untiled_plan.ok());
  if (!untiled_plan.ok()) return {};
  EXPECT_EQ(untiled_plan->plan->verdict, execplan::Verdict::kGreen);
  auto untiled = whole->Run(*untiled_plan->plan, feeds);
  EXPECT_TRUE(untiled.ok());
  if (!untiled.ok()) return {};
  std::vector<std::vector<float>> out;
  for (size_t o = 0; o < got->outputs.size(); ++o) {
    out.push_back(got->outputs[o].second.ToFloats());
    ExpectSameBits(out.back(), untiled->outputs[o].second.ToFloats(),
                   ("tiled vs untiled " + got->outputs[o].first).c_str());
  }
  return out;
}

// Logits x [rows, classes] (fed), labels (inline), an upstream gradient b [] (inline), and the
// outputs `publish` names among loss (cross_entropy), grad (cross_entropy_grad) and db (grad's
// column sums).
Json LossDoc(int64_t rows, int64_t classes, const std::vector<float>& labels, float b,
             const std::vector<std::string>& publish) {
  Json nodes = {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {rows, classes}}},
                {{"id", 1}, {"op", "input"}, {"shape", {rows}}, {"data", labels}},
                {{"id", 2}, {"op", "input"}, {"shape", Json::array()}, {"data", {b}}}};
  auto published = [&](const char* name) {
    return std::find(publish.begin(), publish.end(), name) != publish.end();
  };
  if (published("loss"))
    nodes.push_back({{"id", 3}, {"op", "cross_entropy"}, {"a", 0}, {"target", 1}});
  nodes.push_back({{"id", 4}, {"op", "cross_entropy_grad"}, {"a", 0}, {"target", 1}, {"b", 2}});
  if (published("db")) nodes.push_back({{"id", 5}, {"op", "sum"}, {"a", 4}, {"axis", 0}});
  Json outputs = Json::array();
  for (const std::string& name : publish)
    outputs.push_back({{"name", name}, {"id", name == "loss" ? 3 : name == "grad" ? 4 : 5}});
  return {{"version", 2}, {"nodes", nodes}, {"outputs", outputs}};
}

// Per row in float64: the softmax of the row, or empty for a row whose label is not a class.
std::vector<std::vector<double>> Softmax64(const std::vector<float>& x,
                                           const std::vector<float>& labels, int64_t classes) {
  std::vector<std::vector<double>> p(labels.size());
  for (size_t r = 0; r < labels.size(); ++r) {
    if (labels[r] != std::floor(labels[r]) || labels[r] < 0 || labels[r] >= classes) continue;
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < classes; ++j) mx = std::max<double>(mx, x[r * classes + j]);
    for (int64_t j = 0; j < classes; ++j) sum += std::exp(double{x[r * classes + j]} - mx);
    for (int64_t j = 0; j < classes; ++j)
      p[r].push_back(std::exp(double{x[r * classes + j]} - mx) / sum);
  }
  return p;
}

// The gradient (p - onehot(label)) * b / rows in float64 within rounding; a row with an invalid
// label NaN throughout.
void ExpectGradient(const std::vector<float>& got, const std::vector<std::vector<double>>& p,
                    const std::vector<float>& labels, int64_t classes, double b) {
  const double g = b / static_cast<double>(labels.size());
  ASSERT_EQ(got.size(), labels.size() * static_cast<size_t>(classes));
  for (size_t r = 0; r < labels.size(); ++r)
    for (int64_t j = 0; j < classes; ++j) {
      const float v = got[r * classes + j];
      if (p[r].empty()) {
        ASSERT_TRUE(std::isnan(v)) << r << "," << j;
        continue;
      }
      const double want = (p[r][j] - (j == static_cast<int64_t>(labels[r]) ? 1.0 : 0.0)) * g;
      ASSERT_NEAR(v, want, 2e-6 * std::fabs(g)) << r << "," << j;
    }
}

std::vector<float> Labels(std::mt19937& rng, size_t rows, int64_t classes) {
  std::vector<float> labels(rows);
  for (float& l : labels) l = static_cast<float>(rng() % classes);
  return labels;
}

// cross_entropy_grad of x [300, 10] (12000 B) alone: 4 tiles of whole rows (96, the last 12)
// after 3 poison fills of the gradient; row 150 (in the second tile) has an invalid label.
TEST(TilingLoss, ALossGradientOverTheCapRunsInTilesOfWholeRows) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 300 * 10);
  std::vector<float> labels = Labels(rng, 300, 10);
  labels[150] = 2.5f;
  auto got = RunAllTiled(LossDoc(300, 10, labels, 2.0f, {"grad"}),
                         {{"x", HostTensor::FromFloats(MakeType({300, 10}), x)}},
                         "4 tiles of 96 rows", 3 + 4);
  ASSERT_EQ(got.size(), 1u);
  ExpectGradient(got[0], Softmax64(x, labels, 10), labels, 10, 2.0);
}

// The loss and its gradient of x [1000, 3] (12000 B) in one kernel: 4 tiles of 256 rows carrying
// the loss tree's lanes and writing their rows of the gradient, after the poison fills of the
// loss (1) and the gradient (3).
TEST(TilingLoss, TheLossMergedWithItsGradientRunsInTilesWritingTheirRowsOfTheGradient) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 1000 * 3);
  const std::vector<float> labels = Labels(rng, 1000, 3);
  auto got = RunAllTiled(LossDoc(1000, 3, labels, 0.5f, {"loss", "grad"}),
                         {{"x", HostTensor::FromFloats(MakeType({1000, 3}), x)}},
                         "4 tiles of 256 rows, the 256 lanes' partial sums of row losses carried "
                         "from tile to tile, each tile writing its rows of the gradient",
                         1 + 3 + 4);
  ASSERT_EQ(got.size(), 2u);
  const auto p = Softmax64(x, labels, 3);
  double loss = 0;
  for (size_t r = 0; r < labels.size(); ++r) loss -= std::log(p[r][static_cast<int>(labels[r])]);
  ASSERT_EQ(got[0].size(), 1u);
  EXPECT_NEAR(got[0][0], loss / 1000, 1e-5 * std::max(1.0, loss / 1000));
  ExpectGradient(got[1], p, labels, 3, 0.5);
}

// With the gradient's column sums (a bias gradient) too: untiled, one kernel writes all three;
// over the cap the sums, which add over every row, stay apart and run along the axis (4 tiles of
// 320 rows after one poison fill) behind the merged kernel's 8 dispatches — the same bits.
TEST(TilingLoss, ABiasGradientOverTheCapStaysApartFromTheLossKernelAndTiles) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> x = Random(rng, 1000 * 3);
  const std::vector<float> labels = Labels(rng, 1000, 3);
  auto got = RunAllTiled(LossDoc(1000, 3, labels, 1.0f, {"loss", "grad", "db"}),
                         {{"x", HostTensor::FromFloats(MakeType({1000, 3}), x)}},
                         "4 tiles: 1 of 1 outer rows x 1 of 3 inner columns x 4 of 320 along the "
                         "axis",
                         8 + 1 + 4);
  ASSERT_EQ(got.size(), 3u);
  const auto p = Softmax64(x, labels, 3);
  ExpectGradient(got[1], p, labels, 3, 1.0);
  ASSERT_EQ(got[2].size(), 3u);
  for (int j = 0; j < 3; ++j) {
    double want = 0;
    for (size_t r = 0; r < labels.size(); ++r)
      want += (p[r][j] - (j == static_cast<int>(labels[r]) ? 1.0 : 0.0)) / 1000;
    EXPECT_NEAR(got[2][j], want, 1e-5) << j;
  }
}

}  // namespace
}  // namespace scellis::runtime::webgpu
