// A document-level `repeat`: the graph is a loop body run N times per step, its carries between
// iterations, in one submission on the GPU — and the executor that ran says so.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "api/run.h"
#include "support/seeded_stencil.h"

namespace scellis::api {
namespace {

constexpr int kRows = 13, kCols = 11;

// Jacobi sweeps for the Poisson problem on a grid with a zero boundary: u <- (the four neighbours
// of u + q) / 4, written as shifts, so each sweep is one fused kernel.
Json JacobiDocument(const std::vector<float>& u0, const std::vector<float>& q, int sweeps) {
  auto shift = [](int id, std::vector<int64_t> s) {
    return Json{{"id", id}, {"op", "shift"}, {"a", 0}, {"shifts", s}, {"boundary", "zero"}};
  };
  return {{"version", 5},
          {"repeat", sweeps},
          {"nodes",
           {{{"id", 0},
             {"op", "input"},
             {"name", "u"},
             {"shape", {kRows, kCols}},
             {"data", u0},
             {"carry", "u_next"}},
            {{"id", 1}, {"op", "input"}, {"name", "q"}, {"shape", {kRows, kCols}}, {"data", q}},
            shift(2, {1, 0}),
            shift(3, {-1, 0}),
            shift(4, {0, 1}),
            shift(5, {0, -1}),
            {{"id", 6}, {"op", "add"}, {"a", 2}, {"b", 3}},
            {{"id", 7}, {"op", "add"}, {"a", 6}, {"b", 4}},
            {{"id", 8}, {"op", "add"}, {"a", 7}, {"b", 5}},
            {{"id", 9}, {"op", "add"}, {"a", 8}, {"b", 1}},
            {{"id", 10}, {"op", "full"}, {"shape", Json::array()}, {"value", 0.25}},
            {{"id", 11}, {"op", "mul"}, {"a", 9}, {"b", 10}}}},
          {"outputs", {{{"name", "u_next"}, {"id", 11}}}}};
}

// The same sweeps in float64, written independently of the engine.
std::vector<double> JacobiSweeps(const std::vector<float>& u0, const std::vector<float>& q,
                                 int sweeps) {
  std::vector<double> u(u0.begin(), u0.end()), next(u.size());
  auto at = [&](int r, int c) {
    return r < 0 || r >= kRows || c < 0 || c >= kCols ? 0.0 : u[r * kCols + c];
  };
  for (int s = 0; s < sweeps; ++s) {
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kCols; ++c)
        next[r * kCols + c] =
            (at(r - 1, c) + at(r + 1, c) + at(r, c - 1) + at(r, c + 1) + q[r * kCols + c]) / 4;
    std::swap(u, next);
  }
  return u;
}

class Repeat : public testing::SeededStencilTest {
 protected:
  void SetUp() override {
    SeededStencilTest::SetUp();
    u0_ = Values(kRows * kCols);
    q_ = Values(kRows * kCols);
  }
  static RunOptions On(const std::string& backend, int steps = 1) {
    return SeededStencilTest::On(backend, policy::Tier::kProd, steps);
  }
  void ExpectJacobi(const RunReport& r, int sweeps) const {
    const std::vector<double> want = JacobiSweeps(u0_, q_, sweeps);
    const std::vector<float> got = ValuesOf(r.outputs.at(0).second);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i << ", seed " << seed_;
  }
  std::vector<float> u0_, q_;
};

TEST_F(Repeat, SweepsOnTheReferenceMatchFloat64) {
  const int sweeps = 40;
  auto r = api::Run(JacobiDocument(u0_, q_, sweeps).dump(), On("cpu"));
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  ExpectJacobi(*r, sweeps);
  EXPECT_EQ(r->stats["kernels"], 1);  // four shifts, four adds and a scale: one fused kernel
  EXPECT_EQ(r->stats["iterations"], sweeps);
  // Steps of a repeated graph: each step is `repeat` more sweeps.
  auto three = api::Run(JacobiDocument(u0_, q_, sweeps).dump(), On("cpu", 3));
  ASSERT_TRUE(three.ok()) << three.errors().front().Format();
  ExpectJacobi(*three, 3 * sweeps);
  EXPECT_EQ(three->stats["iterations"], 3 * sweeps);
}

// The fused encoder records every sweep into one submission (25 sweeps: five dispatches of five,
// temporally blocked); pinning the generic executor submits each dispatch alone and must give the
// same bits. A fusable loop that silently ran generic
// fails here.
TEST_F(Repeat, TheFusedEncoderRunsEverySweepInOneSubmission) {
  const int sweeps = 25;
  const std::string doc = JacobiDocument(u0_, q_, sweeps).dump();
  auto fused = api::Run(doc, On("webgpu"));
  ASSERT_TRUE(fused.ok()) << fused.errors().front().Format();
  EXPECT_EQ(fused->backend, "webgpu");
  EXPECT_EQ(fused->executor, "fused-encoder");
  EXPECT_FALSE(fused->fallback_reason.has_value());
  EXPECT_EQ(fused->stats["submissions"], 1);
  EXPECT_EQ(fused->stats["iterations_per_dispatch"], 5);
  EXPECT_EQ(fused->stats["dispatches"], sweeps / 5);
  ExpectJacobi(*fused, sweeps);

  RunOptions pinned = On("webgpu");
  pinned.executor = runtime::kGenericExecutor;
  auto generic = api::Run(doc, pinned);
  ASSERT_TRUE(generic.ok()) << generic.errors().front().Format();
  EXPECT_EQ(generic->executor, "generic");
  ASSERT_TRUE(generic->fallback_reason.has_value());
  EXPECT_NE(generic->fallback_reason->find("pinned"), std::string::npos);
  EXPECT_EQ(generic->stats["submissions"], sweeps / 5);
  EXPECT_EQ(generic->outputs.at(0).second.bytes, fused->outputs.at(0).second.bytes);

  // Many steps, each `sweeps` sweeps: every sweep of a step in one submission, the 4 steps sent
  // in chunks of 1, 1 and 2 as they are recorded.
  auto steps = api::Run(doc, On("webgpu", 4));
  ASSERT_TRUE(steps.ok()) << steps.errors().front().Format();
  EXPECT_EQ(steps->executor, "fused-encoder");
  EXPECT_EQ(steps->stats["submissions"], 3);
  EXPECT_EQ(steps->stats["dispatches"], 4 * sweeps / 5);
  ExpectJacobi(*steps, 4 * sweeps);
}

TEST_F(Repeat, RefusalsAreNamed) {
  Json no_carry = JacobiDocument(u0_, q_, 3);
  no_carry["nodes"][0].erase("carry");
  auto r = api::Run(no_carry.dump(), On("cpu"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().code, "repeat-without-carry");
  EXPECT_EQ(r.errors().front().pointer, "/repeat");

  Json old = JacobiDocument(u0_, q_, 3);
  old["version"] = 4;
  r = api::Run(old.dump(), On("cpu"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().code, "field-newer-than-version");

  RunOptions pinned = On("cpu");
  pinned.executor = runtime::kGenericExecutor;
  r = api::Run(JacobiDocument(u0_, q_, 3).dump(), pinned);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().code, "executor-unavailable");
}

}  // namespace
}  // namespace scellis::api
