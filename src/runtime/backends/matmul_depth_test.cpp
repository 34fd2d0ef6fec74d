// The one-output matmul kernel with K staged 16, 32 and 64 deep: in debug every depth gives the CPU
// reference's bits on WebGPU (SwiftShader), where K is a multiple of the depth and where its last
// step is mostly padding, and the reference itself agrees with a float64 product.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "runtime/backends/backends_test.h"

namespace scellis::runtime {
namespace {

Json Product(int64_t m, int64_t k, int64_t n) {
  return {{"version", 1},
          {"nodes",
           {{{"id", 0}, {"op", "input"}, {"name", "a"}, {"shape", {m, k}}},
            {{"id", 1}, {"op", "input"}, {"name", "b"}, {"shape", {k, n}}},
            {{"id", 2}, {"op", "matmul"}, {"a", 0}, {"b", 1}}}},
          {"outputs", {{{"name", "y"}, {"id", 2}}}}};
}

Result<HostTensor> RunProduct(Executor& exec, const Json& doc, const Feeds& feeds,
                              const kernel::MatmulSchedule& schedule) {
  pipeline::CompileOptions o;
  o.matmul_schedule = schedule;
  o.lower.tier = policy::Tier::kDebug;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits = exec.limits();
  SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled c, pipeline::Compile(doc.dump(), o));
  EXPECT_EQ(c.module->kernels.at(0).matmul_schedule->Name(), schedule.Name());
  SCELLIS_ASSIGN_OR_RETURN(RunResult r, exec.Run(*c.plan, feeds));
  return r.outputs.at(0).second;
}

TEST(MatmulKDepth, EveryDepthGivesTheReferencesBits) {
  auto cpu = testing::Open("cpu");
  auto gpu = testing::Open("webgpu");
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(gpu, nullptr);
  std::mt19937 rng(20261203);
  std::uniform_real_distribution<double> u(-1, 1);
  // M and N past a 16 x 16 tile's edge; K a multiple of 64, and K leaving 47 of its last 64 as
  // padding.
  for (const auto& [m, k, n] : {std::array<int64_t, 3>{33, 128, 19}, {33, 81, 19}}) {
    std::vector<double> a(m * k), b(k * n);
    for (double& v : a) v = u(rng);
    for (double& v : b) v = u(rng);
    const Feeds feeds = {{"a", HostTensor::FromValues(MakeType({m, k}), a)},
                         {"b", HostTensor::FromValues(MakeType({k, n}), b)}};
    kernel::MatmulSchedule schedule;
    schedule.tile_m = schedule.tile_n = 16;
    schedule.block_m = schedule.block_n = 1;
    schedule.tile_k = 16;
    auto reference = RunProduct(*cpu, Product(m, k, n), feeds, schedule);
    ASSERT_TRUE(reference.ok()) << reference.errors().front().Format();
    // The reference against float64: f32 sums of K products of values in [-1, 1].
    const std::vector<float> y = reference->ToFloats();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double exact = 0;
        for (int64_t p = 0; p < k; ++p)
          exact += static_cast<double>(static_cast<float>(a[i * k + p])) *
                   static_cast<float>(b[p * n + j]);
        ASSERT_NEAR(y[i * n + j], exact, 1e-5 * k) << i << ", " << j;
      }
    // 16 x 16 tiles and the 8 x 8 ones of products with few rows.
    for (const auto& [side, depth] : {std::pair{16, 16}, {16, 32}, {16, 64}, {8, 8}, {8, 64}}) {
      schedule.tile_m = schedule.tile_n = side;
      schedule.tile_k = depth;
      auto got = RunProduct(*gpu, Product(m, k, n), feeds, schedule);
      ASSERT_TRUE(got.ok()) << got.errors().front().Format();
      ASSERT_EQ(got->bytes.size(), reference->bytes.size());
      EXPECT_EQ(std::memcmp(got->bytes.data(), reference->bytes.data(), got->bytes.size()), 0)
          << "K " << k << " in " << side << " x " << side << " tiles staged " << depth
          << " deep differs from the reference";
    }
  }
}

}  // namespace
}  // namespace scellis::runtime
