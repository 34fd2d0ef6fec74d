// The one-output matmul kernel with K staged 16, 32 and 64 deep: in debug every depth gives the CPU
// reference's bits on WebGPU (SwiftShader), where K is a multiple of the depth and where its last
// step is mostly padding, with either operand transposed too, and the reference itself agrees with
// a float64 product.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include "runtime/backends/backends_test.h"

namespace scellis::runtime {
namespace {

// a @ b, or a^T @ b, a @ b^T, a^T @ b^T: a transposed operand is fed as stored (K x M for A,
// N x K for B) and its transpose folded into the product, which then reads it along the other axis.
Json Product(int64_t m, int64_t k, int64_t n, bool ta = false, bool tb = false) {
  Json nodes = {{{"id", 0},
                 {"op", "input"},
                 {"name", "a"},
                 {"shape", ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}}},
                {{"id", 1},
                 {"op", "input"},
                 {"name", "b"},
                 {"shape", tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}}}};
  int a = 0, b = 1, id = 2;
  if (ta) nodes.push_back({{"id", id}, {"op", "transpose"}, {"a", std::exchange(a, id++)}});
  if (tb) nodes.push_back({{"id", id}, {"op", "transpose"}, {"a", std::exchange(b, id++)}});
  nodes.push_back({{"id", id}, {"op", "matmul"}, {"a", a}, {"b", b}});
  return {{"version", 1}, {"nodes", nodes}, {"outputs", {{{"name", "y"}, {"id", id}}}}};
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

// One product's reference on the CPU, checked against float64, then every tile and depth of the
// one-output kernel on WebGPU against the reference's bits.
void ExpectEveryDepthGivesTheReferencesBits(int64_t m, int64_t k, int64_t n, bool ta, bool tb,
                                            std::mt19937& rng) {
  auto cpu = testing::Open("cpu");
  auto gpu = testing::Open("webgpu");
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(gpu, nullptr);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> a(m * k), b(k * n);  // as stored
  for (double& v : a) v = u(rng);
  for (double& v : b) v = u(rng);
  const Feeds feeds = {
      {"a", HostTensor::FromValues(
                MakeType(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}), a)},
      {"b", HostTensor::FromValues(
                MakeType(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}), b)}};
  auto a_at = [&](int64_t i, int64_t p) {
    return static_cast<float>(ta ? a[p * m + i] : a[i * k + p]);
  };
  auto b_at = [&](int64_t p, int64_t j) {
    return static_cast<float>(tb ? b[j * k + p] : b[p * n + j]);
  };
  const std::string way = std::string(ta ? "A^T" : "A") + " @ " + (tb ? "B^T" : "B");
  kernel::MatmulSchedule schedule;
  schedule.tile_m = schedule.tile_n = 16;
  schedule.block_m = schedule.block_n = 1;
  schedule.tile_k = 16;
  const Json doc = Product(m, k, n, ta, tb);
  auto reference = RunProduct(*cpu, doc, feeds, schedule);
  ASSERT_TRUE(reference.ok()) << reference.errors().front().Format();
  // The reference against float64: f32 sums of K products of values in [-1, 1].
  const std::vector<float> y = reference->ToFloats();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double exact = 0;
      for (int64_t p = 0; p < k; ++p) exact += static_cast<double>(a_at(i, p)) * b_at(p, j);
      ASSERT_NEAR(y[i * n + j], exact, 1e-5 * k) << way << " " << i << ", " << j;
    }
  // 16 x 16 tiles and the 8 x 8 ones of products with few rows.
  for (const auto& [side, depth] : {std::pair{16, 16}, {16, 32}, {16, 64}, {8, 8}, {8, 64}}) {
    schedule.tile_m = schedule.tile_n = side;
    schedule.tile_k = depth;
    auto got = RunProduct(*gpu, doc, feeds, schedule);
    ASSERT_TRUE(got.ok()) << got.errors().front().Format();
    ASSERT_EQ(got->bytes.size(), reference->bytes.size());
    EXPECT_EQ(std::memcmp(got->bytes.data(), reference->bytes.data(), got->bytes.size()), 0)
        << way << ", K " << k << " in " << side << " x " << side << " tiles staged " << depth
        << " deep differs from the reference";
  }
}

TEST(MatmulKDepth, EveryDepthGivesTheReferencesBits) {
  std::mt19937 rng(20261203);
  // M and N past a 16 x 16 tile's edge; K a multiple of 64, and K leaving 47 of its last 64 as
  // padding.
  for (const auto& [m, k, n] : {std::array<int64_t, 3>{33, 128, 19}, {33, 81, 19}})
    ExpectEveryDepthGivesTheReferencesBits(m, k, n, false, false, rng);
}

// A transposed operand (a weight's gradient, x^T @ dy) is loaded by invocations neighbouring along
// its contiguous axis into the same tiles, so the sums and their bits do not change.
TEST(MatmulKDepth, TransposedOperandsGiveTheReferencesBits) {
  std::mt19937 rng(20261206);
  for (const auto& [ta, tb] : {std::pair{true, false}, {false, true}, {true, true}})
    ExpectEveryDepthGivesTheReferencesBits(37, 81, 21, ta, tb, rng);
}

}  // namespace
}  // namespace scellis::runtime
