// Temporal blocking of a repeated stencil body: several iterations per dispatch over tiles with
// recomputed halos must give exactly what one dispatch per iteration gives, for every boundary,
// on grids that are not multiples of the tile and grids smaller than the halo — and the plan says
// what it chose or why it could not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "api/run.h"
#include "pipeline/compile.h"
#include "support/seeded_stencil.h"

namespace scellis::api {
namespace {

// u <- u + 0.2 * (the four neighbours of u - 4u) + q: heat with a source, every read of u a shift
// with `boundary`, each iteration one fused kernel.
Json HeatDocument(int rows, int cols, const std::vector<float>& u0, const std::vector<float>& q,
                  int iterations, const std::string& boundary) {
  auto shift = [&](int id, std::vector<int64_t> s) {
    return Json{{"id", id}, {"op", "shift"}, {"a", 0}, {"shifts", s}, {"boundary", boundary}};
  };
  return {{"version", 5},
          {"repeat", iterations},
          {"nodes",
           {{{"id", 0},
             {"op", "input"},
             {"name", "u"},
             {"shape", {rows, cols}},
             {"data", u0},
             {"carry", "u_next"}},
            {{"id", 1}, {"op", "input"}, {"name", "q"}, {"shape", {rows, cols}}, {"data", q}},
            shift(2, {1, 0}),
            shift(3, {-1, 0}),
            shift(4, {0, 1}),
            shift(5, {0, -1}),
            {{"id", 6}, {"op", "add"}, {"a", 2}, {"b", 3}},
            {{"id", 7}, {"op", "add"}, {"a", 6}, {"b", 4}},
            {{"id", 8}, {"op", "add"}, {"a", 7}, {"b", 5}},
            {{"id", 9}, {"op", "full"}, {"shape", Json::array()}, {"value", 4}},
            {{"id", 10}, {"op", "mul"}, {"a", 0}, {"b", 9}},
            {{"id", 11}, {"op", "sub"}, {"a", 8}, {"b", 10}},
            {{"id", 12}, {"op", "full"}, {"shape", Json::array()}, {"value", 0.2}},
            {{"id", 13}, {"op", "mul"}, {"a", 11}, {"b", 12}},
            {{"id", 14}, {"op", "add"}, {"a", 0}, {"b", 13}},
            {{"id", 15}, {"op", "add"}, {"a", 14}, {"b", 1}}}},
          {"outputs", {{{"name", "u_next"}, {"id", 15}}}}};
}

// The same iterations in float64, the boundary applied as the op's documentation states.
std::vector<double> HeatOracle(int rows, int cols, const std::vector<float>& u0,
                               const std::vector<float>& q, int iterations,
                               const std::string& boundary) {
  std::vector<double> u(u0.begin(), u0.end()), next(u.size());
  auto at = [&](int r, int c) {
    if (boundary == "wrap") return u[((r + rows) % rows) * cols + (c + cols) % cols];
    if (boundary == "clamp")
      return u[std::clamp(r, 0, rows - 1) * cols + std::clamp(c, 0, cols - 1)];
    return r < 0 || r >= rows || c < 0 || c >= cols ? 0.0 : u[r * cols + c];
  };
  for (int s = 0; s < iterations; ++s) {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        next[r * cols + c] = u[r * cols + c] +
                             0.2 * (at(r - 1, c) + at(r + 1, c) + at(r, c - 1) + at(r, c + 1) -
                                    4 * u[r * cols + c]) +
                             q[r * cols + c];
    std::swap(u, next);
  }
  return u;
}

Json LifeDocument(int rows, int cols, const std::vector<float>& cells, int generations) {
  return {{"version", 5},
          {"repeat", generations},
          {"nodes",
           {{{"id", 0},
             {"op", "input"},
             {"name", "grid"},
             {"shape", {rows, cols}},
             {"data", cells},
             {"carry", "next"}},
            {{"id", 1}, {"op", "life"}, {"a", 0}}}},
          {"outputs", {{{"name", "next"}, {"id", 1}}}}};
}

std::vector<float> LifeOracle(int rows, int cols, std::vector<float> g, int generations) {
  std::vector<float> next(g.size());
  for (int s = 0; s < generations; ++s) {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        int n = 0;
        for (int dr = -1; dr <= 1; ++dr)
          for (int dc = -1; dc <= 1; ++dc)
            if (dr || dc) n += g[((r + dr + rows) % rows) * cols + (c + dc + cols) % cols] > 0.5f;
        const bool alive = g[r * cols + c] > 0.5f;
        next[r * cols + c] = n == 3 || (alive && n == 2) ? 1.0f : 0.0f;
      }
    std::swap(g, next);
  }
  return g;
}

class TemporalBlocking : public testing::SeededStencilTest {
 protected:
  static RunOptions On(const std::string& backend, bool blocked, policy::Tier tier) {
    return SeededStencilTest::On(backend, tier, 1, blocked ? "" : "block-temporally");
  }
};

TEST_F(TemporalBlocking, HeatBlockedEqualsUnblockedBitForBitOnEveryBoundary) {
  // 70×45 spans three by two 32×32 tiles with ragged edges; 5×3 is smaller than the halo, so a
  // block holds the whole grid several times over (wrap) or mostly cells off the grid.
  for (auto [rows, cols] : {std::pair{70, 45}, std::pair{5, 3}}) {
    for (const std::string boundary : {"zero", "wrap", "clamp"}) {
      SCOPED_TRACE(boundary + " " + std::to_string(rows) + "x" + std::to_string(cols) + ", seed " +
                   std::to_string(seed_));
      const int iterations = 24;  // 8 per dispatch, 3 dispatches
      const std::vector<float> u0 = Values(rows * cols, -1, 1),
                               q = Values(rows * cols, -0.01f, 0.01f);
      const std::string doc = HeatDocument(rows, cols, u0, q, iterations, boundary).dump();
      auto blocked = api::Run(doc, On("webgpu", true, policy::Tier::kDebug));
      ASSERT_TRUE(blocked.ok()) << blocked.errors().front().Format();
      EXPECT_EQ(blocked->stats["iterations_per_dispatch"], 8);
      EXPECT_EQ(blocked->stats["dispatches"], 3);
      EXPECT_EQ(blocked->stats["submissions"], 1);
      auto unblocked = api::Run(doc, On("webgpu", false, policy::Tier::kDebug));
      ASSERT_TRUE(unblocked.ok()) << unblocked.errors().front().Format();
      EXPECT_EQ(unblocked->stats["iterations_per_dispatch"], 1);
      EXPECT_EQ(unblocked->stats["dispatches"], iterations);
      EXPECT_EQ(blocked->outputs.at(0).second.bytes, unblocked->outputs.at(0).second.bytes);

      const std::vector<double> want = HeatOracle(rows, cols, u0, q, iterations, boundary);
      const std::vector<float> got = ValuesOf(blocked->outputs.at(0).second);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << "element " << i;
    }
  }
}

TEST_F(TemporalBlocking, LifeBlockedIsExact) {
  const int rows = 40, cols = 37, generations = 16;
  std::vector<float> cells = Values(rows * cols, 0, 1);
  for (float& c : cells) c = c < 0.35f ? 1.0f : 0.0f;
  const std::string doc = LifeDocument(rows, cols, cells, generations).dump();
  auto blocked = api::Run(doc, On("webgpu", true, policy::Tier::kProd));
  ASSERT_TRUE(blocked.ok()) << blocked.errors().front().Format();
  EXPECT_EQ(blocked->stats["iterations_per_dispatch"], 8);
  EXPECT_EQ(ValuesOf(blocked->outputs.at(0).second), LifeOracle(rows, cols, cells, generations))
      << "seed " << seed_;
}

// The plan shows the blocking it chose, or why it did not block.
TEST_F(TemporalBlocking, ThePlanSaysWhatItChoseOrWhyNot) {
  const std::vector<float> u0 = Values(64 * 64, -1, 1), q = Values(64 * 64, 0, 1);
  auto kernels = [&](const Json& doc) {
    pipeline::CompileOptions o;
    o.up_to = pipeline::Rung::kKernel;
    o.lower.tier = policy::Tier::kProd;
    auto c = pipeline::Compile(doc.dump(), o);
    EXPECT_TRUE(c.ok()) << c.errors().front().Format();
    return c.ok() ? kernel::Print(*c->module) : std::string();
  };
  std::string printed = kernels(HeatDocument(64, 64, u0, q, 512, "zero"));
  EXPECT_NE(printed.find("temporal blocking: 8 iterations per dispatch, 32x32 tiles, halo 8, "
                         "grid 2x2"),
            std::string::npos)
      << printed;
  // 1000 generations: 8 divides it. A prime count has no divisor to block by.
  EXPECT_NE(kernels(LifeDocument(64, 64, u0, 1000)).find("8 iterations per dispatch"),
            std::string::npos);
  EXPECT_NE(kernels(HeatDocument(64, 64, u0, q, 13, "wrap"))
                .find("not temporally blocked: no count of iterations from 2 to 8 divides the "
                      "loop's 13"),
            std::string::npos);
  Json mixed = HeatDocument(64, 64, u0, q, 16, "zero");
  mixed["nodes"][2]["boundary"] = "wrap";
  EXPECT_NE(kernels(mixed).find("shifted with both `wrap` and `zero` boundaries"),
            std::string::npos);
}

}  // namespace
}  // namespace scellis::api
