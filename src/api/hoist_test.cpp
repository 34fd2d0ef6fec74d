// Loop-invariant hoisting end to end: a loop body whose invariant runs once per step before the
// first iteration gives the bits of the plan that recomputes it every iteration, on the CPU
// reference and on WebGPU (fused and generic), in the debug tier — and a body that is one stencil
// kernel once its invariant is hoisted is temporally blocked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "api/run.h"
#include "pipeline/compile.h"
#include "support/seeded_stencil.h"

namespace scellis::api {
namespace {

constexpr int kRows = 19, kCols = 23;

// w = 0.1 exp(q) + q[i-1, j] is invariant, read by the body at the cell and shifted (so it is a
// kernel of its own); the body is u <- (the four neighbours of u + w[i, j] + w[i, j-1]) / 4.
Json Document(const std::vector<float>& u0, const std::vector<float>& q, int iterations) {
  auto shift = [](int id, int of, std::vector<int64_t> s) {
    return Json{{"id", id}, {"op", "shift"}, {"a", of}, {"shifts", s}, {"boundary", "zero"}};
  };
  auto op = [](int id, const char* name, int a, int b) {
    return Json{{"id", id}, {"op", name}, {"a", a}, {"b", b}};
  };
  auto full = [](int id, double value) {
    return Json{{"id", id}, {"op", "full"}, {"shape", Json::array()}, {"value", value}};
  };
  return {{"version", 5},
          {"repeat", iterations},
          {"nodes",
           {{{"id", 0},
             {"op", "input"},
             {"name", "u"},
             {"shape", {kRows, kCols}},
             {"data", u0},
             {"carry", "u_next"}},
            {{"id", 1}, {"op", "input"}, {"name", "q"}, {"shape", {kRows, kCols}}, {"data", q}},
            {{"id", 2}, {"op", "exp"}, {"a", 1}},
            full(3, 0.1),
            op(4, "mul", 2, 3),
            shift(5, 1, {1, 0}),
            op(6, "add", 4, 5),  // w
            shift(7, 0, {1, 0}),
            shift(8, 0, {-1, 0}),
            shift(9, 0, {0, 1}),
            shift(10, 0, {0, -1}),
            op(11, "add", 7, 8),
            op(12, "add", 11, 9),
            op(13, "add", 12, 10),
            op(14, "add", 13, 6),
            shift(15, 6, {0, 1}),
            op(16, "add", 14, 15),
            full(17, 0.25),
            op(18, "mul", 16, 17)}},
          {"outputs", {{{"name", "u_next"}, {"id", 18}}}}};
}

std::vector<double> Oracle(const std::vector<float>& u0, const std::vector<float>& q,
                           int iterations) {
  auto at = [](const std::vector<double>& a, int r, int c) {
    return r < 0 || r >= kRows || c < 0 || c >= kCols ? 0.0 : a[r * kCols + c];
  };
  std::vector<double> qd(q.begin(), q.end()), w(q.size());
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c)
      w[r * kCols + c] = 0.1 * std::exp(qd[r * kCols + c]) + at(qd, r - 1, c);
  std::vector<double> u(u0.begin(), u0.end()), next(u.size());
  for (int s = 0; s < iterations; ++s) {
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kCols; ++c)
        next[r * kCols + c] = (at(u, r - 1, c) + at(u, r + 1, c) + at(u, r, c - 1) +
                               at(u, r, c + 1) + w[r * kCols + c] + at(w, r, c - 1)) /
                              4;
    std::swap(u, next);
  }
  return u;
}

class Hoist : public testing::SeededStencilTest {
 protected:
  void SetUp() override {
    SeededStencilTest::SetUp();
    u0_ = Values(kRows * kCols);
    q_ = Values(kRows * kCols);
  }
  static RunOptions On(const std::string& backend, bool hoisted, int steps = 1) {
    return SeededStencilTest::On(backend, policy::Tier::kDebug, steps,
                                 hoisted ? "" : "hoist-loop-invariants");
  }
  void ExpectOracle(const RunReport& r, int iterations) const {
    const std::vector<double> want = Oracle(u0_, q_, iterations);
    const std::vector<float> got = ValuesOf(r.outputs.at(0).second);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-4) << "element " << i << ", seed " << seed_;
  }
  std::vector<float> u0_, q_;
};

TEST_F(Hoist, TheReferenceGivesTheUnhoistedBits) {
  const int iterations = 12;
  const std::string doc = Document(u0_, q_, iterations).dump();
  for (int steps : {1, 3}) {
    SCOPED_TRACE("steps " + std::to_string(steps) + ", seed " + std::to_string(seed_));
    auto hoisted = api::Run(doc, On("cpu", true, steps));
    ASSERT_TRUE(hoisted.ok()) << hoisted.errors().front().Format();
    auto plain = api::Run(doc, On("cpu", false, steps));
    ASSERT_TRUE(plain.ok()) << plain.errors().front().Format();
    EXPECT_EQ(hoisted->outputs.at(0).second.bytes, plain->outputs.at(0).second.bytes);
    ExpectOracle(*hoisted, steps * iterations);
  }
}

TEST_F(Hoist, OnWebGpuTheInvariantRunsOncePerStepAndTheBodyIsBlocked) {
  const int iterations = 12;  // 6 per dispatch once blocked
  const std::string doc = Document(u0_, q_, iterations).dump();
  for (int steps : {1, 3}) {
    SCOPED_TRACE("steps " + std::to_string(steps) + ", seed " + std::to_string(seed_));
    auto hoisted = api::Run(doc, On("webgpu", true, steps));
    ASSERT_TRUE(hoisted.ok()) << hoisted.errors().front().Format();
    EXPECT_EQ(hoisted->executor, "fused-encoder");
    // Steps are sent in chunks of 1, 1, 2, ... as they are recorded.
    EXPECT_EQ(hoisted->stats["submissions"], steps == 1 ? 1 : 3);
    EXPECT_EQ(hoisted->stats["iterations_per_dispatch"], 6);
    EXPECT_EQ(hoisted->stats["dispatches"], steps * (1 + iterations / 6));
    ExpectOracle(*hoisted, steps * iterations);

    // Unhoisted, the body is two kernels: not blocked, both every iteration.
    auto plain = api::Run(doc, On("webgpu", false, steps));
    ASSERT_TRUE(plain.ok()) << plain.errors().front().Format();
    EXPECT_EQ(plain->stats["iterations_per_dispatch"], 1);
    EXPECT_EQ(plain->stats["dispatches"], steps * 2 * iterations);
    EXPECT_EQ(hoisted->outputs.at(0).second.bytes, plain->outputs.at(0).second.bytes);

    RunOptions generic = On("webgpu", true, steps);
    generic.executor = runtime::kGenericExecutor;
    auto pinned = api::Run(doc, generic);
    ASSERT_TRUE(pinned.ok()) << pinned.errors().front().Format();
    EXPECT_EQ(pinned->outputs.at(0).second.bytes, hoisted->outputs.at(0).second.bytes);
  }
}

// The kernel rung and the plan say which kernels are hoisted; the hoisted value's buffer is its
// own for the whole loop (no body value reuses it).
TEST_F(Hoist, ThePlanShowsTheHoistedKernelAndKeepsItsBuffer) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kDebug;
  o.plan.budget_bytes = int64_t{1} << 32;
  auto c = pipeline::Compile(Document(u0_, q_, 12).dump(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  const std::string kernels = pipeline::PrintRung(*c, pipeline::Rung::kKernel);
  EXPECT_NE(kernels.find("k0_fused_exp_mul_shift_add: %"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("hoisted"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("temporal blocking: 6 iterations per dispatch"), std::string::npos)
      << kernels;
  const std::string plan = pipeline::PrintRung(*c, pipeline::Rung::kExecplan);
  EXPECT_NE(plan.find("2 kernels (1 hoisted: once per step, before the loop)"), std::string::npos)
      << plan;
  const execplan::Plan& p = *c->plan;
  const int w = c->module->kernels[0].output;
  EXPECT_EQ(p.lifetimes[w].last_read, 1);  // the body's last step, every iteration
  for (int node : p.buffers[p.buffer_of[w]].values) EXPECT_EQ(node, w);
}

}  // namespace
}  // namespace scellis::api
