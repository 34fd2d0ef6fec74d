// uniform and dropout (graph protocol version 3): the stated counter hash, bit for bit on the CPU
// reference and on SwiftShader, with the statistics a uniform stream and a dropout mask must have,
// and a fresh, reproducible mask for each step number.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "pipeline/compile.h"
#include "runtime/backends/select.h"
#include "runtime/backends/backends_test.h"

namespace scellis::runtime {
namespace {

using testing::Open;
using testing::PlanFor;

HostTensor Step(float t) {
  return HostTensor::FromFloats(MakeType({}), std::vector<float>{t});
}

// u = uniform([n], seed, step), d = dropout(ones([n]), p, seed, step); the step is fed.
Json RandomDoc(int64_t n, int64_t seed, double p) {
  return {{"version", 3},
          {"nodes",
           {{{"id", 0}, {"op", "input"}, {"name", "step"}, {"shape", Json::array()}},
            {{"id", 1}, {"op", "uniform"}, {"step", 0}, {"shape", {n}}, {"seed", seed}},
            {{"id", 2}, {"op", "full"}, {"shape", {n}}, {"value", 1}},
            {{"id", 3}, {"op", "dropout"}, {"a", 2}, {"step", 0}, {"p", p}, {"seed", seed}}}},
          {"outputs", {{{"name", "u"}, {"id", 1}}, {{"name", "d"}, {"id", 3}}}}};
}

// The first elements of seed 11 at step 0 (a NaN step counts as 0), worked out from the stated
// formula in Python integers by tools/special_value_expectations.py.
TEST(RandomOps, UniformIsTheStatedHash) {
  auto exec = Open("cpu");
  auto plan = PlanFor(RandomDoc(6, 11, 0.5), *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  auto r = exec->Run(*plan, {{"step", Step(NAN)}});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(r->outputs.at(0).second.ToFloats(),
            (std::vector<float>{0.4467312693595886f, 0.3105468153953552f, 0.33742421865463257f,
                                0.1768367886543274f, 0.0069296956062316895f, 0.6045043468475342f}));
}

TEST(RandomOps, ReferenceAndSwiftShaderGiveTheSameBits) {
  auto cpu = Open("cpu");
  auto gpu = Open("webgpu");
  ASSERT_NE(gpu, nullptr);
  // Past several workgroups and not a multiple of their size.
  const Json doc = RandomDoc(40961, 987654321, 0.3);
  auto cpu_plan = PlanFor(doc, *cpu);
  auto gpu_plan = PlanFor(doc, *gpu);
  ASSERT_TRUE(cpu_plan.ok() && gpu_plan.ok());
  for (float step : {1.0f, 2.0f, 1000.0f}) {
    SCOPED_TRACE(step);
    auto a = cpu->Run(*cpu_plan, {{"step", Step(step)}});
    auto b = gpu->Run(*gpu_plan, {{"step", Step(step)}});
    ASSERT_TRUE(a.ok() && b.ok());
    for (size_t k = 0; k < 2; ++k) {
      const HostTensor& x = a->outputs.at(k).second;
      const HostTensor& y = b->outputs.at(k).second;
      ASSERT_EQ(x.bytes.size(), y.bytes.size());
      EXPECT_EQ(std::memcmp(x.bytes.data(), y.bytes.data(), x.bytes.size()), 0)
          << a->outputs.at(k).first << " differs between the reference and SwiftShader";
    }
  }
}

// With n = 2^20 draws the standard error of the mean is 2.8e-4 and of a keep rate 4.5e-4; each
// bound below is at least 7 of them, so a sound hash passes and a biased or repeating one fails.
TEST(RandomOps, StatisticsOfTheStream) {
  auto exec = Open("cpu");
  const int64_t n = int64_t{1} << 20;
  const double p = 0.3;
  auto plan = PlanFor(RandomDoc(n, 5, p), *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  auto r = exec->Run(*plan, {{"step", Step(1)}});
  ASSERT_TRUE(r.ok());
  const std::vector<float> u = r->outputs.at(0).second.ToFloats();
  double sum = 0, sq = 0, lag = 0;
  std::vector<int64_t> bins(16, 0);
  for (size_t i = 0; i < u.size(); ++i) {
    ASSERT_TRUE(u[i] >= 0.0f && u[i] < 1.0f) << i;
    sum += u[i];
    sq += double(u[i]) * u[i];
    if (i) lag += (u[i] - 0.5) * (u[i - 1] - 0.5);
    ++bins[static_cast<size_t>(u[i] * 16)];
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.002);
  EXPECT_NEAR(var, 1.0 / 12, 0.001);
  EXPECT_NEAR(lag / (n - 1) / var, 0.0, 0.007);  // lag-1 correlation, standard error 1e-3
  for (int64_t b : bins) EXPECT_NEAR(double(b), n / 16.0, 1500.0);  // standard error 248

  // dropout of ones: kept elements are exactly 1 / (1 - p) in f32, the rest 0; kept where u >= p.
  const std::vector<float> d = r->outputs.at(1).second.ToFloats();
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  int64_t kept = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    ASSERT_TRUE(d[i] == 0.0f || d[i] == scale) << i << ": " << d[i];
    EXPECT_EQ(d[i] == scale, u[i] >= p) << i;
    kept += d[i] == scale;
  }
  EXPECT_NEAR(double(kept) / n, 1 - p, 0.003);
}

// Each step number draws a fresh mask; the same step draws the same one again.
TEST(RandomOps, EachStepDrawsAFreshReproducibleMask) {
  auto exec = Open("cpu");
  const int64_t n = 4096;
  auto plan = PlanFor(RandomDoc(n, 77, 0.5), *exec);
  ASSERT_TRUE(plan.ok());
  auto mask = [&](float step) {
    auto r = exec->Run(*plan, {{"step", Step(step)}});
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->outputs.at(1).second.ToFloats() : std::vector<float>{};
  };
  const std::vector<float> one = mask(1), two = mask(2), again = mask(1);
  EXPECT_EQ(one, again);
  int64_t differ = 0;
  for (int64_t i = 0; i < n; ++i) differ += one[i] != two[i];
  // Independent masks of p = 0.5 differ in half the elements (standard error 32).
  EXPECT_NEAR(double(differ), n / 2.0, 250.0);
}

}  // namespace
}  // namespace scellis::runtime
