// The version-2 training ops written in the plain-data graph protocol: nodes name their inputs by
// id in the fields the protocol reserves (a, b, target, param, grad, m, v, velocity, t).
#include <gtest/gtest.h>

#include "runtime/backends/cpu/executor.h"
#include "pipeline/compile.h"

namespace scellis::pipeline {
namespace {

TEST(GraphProtocolV2, CrossEntropyAndAdamNodes) {
  const char* doc = R"({"version": 2, "determinism": "debug", "nodes": [
    {"id": 0, "op": "input", "shape": [2, 3], "data": [1, 2, 3, 1, 1, 1]},
    {"id": 1, "op": "input", "shape": [2], "data": [2, 0]},
    {"id": 2, "op": "cross_entropy", "a": 0, "target": 1},
    {"id": 3, "op": "input", "shape": [2], "data": [0.5, -0.5]},
    {"id": 4, "op": "input", "shape": [2], "data": [0.1, 0.2]},
    {"id": 5, "op": "full", "shape": [2], "value": 0},
    {"id": 6, "op": "full", "shape": [], "value": 1},
    {"id": 7, "op": "adam_update", "param": 3, "grad": 4, "m": 5, "v": 5, "t": 6, "lr": 0.1},
    {"id": 8, "op": "softmax", "a": 0}],
    "outputs": [{"name": "loss", "id": 2}, {"name": "p", "id": 7}, {"name": "s", "id": 8}]})";
  CompileOptions options;
  options.lower.tier = policy::Tier::kDebug;
  auto c = Compile(doc, options);
  ASSERT_TRUE(c.ok()) << c.errors()[0].Format();
  auto out = runtime::cpu::RunPlan<double>(*c->plan, {}, kernel::ref::Parallel(1));
  ASSERT_TRUE(out.ok());
  // Row 0: logsumexp(1, 2, 3) - 3; row 1: log(3) - 1 + 1.
  double row0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
  double row1 = std::log(3.0);
  EXPECT_NEAR(out.value()[0][0], (row0 + row1) / 2, 1e-12);
  // Adam's first step moves each element by lr * sign(g) (up to eps).
  EXPECT_NEAR(out.value()[1][0], 0.4, 1e-6);
  EXPECT_NEAR(out.value()[1][1], -0.6, 1e-6);
  EXPECT_NEAR(out.value()[2][5], 1.0 / 3.0, 1e-12);
}

TEST(GraphProtocolV2, TrainingOpsNeedVersion2) {
  const char* doc = R"({"version": 1, "nodes": [
    {"id": 0, "op": "input", "shape": [2], "data": [1, 2]},
    {"id": 1, "op": "softmax", "a": 0}], "outputs": [{"name": "s", "id": 1}]})";
  CompileOptions options;
  options.lower.tier = policy::Tier::kDebug;
  auto c = Compile(doc, options);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.errors()[0].code, "op-newer-than-version");
}

}  // namespace
}  // namespace scellis::pipeline
