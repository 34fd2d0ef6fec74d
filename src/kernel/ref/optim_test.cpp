// The optimizer ops against the update rules documented for torch.optim.SGD, Adam and AdamW,
// written out by hand in double, over three steps (so the first-step rules and the bias
// corrections are both exercised). The ops run in float64 on the CPU reference; the states they
// output are fed back as the next step's inputs, as a training session does.
#include <gtest/gtest.h>

#include <cmath>

#include "base/random.h"
#include "execplan/plan.h"
#include "kernel/module.h"
#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"
#include "kernel/ref/graph_test.h"
#include "webir/op_rules.h"

namespace scellis::kernel::ref {
namespace {

using webir::Graph;
using webir::Node;
using testing::Input;
using testing::Op;

constexpr int64_t kSize = 7;
constexpr int kSteps = 3;

std::vector<double> Random(uint64_t seed) {
  std::vector<double> v(kSize);
  for (int64_t i = 0; i < kSize; ++i) v[i] = 2.0 * CounterUniform(seed, i) - 1.0 + 0.01;
  return v;
}

// Runs the graph's outputs for one step in float64.
std::vector<std::vector<double>> Run(const Graph& g,
                                     const runtime::cpu::ExactFeeds<double>& feeds) {
  pipeline::CompileOptions options;
  options.plan.budget_bytes = int64_t{1} << 30;
  auto compiled = pipeline::CompileGraph(g, options);
  EXPECT_TRUE(compiled.ok());
  auto out = runtime::cpu::RunPlan<double>(*compiled->plan, {}, Parallel(1), feeds);
  EXPECT_TRUE(out.ok());
  return out.value();
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, const char* what,
                int step) {
  for (int64_t i = 0; i < kSize; ++i)
    EXPECT_NEAR(got[i], want[i], 1e-14 * (1 + std::fabs(want[i])))
        << what << "[" << i << "] at step " << step;
}

struct SgdConfig {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

void CheckSgd(const SgdConfig& c) {
  SCOPED_TRACE("momentum " + std::to_string(c.momentum) + " nesterov " +
               std::to_string(c.nesterov));
  Json attrs = {{"lr", c.lr},
                {"momentum", c.momentum},
                {"dampening", c.dampening},
                {"weight_decay", c.weight_decay},
                {"nesterov", c.nesterov},
                {"maximize", c.maximize}};
  Graph g;
  int p = Input(g, "p", {kSize}), gr = Input(g, "g", {kSize}), vel = Input(g, "vel", {kSize});
  int t = Input(g, "t", {});
  g.outputs = {{"p", Op(g, "momentum_update", {p, gr, vel, t}, attrs)},
               {"vel", Op(g, "momentum_velocity", {p, gr, vel, t}, attrs)}};
  bool plain = c.momentum == 0 && c.dampening == 0 && !c.nesterov;
  if (plain) {
    Json sgd = {{"lr", c.lr}, {"weight_decay", c.weight_decay}, {"maximize", c.maximize}};
    g.outputs.push_back({"sgd", Op(g, "sgd_update", {p, gr}, sgd)});
  }

  std::vector<double> param = Random(1), buf(kSize, 123.0);  // the first step ignores buf
  std::vector<double> want_p = param, want_b(kSize, 0.0);
  for (int step = 1; step <= kSteps; ++step) {
    std::vector<double> grad = Random(100 + step);
    auto out = Run(g, {{"p", param}, {"g", grad}, {"vel", buf}, {"t", {double(step)}}});
    // torch.optim.SGD, as documented.
    for (int64_t i = 0; i < kSize; ++i) {
      double gt = c.maximize ? -grad[i] : grad[i];
      if (c.weight_decay != 0) gt += c.weight_decay * want_p[i];
      if (c.momentum != 0) {
        want_b[i] = step > 1 ? c.momentum * want_b[i] + (1 - c.dampening) * gt : gt;
        gt = c.nesterov ? gt + c.momentum * want_b[i] : want_b[i];
      }
      want_p[i] -= c.lr * gt;
    }
    ExpectNear(out[0], want_p, "param", step);
    if (c.momentum != 0) ExpectNear(out[1], want_b, "velocity", step);
    if (plain) ExpectNear(out[2], want_p, "sgd param", step);
    param = out[0];
    buf = out[1];
  }
}

TEST(OptimizerOps, SgdMatchesTorchRule) {
  CheckSgd({0.1, 0, 0, 0, false, false});
  CheckSgd({0.05, 0, 0, 0.01, false, true});
}

TEST(OptimizerOps, MomentumMatchesTorchRule) {
  CheckSgd({0.1, 0.9, 0, 0, false, false});
  CheckSgd({0.1, 0.9, 0.3, 0.02, false, false});
  CheckSgd({0.05, 0.8, 0, 0.01, true, false});
  CheckSgd({0.05, 0.5, 0.1, 0, false, true});
}

struct AdamConfig {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled, maximize;
};

void CheckAdam(const AdamConfig& c) {
  SCOPED_TRACE("weight_decay " + std::to_string(c.weight_decay) + " decoupled " +
               std::to_string(c.decoupled));
  Json attrs = {{"lr", c.lr},
                {"beta1", c.beta1},
                {"beta2", c.beta2},
                {"eps", c.eps},
                {"weight_decay", c.weight_decay},
                {"decoupled", c.decoupled},
                {"maximize", c.maximize}};
  Graph g;
  int p = Input(g, "p", {kSize}), gr = Input(g, "g", {kSize}), m = Input(g, "m", {kSize});
  int v = Input(g, "v", {kSize}), t = Input(g, "t", {});
  g.outputs = {{"p", Op(g, "adam_update", {p, gr, m, v, t}, attrs)},
               {"m", Op(g, "adam_m", {p, gr, m, v, t}, attrs)},
               {"v", Op(g, "adam_v", {p, gr, m, v, t}, attrs)}};

  std::vector<double> param = Random(2), mom(kSize, 0.0), sq(kSize, 0.0);
  std::vector<double> want_p = param, want_m = mom, want_v = sq;
  for (int step = 1; step <= kSteps; ++step) {
    std::vector<double> grad = Random(200 + step);
    auto out = Run(g, {{"p", param}, {"g", grad}, {"m", mom}, {"v", sq}, {"t", {double(step)}}});
    // torch.optim.Adam / AdamW, as documented.
    for (int64_t i = 0; i < kSize; ++i) {
      double gt = c.maximize ? -grad[i] : grad[i];
      if (c.weight_decay != 0) {
        if (c.decoupled)
          want_p[i] -= c.lr * c.weight_decay * want_p[i];
        else
          gt += c.weight_decay * want_p[i];
      }
      want_m[i] = c.beta1 * want_m[i] + (1 - c.beta1) * gt;
      want_v[i] = c.beta2 * want_v[i] + (1 - c.beta2) * gt * gt;
      double m_hat = want_m[i] / (1 - std::pow(c.beta1, step));
      double v_hat = want_v[i] / (1 - std::pow(c.beta2, step));
      want_p[i] -= c.lr * m_hat / (std::sqrt(v_hat) + c.eps);
    }
    ExpectNear(out[0], want_p, "param", step);
    ExpectNear(out[1], want_m, "m", step);
    ExpectNear(out[2], want_v, "v", step);
    param = out[0];
    mom = out[1];
    sq = out[2];
  }
}

TEST(OptimizerOps, AdamMatchesTorchRule) {
  CheckAdam({1e-3, 0.9, 0.999, 1e-8, 0, false, false});
  CheckAdam({1e-2, 0.8, 0.99, 1e-6, 0.1, false, false});
  CheckAdam({1e-2, 0.3, 0.9, 1e-8, 0, false, true});  // beta1 < 0.5: the other side of lerp
}

TEST(OptimizerOps, AdamWMatchesTorchRule) {
  CheckAdam({1e-3, 0.9, 0.999, 1e-8, 1e-2, true, false});
  CheckAdam({5e-2, 0.9, 0.95, 1e-8, 0.5, true, false});
}

TEST(OptimizerOps, AttributesGetTorchDefaults) {
  Graph g;
  int p = Input(g, "p", {2}), gr = Input(g, "g", {2}), m = Input(g, "m", {2});
  int v = Input(g, "v", {2}), t = Input(g, "t", {});
  int adamw = Op(g, "adam_update", {p, gr, m, v, t}, {{"decoupled", true}});
  EXPECT_EQ(g.at(adamw).attrs["weight_decay"].get<double>(), 1e-2);
  EXPECT_EQ(g.at(adamw).attrs["beta2"].get<double>(), 0.999);
  int adam = Op(g, "adam_update", {p, gr, m, v, t}, Json::object());
  EXPECT_EQ(g.at(adam).attrs["weight_decay"].get<double>(), 0.0);

  webir::InferContext c;
  c.args = {g.at(p).type, g.at(gr).type, g.at(m).type, g.at(t).type};
  c.attrs = {{"momentum", 0.9}, {"dampening", 0.1}, {"nesterov", true}};
  c.version = 2;
  auto bad = webir::FindRule("momentum_update")->infer(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors()[0].code, "bad-attribute");
}

}  // namespace
}  // namespace scellis::kernel::ref
