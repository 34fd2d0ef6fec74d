// The counter-hash generators over the storage-binding cap: `uniform` and `dropout` run in tiles
// of output elements (a uniform also as a step of the kernel that reads it), each hashing its
// elements' indices in the whole tensor, so the tiled kernel gives the untiled one's bits and the
// reference's. The device is opened with a small cap, as in tiling_test.cpp; the expected values
// come from the hash's definition (base/random.h) applied element by element, the CPU reference and
// the untiled kernel on a device with the full cap.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "base/random.h"
#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"
#include "runtime/backends/webgpu/executor.h"

namespace scellis::runtime::webgpu {
namespace {

constexpr uint64_t kCap = 4096;  // bytes: 1024 floats per tile
constexpr int64_t kRows = 301, kCols = 97;
constexpr int64_t kElements = kRows * kCols;  // 29197: 29 tiles, the last one partial

std::unique_ptr<WebGpuExecutor> Gpu(uint64_t cap) {
  if (!std::getenv("VK_ICD_FILENAMES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  auto d = Device::Open({.allow_software_adapter = true, .max_binding_bytes = cap});
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.errors().front().message);
  return d.ok() ? std::make_unique<WebGpuExecutor>(std::move(d.value())) : nullptr;
}

Result<pipeline::Compiled> Compile(const Json& doc, const WebGpuExecutor& gpu) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kDebug;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits = gpu.limits();
  return pipeline::Compile(doc.dump(), o);
}

std::vector<float> Floats(const RunResult& r) {
  return r.outputs[0].second.ToFloats();
}

void ExpectSameBits(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0)
        << what << " at " << i << ": " << a[i] << " vs " << b[i];
}

// Runs `doc` tiled on the small-cap device (its output poisoned first, so an element no tile wrote
// shows), untiled on a device with the full cap and on the CPU reference; expects the tiled plan
// yellow with a tiled binding, `tiles` tiles, and every result with the same bits; returns them.
std::vector<float> RunTiled(const Json& doc, const Feeds& feeds, int tiles) {
  auto gpu = Gpu(kCap);
  auto whole = Gpu(0);
  if (!gpu || !whole) return {};
  auto c = Compile(doc, *gpu);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  if (!c.ok()) return {};
  EXPECT_EQ(c->plan->verdict, execplan::Verdict::kYellow);
  EXPECT_FALSE(c->plan->findings.empty());
  if (c->plan->findings.empty()) return {};
  EXPECT_EQ(c->plan->findings.front().code, "tiled-binding");
  auto got = gpu->Run(*c->plan, feeds, {.poison_outputs = true});
  EXPECT_TRUE(got.ok()) << got.errors().front().Format();
  if (!got.ok()) return {};
  // One poison fill per window of the output under the cap, then the tiles.
  const int poison_fills = static_cast<int>((kElements * 4 + kCap - 1) / kCap);
  EXPECT_EQ(got->stats["dispatches"].get<int>(), poison_fills + tiles);

  auto untiled_plan = Compile(doc, *whole);
  EXPECT_TRUE(untiled_plan.ok());
  if (!untiled_plan.ok()) return {};
  EXPECT_EQ(untiled_plan->plan->verdict, execplan::Verdict::kGreen);
  auto untiled = whole->Run(*untiled_plan->plan, feeds);
  EXPECT_TRUE(untiled.ok());
  if (!untiled.ok()) return {};
  ExpectSameBits(Floats(*got), Floats(*untiled), "tiled vs untiled kernel");

  cpu::CpuExecutor ref({.threads = 1});
  auto want = ref.Run(*c->plan, feeds);
  EXPECT_TRUE(want.ok());
  if (want.ok()) ExpectSameBits(Floats(*got), Floats(*want), "GPU vs reference");
  return Floats(*got);
}

Feeds StepFeed(float step) {
  return {{"step", HostTensor::FromFloats(MakeType({}), std::vector<float>{step})}};
}

TEST(TilingRandom, UniformOverTheCapRunsInTilesOfTheWholeTensorsIndices) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const uint32_t hash_seed = rng();
  const float step = static_cast<float>(rng() % 1000);
  const Json doc = {{"version", 3},
                    {"nodes",
                     {{{"id", 0}, {"op", "input"}, {"name", "step"}, {"shape", Json::array()}},
                      {{"id", 1},
                       {"op", "uniform"},
                       {"shape", {kRows, kCols}},
                       {"seed", hash_seed},
                       {"step", 0}}}},
                    {"outputs", {{{"name", "u"}, {"id", 1}}}}};
  const std::vector<float> got = RunTiled(doc, StepFeed(step), 29);
  ASSERT_EQ(got.size(), static_cast<size_t>(kElements));
  for (int64_t i = 0; i < kElements; ++i) {
    const float want = StreamUniform(hash_seed, StepNumber(step), static_cast<uint32_t>(i));
    ASSERT_EQ(got[i], want) << i;
  }
}

TEST(TilingRandom, DropoutOverTheCapRunsInTilesWithTheUntiledMask) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const uint32_t hash_seed = rng();
  const float step = static_cast<float>(rng() % 1000);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> x(kElements);
  for (float& f : x) f = u(rng);
  const double p = 0.3;
  const Json doc = {
      {"version", 3},
      {"nodes",
       {{{"id", 0}, {"op", "input"}, {"name", "step"}, {"shape", Json::array()}},
        {{"id", 1}, {"op", "input"}, {"name", "x"}, {"shape", {kRows, kCols}}},
        {{"id", 2}, {"op", "dropout"}, {"a", 1}, {"step", 0}, {"p", p}, {"seed", hash_seed}}}},
      {"outputs", {{{"name", "y"}, {"id", 2}}}}};
  Feeds feeds = StepFeed(step);
  feeds.emplace("x", HostTensor::FromFloats(MakeType({kRows, kCols}), x));
  // x and the output are over the cap: both windowed per tile, the step bound whole.
  const std::vector<float> got = RunTiled(doc, feeds, 29);
  ASSERT_EQ(got.size(), static_cast<size_t>(kElements));
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  const uint32_t threshold = static_cast<uint32_t>(std::ceil(p * 16777216.0));
  int64_t kept = 0;
  for (int64_t i = 0; i < kElements; ++i) {
    const bool keep =
        (StreamBits(hash_seed, StepNumber(step), static_cast<uint32_t>(i)) >> 8) >= threshold;
    kept += keep;
    ASSERT_EQ(got[i], keep ? x[i] * scale : 0.0f) << i;
  }
  // About 1 - p of the elements kept: the mask is not all ones or all zeros.
  EXPECT_NEAR(static_cast<double>(kept) / kElements, 1 - p, 0.02);
}

// A uniform read by one elementwise kernel is a step of that kernel (fuse-generators): tiled over
// the cap, each tile hashes its elements' indices in the whole tensor, as the uniform kernel did.
TEST(TilingRandom, UniformInlinedIntoItsReaderHashesTheWholeTensorsIndices) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const uint32_t hash_seed = rng();
  const float step = static_cast<float>(rng() % 1000);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> x(kElements);
  for (float& f : x) f = u(rng);
  // y = u < x ? x : -x, as an Ising update flips a spin where its draw is under the acceptance.
  const Json doc = {
      {"version", 3},
      {"nodes",
       {{{"id", 0}, {"op", "input"}, {"name", "step"}, {"shape", Json::array()}},
        {{"id", 1}, {"op", "input"}, {"name", "x"}, {"shape", {kRows, kCols}}},
        {{"id", 2}, {"op", "uniform"}, {"shape", {kRows, kCols}}, {"seed", hash_seed}, {"step", 0}},
        {{"id", 3}, {"op", "lt"}, {"a", 2}, {"b", 1}},
        {{"id", 4}, {"op", "neg"}, {"a", 1}},
        {{"id", 5}, {"op", "where"}, {"cond", 3}, {"a", 1}, {"b", 4}}}},
      {"outputs", {{{"name", "y"}, {"id", 5}}}}};
  Feeds feeds = StepFeed(step);
  feeds.emplace("x", HostTensor::FromFloats(MakeType({kRows, kCols}), x));
  auto gpu = Gpu(kCap);
  ASSERT_NE(gpu, nullptr);
  auto c = Compile(doc, *gpu);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  ASSERT_EQ(c->module->kernels.size(), 1u);
  EXPECT_EQ(c->module->kernels[0].name, "k0_fused_uniform_lt_neg_where");
  const std::vector<float> got = RunTiled(doc, feeds, 29);
  ASSERT_EQ(got.size(), static_cast<size_t>(kElements));
  int64_t flipped = 0;
  for (int64_t i = 0; i < kElements; ++i) {
    const bool under = StreamUniform(hash_seed, StepNumber(step), static_cast<uint32_t>(i)) < x[i];
    flipped += !under;
    ASSERT_EQ(got[i], under ? x[i] : -x[i]) << i;
  }
  // u < x for x uniform in [0, 1): about half.
  EXPECT_NEAR(static_cast<double>(flipped) / kElements, 0.5, 0.02);
}

}  // namespace
}  // namespace scellis::runtime::webgpu
