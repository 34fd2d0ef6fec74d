#include "api/run.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>

namespace scellis::api {
namespace {

constexpr int kSide = 1024;
constexpr int64_t kGridBytes = int64_t{kSide} * kSide * 4;  // one f32 grid: 4 MiB

std::vector<uint8_t> RandomCells(unsigned seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution alive(0.3);
  std::vector<uint8_t> cells(size_t{kSide} * kSide);
  for (uint8_t& c : cells) c = alive(rng);
  return cells;
}

// A 1024x1024 Game of Life whose grid is carried from step to step.
std::string LifeDocument(const std::vector<uint8_t>& cells) {
  Json data = Json::array();
  for (uint8_t c : cells) data.push_back(c);
  Json g = {{"version", 1},
            {"nodes",
             {{{"id", 0},
               {"op", "input"},
               {"name", "cells"},
               {"shape", {kSide, kSide}},
               {"data", data},
               {"carry", "grid"}},
              {{"id", 1}, {"op", "life"}, {"a", 0}}}},
            {"outputs", {{{"name", "grid"}, {"id", 1}}}}};
  return g.dump();
}

// The rule worked independently of the engine: B3/S23 on a torus, neighbour counts from the
// three wrapped rows summed column-wise first.
std::vector<uint8_t> LifeSteps(std::vector<uint8_t> cells, int steps) {
  std::vector<uint8_t> next(cells.size()), column(kSide);
  for (int s = 0; s < steps; ++s) {
    for (int r = 0; r < kSide; ++r) {
      const uint8_t* up = &cells[size_t((r + kSide - 1) % kSide) * kSide];
      const uint8_t* mid = &cells[size_t(r) * kSide];
      const uint8_t* down = &cells[size_t((r + 1) % kSide) * kSide];
      for (int q = 0; q < kSide; ++q) column[q] = up[q] + mid[q] + down[q];
      for (int q = 0; q < kSide; ++q) {
        int around = column[(q + kSide - 1) % kSide] + column[q] + column[(q + 1) % kSide] - mid[q];
        next[size_t(r) * kSide + q] = around == 3 || (around == 2 && mid[q]);
      }
    }
    std::swap(cells, next);
  }
  return cells;
}

RunOptions CpuSteps(int steps, std::vector<std::string> history = {}) {
  RunOptions o;
  o.compile.lower.tier = policy::Tier::kProd;
  o.select.requested = "cpu";
  o.steps = steps;
  o.history = std::move(history);
  return o;
}

// A document's scalar input named "step" is the session's step number, as a training step's:
// dropout draws a fresh mask every step of a run, and the same mask for the same step number.
TEST(RunSteps, FeedTheStepNumberToADocumentsStepInput) {
  const Json doc = {
      {"version", 3},
      {"nodes",
       {{{"id", 0}, {"op", "input"}, {"name", "step"}, {"shape", Json::array()}},
        {{"id", 1}, {"op", "full"}, {"shape", {256}}, {"value", 1}},
        {{"id", 2}, {"op", "dropout"}, {"a", 1}, {"step", 0}, {"p", 0.5}, {"seed", 4}}}},
      {"outputs", {{{"name", "d"}, {"id", 2}}}}};
  auto many = api::Run(doc.dump(), CpuSteps(3, {"d"}));
  ASSERT_TRUE(many.ok()) << many.errors().front().Format();
  const auto& steps = many->history.at(0).second;
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_NE(ValuesOf(steps[0]), ValuesOf(steps[1]));
  EXPECT_NE(ValuesOf(steps[1]), ValuesOf(steps[2]));
  auto once = api::Run(doc.dump(), CpuSteps(1));  // a one-shot run is step 1
  ASSERT_TRUE(once.ok()) << once.errors().front().Format();
  EXPECT_EQ(ValuesOf(once->outputs.at(0).second), ValuesOf(steps[0]));
}

class LifeReadback : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    cells_ = RandomCells(seed_);
    text_ = LifeDocument(cells_);
  }
  unsigned seed_ = 0;
  std::vector<uint8_t> cells_;
  std::string text_;
};

TEST_F(LifeReadback, ManyStepsReadBackOneGrid) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  auto r = api::Run(text_, CpuSteps(130));
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(r->readback_bytes(), kGridBytes);
  EXPECT_EQ(r->stats["submissions"], 3);  // 64 + 64 + 2
  EXPECT_TRUE(r->history.empty());
  ASSERT_EQ(r->outputs.size(), 1u);
  ASSERT_EQ(r->outputs[0].first, "grid");

  std::vector<uint8_t> want = LifeSteps(cells_, 130);
  std::vector<float> got = ValuesOf(r->outputs[0].second);
  ASSERT_EQ(got.size(), want.size());
  int64_t wrong = 0;
  for (size_t i = 0; i < want.size(); ++i) wrong += got[i] != static_cast<float>(want[i]);
  EXPECT_EQ(wrong, 0);
}

TEST_F(LifeReadback, HistoryReadsEveryStep) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  auto r = api::Run(text_, CpuSteps(3, {"grid"}));
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(r->readback_bytes(), 3 * kGridBytes);
  ASSERT_EQ(r->history.size(), 1u);
  ASSERT_EQ(r->history[0].second.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    std::vector<uint8_t> want = LifeSteps(cells_, k + 1);
    std::vector<float> got = ValuesOf(r->history[0].second[k]);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(),
                           [](float a, uint8_t b) { return a == static_cast<float>(b); }))
        << "step " << k + 1;
  }
  // The last value is the history's last step, not read back a second time.
  EXPECT_EQ(ValuesOf(r->outputs[0].second), ValuesOf(r->history[0].second.back()));
}

// On WebGPU the backend's report of where the host's time went is summed over the submissions
// of a long run, as its counters are: each part is there, and together they are the recording,
// which is less than the whole run. The grid is still the one the rule gives.
TEST_F(LifeReadback, ManyStepsOnWebGpuSumTheHostsTimes) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  if (!std::getenv("VK_ICD_FILENAMES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  RunOptions o = CpuSteps(130);
  o.select = {.requested = "webgpu", .allow_software_adapter = true};
  auto r = api::Run(text_, o);
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(r->backend, "webgpu");
  double parts = 0;
  for (const char* key : {"host_setup_ms", "host_send_ms", "host_feed_ms", "host_encode_ms"}) {
    ASSERT_TRUE(r->stats.contains(key)) << key << " in " << r->stats.dump();
    EXPECT_GE(r->stats[key].get<double>(), 0.0) << key;
    parts += r->stats[key].get<double>();
  }
  const double recorded = r->stats["host_record_ms"].get<double>();
  EXPECT_NEAR(parts, recorded, 1e-6 + 1e-9 * recorded);
  EXPECT_GT(recorded, 0.0);
  EXPECT_LT(recorded, r->stats["wall_ms"].get<double>());
  std::vector<uint8_t> want = LifeSteps(cells_, 130);
  std::vector<float> got = ValuesOf(r->outputs[0].second);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], static_cast<float>(want[i])) << i;
}

TEST_F(LifeReadback, OneStepReadsItsOutputsOnce) {
  auto r = api::Run(text_, CpuSteps(1));
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(r->readback_bytes(), kGridBytes);
}

// A training step's program is fed its step number as training feeds it: step 2's Adam update of
// b2 is what the bias-corrected moments after step 2 give, worked here in float64 from the run's
// own moments (with step 0 or a missing step the run would fail or divide by zero).
TEST(RunFacade, ATrainingProgramIsFedItsStepNumbers) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/mlp_step.json");
  std::stringstream text;
  text << in.rdbuf();
  RunOptions o = CpuSteps(2, {"b2@next", "b2@m", "b2@v", "loss"});
  auto r = api::Run(text.str(), o);
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  std::map<std::string, std::vector<runtime::HostTensor>> h;
  for (auto& [name, steps] : r->history) h[name] = steps;
  ASSERT_EQ(h["loss"].size(), 2u);
  const auto before = h["b2@next"][0].ToFloats(), after = h["b2@next"][1].ToFloats();
  const auto m = h["b2@m"][1].ToFloats(), v = h["b2@v"][1].ToFloats();
  const double lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  for (size_t i = 0; i < after.size(); ++i) {
    const double m_hat = m[i] / (1 - beta1 * beta1), v_hat = v[i] / (1 - beta2 * beta2);
    const double want = -lr * m_hat / (std::sqrt(v_hat) + eps);
    EXPECT_NEAR(double(after[i]) - double(before[i]), want, 1e-6) << "b2[" << i << "]";
  }
}

TEST(RunFacade, RefusesBadRequests) {
  std::string text = LifeDocument(std::vector<uint8_t>(size_t{kSide} * kSide, 0));
  auto unknown = api::Run(text, CpuSteps(2, {"cells_next"}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.errors().front().code, "unknown-output");
  auto none = api::Run(text, CpuSteps(0));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.errors().front().code, "bad-step-count");
}

// The JSON of an f32 output, printed and read back as a reader does (a double, rounded to f32),
// gives every finite value's bits: negative zero, subnormals, the extremes, values that need 9
// significant digits, integers at the edge of f32's exact range.
TEST(TensorJson, FiniteF32ValuesComeBackBitForBit) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -3.0f,
                               0.1f,
                               1.0f / 3.0f,
                               16777215.0f,
                               16777216.0f,
                               -16777216.0f,
                               3.0e9f,
                               std::numeric_limits<float>::denorm_min(),
                               -std::numeric_limits<float>::denorm_min(),
                               std::numeric_limits<float>::min(),
                               std::numeric_limits<float>::max(),
                               -std::numeric_limits<float>::max(),
                               std::nextafter(1.0f, 2.0f),
                               std::nextafter(0.1f, 0.0f)};
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isfinite(f)) values.push_back(f);
  }
  HostTensor t = HostTensor::FromFloats(MakeType({static_cast<int64_t>(values.size())}), values);
  Json back = Json::parse(TensorToJson(t).dump());
  ASSERT_EQ(back["data"].size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const float got = static_cast<float>(back["data"][i].get<double>());
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(values[i]))
        << "value " << i << " printed as " << back["data"][i].dump();
  }
  EXPECT_EQ(TensorToJson(t)["data"][1].dump(), "-0.0");
}

// An input given only by shape, fed through RunOptions::feeds, summed into a carried accumulator.
TEST(RunFacade, FeedsGiveInputsTheirValuesOnEveryStep) {
  Json g = {{"version", 1},
            {"nodes",
             {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {3}}},
              {{"id", 1},
               {"op", "input"},
               {"name", "acc"},
               {"shape", {3}},
               {"data", {0, 0, 0}},
               {"carry", "total"}},
              {{"id", 2}, {"op", "add"}, {"a", 1}, {"b", 0}}}},
            {"outputs", {{{"name", "total"}, {"id", 2}}}}};
  auto tensor = [](std::vector<float> v) { return HostTensor::FromFloats(MakeType({3}), v); };
  auto values = [](const RunReport& r) { return ValuesOf(r.outputs.front().second); };

  RunOptions once = CpuSteps(1);
  once.feeds = {{"x", tensor({1, 2, 3})}};
  auto one = api::Run(g.dump(), once);
  ASSERT_TRUE(one.ok()) << one.errors().front().Format();
  EXPECT_EQ(values(*one), (std::vector<float>{1, 2, 3}));

  // The fed input keeps its value on every step; the carried one starts from its data.
  RunOptions three = CpuSteps(3);
  three.feeds = {{"x", tensor({1, 2, 3})}};
  auto many = api::Run(g.dump(), three);
  ASSERT_TRUE(many.ok()) << many.errors().front().Format();
  EXPECT_EQ(values(*many), (std::vector<float>{3, 6, 9}));

  // A feed for an input with data replaces its data.
  three.feeds["acc"] = tensor({10, 20, 30});
  auto started = api::Run(g.dump(), three);
  ASSERT_TRUE(started.ok()) << started.errors().front().Format();
  EXPECT_EQ(values(*started), (std::vector<float>{13, 26, 39}));

  auto unfed = api::Run(g.dump(), CpuSteps(1));
  ASSERT_FALSE(unfed.ok());
  EXPECT_EQ(unfed.errors().front().code, "missing-input-data");
}

}  // namespace
}  // namespace scellis::api
