// Whole-tensor f32 sums and means in the prod tier run wide (kernel::SumSchedule: a grid of
// chunks, then their partial sums) on Dawn over SwiftShader: within the `default` class of a
// float64 sum computed here, over counts that are not multiples of 4, 256 or a chunk; NaN and
// infinities propagate as the op says; the same bits on every run; debug keeps the reference's
// sums' bits. Likewise sums and means along a long last axis (one wide sum per row) and along a
// long axis with few outputs after it (column blocks). Inputs are fresh random values each run;
// the seed is printed on failure.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"
#include "runtime/backends/webgpu/executor.h"
#include "runtime/device_program.h"

namespace scellis::runtime::webgpu {
namespace {

WebGpuExecutor* Gpu() {
  static std::unique_ptr<WebGpuExecutor> gpu = [] {
    if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
      setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
    auto d = Device::Open({.allow_software_adapter = true});
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.errors().front().message);
    return d.ok() ? std::make_unique<WebGpuExecutor>(std::move(d.value())) : nullptr;
  }();
  return gpu.get();
}

// sum and mean of one input of `shape`: over every element, or along `axis`.
Json SumDoc(const std::vector<int64_t>& shape, std::optional<int> axis) {
  Json sum = {{"id", 1}, {"op", "sum"}, {"a", 0}}, mean = {{"id", 2}, {"op", "mean"}, {"a", 0}};
  if (axis) sum["axis"] = mean["axis"] = *axis;
  return {{"version", 3},
          {"nodes", {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", shape}}, sum, mean}},
          {"outputs", {{{"name", "sum"}, {"id", 1}}, {{"name", "mean"}, {"id", 2}}}}};
}

Result<pipeline::Compiled> Compile(const std::vector<int64_t>& shape, std::optional<int> axis,
                                   policy::Tier tier) {
  pipeline::CompileOptions o;
  o.lower.tier = tier;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits = Gpu()->limits();
  return pipeline::Compile(SumDoc(shape, axis).dump(), o);
}
Result<pipeline::Compiled> Compile(int64_t n, policy::Tier tier) {
  return Compile({n}, std::nullopt, tier);
}

// The sums' and the means' values of a run (one each for a whole-tensor sum, one per output along
// an axis).
std::array<std::vector<float>, 2> RunSums(const pipeline::Compiled& c,
                                          const std::vector<int64_t>& shape,
                                          const std::vector<float>& x) {
  auto r = Gpu()->Run(*c.plan, {{"x", HostTensor::FromFloats(MakeType(shape), x)}},
                      {.poison_outputs = true});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.errors().front().Format());
  if (!r.ok()) return {};
  std::array<std::vector<float>, 2> out;
  for (int i = 0; i < 2; ++i) {
    const auto v = r->outputs[i].second.view<float>();
    out[i].assign(v.begin(), v.end());
  }
  return out;
}

// The whole-tensor sum's and mean's values (as f32 bits) of a run.
std::array<float, 2> RunSum(const pipeline::Compiled& c, const std::vector<float>& x) {
  const auto out = RunSums(c, {static_cast<int64_t>(x.size())}, x);
  if (out[0].empty()) return {NAN, NAN};
  return {out[0][0], out[1][0]};
}

// Mixed signs and magnitudes (2^-20 to 2^20), so that any change of the order of additions shows
// in the bits.
std::vector<float> MixedMagnitudes(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = std::ldexp(u(rng), exponent(rng));
  return x;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// In debug the sums along `axis` keep the serial walk and give the CPU reference's bits. The sums
// only: a mean divides once at the end, and WGSL lets a GPU's f32 division be 2.5 ulp off
// (SwiftShader's is 1 ulp off for some divisors and values), which `default` holds.
void ExpectDebugSumsAreTheReferences(const std::vector<int64_t>& shape, int axis,
                                     const std::vector<float>& x) {
  auto debug = Compile(shape, axis, policy::Tier::kDebug);
  ASSERT_TRUE(debug.ok());
  for (const kernel::Kernel& k : debug->module->kernels) EXPECT_FALSE(k.sum_schedule);
  runtime::cpu::CpuExecutor cpu({.threads = 1});
  auto want = cpu.Run(*debug->plan, {{"x", HostTensor::FromFloats(MakeType(shape), x)}});
  ASSERT_TRUE(want.ok());
  const auto got = RunSums(*debug, shape, x);
  const auto ref = want->outputs[0].second.view<float>();
  ASSERT_EQ(got[0].size(), ref.size());
  for (size_t r = 0; r < ref.size(); ++r) EXPECT_EQ(Bits(got[0][r]), Bits(ref[r])) << "sum " << r;
}

// Counts around the vector (4), lane (256) and chunk (1024) widths, several chunks, and a count
// whose chunks take two passes of the lanes (2^21 + 12: 1025 chunks of 2048).
TEST(WideSum, ProdSumsAndMeansAreWithinTheirClassOfAFloat64Sum) {
  ASSERT_NE(Gpu(), nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 2);
  const policy::Thresholds within =
      policy::ResolveThresholds(policy::ToleranceClass::kDefault, policy::Tier::kProd);
  for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{255}, int64_t{257}, int64_t{4097},
                    int64_t{1000003}, (int64_t{1} << 21) + 12}) {
    SCOPED_TRACE("n " + std::to_string(n));
    auto c = Compile(n, policy::Tier::kProd);
    ASSERT_TRUE(c.ok()) << c.errors().front().Format();
    const kernel::SumSchedule want = kernel::SumSchedule::For(n);
    for (const kernel::Kernel& k : c->module->kernels) EXPECT_EQ(k.sum_schedule, want) << k.name;
    // Two dispatches per kernel where there are several chunks, else one.
    auto program = BuildDeviceProgram(*c->plan, {}, {});
    ASSERT_TRUE(program.ok());
    EXPECT_EQ(program->dispatches.size(), want.TwoStages() ? 4u : 2u);
    std::vector<float> x(static_cast<size_t>(n));
    double sum = 0;
    for (float& v : x) sum += v = u(rng);
    const auto [got_sum, got_mean] = RunSum(*c, x);
    EXPECT_TRUE(within.Accepts(got_sum, sum)) << got_sum << " vs " << sum;
    EXPECT_TRUE(within.Accepts(got_mean, sum / static_cast<double>(n)))
        << got_mean << " vs " << sum / static_cast<double>(n);
  }
}

TEST(WideSum, NanAndInfinitiesPropagateAsTheOpSays) {
  ASSERT_NE(Gpu(), nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t n = 5003;  // 5 chunks, the last ragged
  auto c = Compile(n, policy::Tier::kProd);
  ASSERT_TRUE(c.ok());
  std::uniform_int_distribution<int64_t> at(0, n - 1);
  // Each special value at a random place, and at the last element (the ragged vector's).
  for (int64_t place : {at(rng), n - 1}) {
    SCOPED_TRACE("at " + std::to_string(place));
    std::vector<float> x(static_cast<size_t>(n), 0.5f);
    x[static_cast<size_t>(place)] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(RunSum(*c, x)[0]));
    x[static_cast<size_t>(place)] = inf;
    EXPECT_EQ(RunSum(*c, x)[0], inf);
    EXPECT_EQ(RunSum(*c, x)[1], inf);
    x[static_cast<size_t>(place)] = -inf;
    EXPECT_EQ(RunSum(*c, x)[0], -inf);
    x[static_cast<size_t>((place + 1 + at(rng) % (n - 1)) % n)] = inf;  // +inf and -inf: NaN
    EXPECT_TRUE(std::isnan(RunSum(*c, x)[0]));
  }
}

TEST(WideSum, ProdGivesTheSameBitsOnEveryRunAndDebugTheReferences) {
  ASSERT_NE(Gpu(), nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t n = 300001;
  const std::vector<float> x = MixedMagnitudes(n, rng);
  auto prod = Compile(n, policy::Tier::kProd);
  ASSERT_TRUE(prod.ok());
  const auto first = RunSum(*prod, x);
  for (int run = 0; run < 3; ++run) {
    const auto again = RunSum(*prod, x);
    EXPECT_EQ(Bits(again[0]), Bits(first[0]));
    EXPECT_EQ(Bits(again[1]), Bits(first[1]));
  }
  auto debug = Compile(n, policy::Tier::kDebug);
  ASSERT_TRUE(debug.ok());
  for (const kernel::Kernel& k : debug->module->kernels) EXPECT_FALSE(k.sum_schedule);
  runtime::cpu::CpuExecutor cpu({.threads = 1});
  auto want = cpu.Run(*debug->plan, {{"x", HostTensor::FromFloats(MakeType({n}), x)}});
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(Bits(RunSum(*debug, x)[0]), Bits(want->outputs[0].second.view<float>()[0]));
}

// Lines of 5000 (a multiple of 4: vec4 loads) and 4099 (odd: f32 loads, a ragged last vector)
// elements, 5 chunks of 1024 each, over 3 and 14 rows.
TEST(WideAxisSum, ProdSumsAndMeansAlongTheLastAxisAreWithinTheirClassOfFloat64Sums) {
  ASSERT_NE(Gpu(), nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 2);
  const policy::Thresholds within =
      policy::ResolveThresholds(policy::ToleranceClass::kDefault, policy::Tier::kProd);
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{3, 5000}, std::vector<int64_t>{2, 7, 4099}}) {
    const int64_t len = shape.back(), rows = MakeType(shape).elements() / len;
    SCOPED_TRACE("rows " + std::to_string(rows) + " len " + std::to_string(len));
    auto c = Compile(shape, static_cast<int>(shape.size()) - 1, policy::Tier::kProd);
    ASSERT_TRUE(c.ok()) << c.errors().front().Format();
    for (const kernel::Kernel& k : c->module->kernels)
      EXPECT_EQ(k.sum_schedule, kernel::SumSchedule::For(len, rows)) << k.name;
    auto program = BuildDeviceProgram(*c->plan, {}, {});
    ASSERT_TRUE(program.ok());
    EXPECT_EQ(program->dispatches.size(), 4u);  // chunks, then rows, for each of the two
    std::vector<float> x(static_cast<size_t>(rows * len));
    for (float& v : x) v = u(rng);
    const auto got = RunSums(*c, shape, x);
    ASSERT_EQ(got[0].size(), static_cast<size_t>(rows));
    ASSERT_EQ(got[1].size(), static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += x[static_cast<size_t>(r * len + j)];
      EXPECT_TRUE(within.Accepts(got[0][r], sum))
          << "row " << r << ": " << got[0][r] << " vs " << sum;
      const double mean = sum / static_cast<double>(len);
      EXPECT_TRUE(within.Accepts(got[1][r], mean))
          << "row " << r << ": " << got[1][r] << " vs " << mean;
    }
  }
}

TEST(WideAxisSum, ProdGivesTheSameBitsOnEveryRunAndDebugTheReferences) {
  ASSERT_NE(Gpu(), nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<int64_t> shape = {2, 7, 4099};
  const std::vector<float> x = MixedMagnitudes(MakeType(shape).elements(), rng);
  auto prod = Compile(shape, static_cast<int>(shape.size()) - 1, policy::Tier::kProd);
  ASSERT_TRUE(prod.ok());
  const auto first = RunSums(*prod, shape, x);
  ASSERT_EQ(first[0].size(), 14u);
  const auto again = RunSums(*prod, shape, x);
  for (int i = 0; i < 2; ++i)
    for (size_t r = 0; r < first[i].size(); ++r)
      EXPECT_EQ(Bits(again[i][r]), Bits(first[i][r])) << "output " << i << " row " << r;
  ExpectDebugSumsAreTheReferences(shape, static_cast<int>(shape.size()) - 1, x);
}

// Sums and means along an axis with elements after it, few outputs (columns): 16 columns of a
// [4096, 16], 300 of [3, 1500, 300] (5 blocks of 64, the last ragged) and 3 of [2, 1100, 3] (a
// block of 4, one idle), against float64 sums of each column.
TEST(WideColumnSum, ProdSumsAndMeansOfColumnsAreWithinTheirClassOfFloat64Sums) {
  ASSERT_NE(Gpu(), nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 2);
  const policy::Thresholds within =
      policy::ResolveThresholds(policy::ToleranceClass::kDefault, policy::Tier::kProd);
  for (const auto& [shape, axis] : std::vector<std::pair<std::vector<int64_t>, int>>{
           {{4096, 16}, 0}, {{3, 1500, 300}, 1}, {{2, 1100, 3}, 1}}) {
    const int64_t len = shape[axis],
                  inner = axis + 1 < static_cast<int>(shape.size()) ? shape.back() : 1;
    const int64_t outer = MakeType(shape).elements() / (len * inner);
    SCOPED_TRACE(MakeType(shape).ShapeStringWithSizes());
    auto c = Compile(shape, axis, policy::Tier::kProd);
    ASSERT_TRUE(c.ok()) << c.errors().front().Format();
    for (const kernel::Kernel& k : c->module->kernels) {
      ASSERT_TRUE(k.sum_schedule) << k.name;
      EXPECT_EQ(k.sum_schedule->inner, inner);
    }
    std::vector<float> x(static_cast<size_t>(MakeType(shape).elements()));
    for (float& v : x) v = u(rng);
    const auto got = RunSums(*c, shape, x);
    ASSERT_EQ(got[0].size(), static_cast<size_t>(outer * inner));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t col = 0; col < inner; ++col) {
        double sum = 0;
        for (int64_t j = 0; j < len; ++j)
          sum += x[static_cast<size_t>((o * len + j) * inner + col)];
        const size_t at = static_cast<size_t>(o * inner + col);
        EXPECT_TRUE(within.Accepts(got[0][at], sum))
            << "output " << at << ": " << got[0][at] << " vs " << sum;
        const double mean = sum / static_cast<double>(len);
        EXPECT_TRUE(within.Accepts(got[1][at], mean)) << "output " << at;
      }
  }
}

TEST(WideColumnSum, ProdGivesTheSameBitsOnEveryRunAndDebugTheReferences) {
  ASSERT_NE(Gpu(), nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<int64_t> shape = {3, 1500, 300};
  const std::vector<float> x = MixedMagnitudes(MakeType(shape).elements(), rng);
  auto prod = Compile(shape, 1, policy::Tier::kProd);
  ASSERT_TRUE(prod.ok());
  const auto first = RunSums(*prod, shape, x);
  ASSERT_EQ(first[0].size(), 900u);
  const auto again = RunSums(*prod, shape, x);
  for (int i = 0; i < 2; ++i)
    for (size_t r = 0; r < first[i].size(); ++r)
      EXPECT_EQ(Bits(again[i][r]), Bits(first[i][r])) << "output " << i << " element " << r;
  ExpectDebugSumsAreTheReferences(shape, 1, x);
}

}  // namespace
}  // namespace scellis::runtime::webgpu
