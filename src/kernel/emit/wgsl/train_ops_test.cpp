// The WGSL of the normalization, loss and optimizer ops against the CPU reference, on Dawn over
// SwiftShader (software Vulkan; tests allow it explicitly). Each op runs through the WebGPU
// executor and the CPU reference on the same seeded inputs and is compared within its registry
// tolerance class under the prod tier. Invalid labels must give NaN on both.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "base/random.h"
#include "execplan/plan.h"
#include "kernel/module.h"
#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"
#include "runtime/backends/webgpu/executor.h"
#include "webir/op_rules.h"

namespace scellis::kernel::wgsl {
namespace {

using webir::Graph;
using webir::Node;

constexpr const char* kSwiftShaderIcd = "/usr/lib/chromium/vk_swiftshader_icd.json";

runtime::webgpu::WebGpuExecutor* Gpu() {
  static std::unique_ptr<runtime::webgpu::WebGpuExecutor> gpu = [] {
    if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
      setenv("VK_ICD_FILENAMES", kSwiftShaderIcd, 1);
    runtime::webgpu::OpenOptions options;
    options.allow_software_adapter = true;
    auto dev = runtime::webgpu::Device::Open(options);
    std::unique_ptr<runtime::webgpu::WebGpuExecutor> out;
    if (dev.ok()) out = std::make_unique<runtime::webgpu::WebGpuExecutor>(std::move(dev).value());
    return out;
  }();
  return gpu.get();
}

struct Input {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

std::vector<float> Random(int64_t n, uint64_t seed, float scale = 3.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = scale * (2.0f * CounterUniform(seed, i) - 1.0f) + 0.01f;
  return v;
}

// Runs `op` over `inputs` on both backends and compares.
void Compare(const std::string& op, const std::vector<Input>& inputs, const Json& attrs,
             bool expect_nan = false) {
  SCOPED_TRACE(op + " " + attrs.dump());
  runtime::webgpu::WebGpuExecutor* gpu = Gpu();
  ASSERT_NE(gpu, nullptr) << "no WebGPU device on SwiftShader (" << kSwiftShaderIcd << ")";
  Graph g;
  g.version = 2;
  runtime::Feeds feeds;
  std::vector<int> args;
  for (const Input& in : inputs) {
    Node n;
    n.op = "input";
    n.role = webir::Role::kInput;
    n.name = n.label = in.name;
    n.type = MakeType(in.shape);
    args.push_back(g.Add(std::move(n)));
    feeds[in.name] = HostTensor::FromFloats(MakeType(in.shape), in.data);
  }
  const ops::OpSpec* def = ops::BuiltinOps()->Find(op);
  const webir::OpRule* rule = webir::FindRule(op);
  webir::InferContext c;
  for (int a : args) c.args.push_back(g.at(a).type);
  c.attrs = attrs;
  c.version = 2;
  auto type = rule->infer(c);
  ASSERT_TRUE(type.ok());
  Node n;
  n.op = op;
  n.args = args;
  n.attrs = c.attrs;
  n.type = type.value();
  g.outputs = {{"out", g.Add(std::move(n))}};

  pipeline::CompileOptions options;
  options.plan.budget_bytes = int64_t{1} << 30;
  options.plan.limits = runtime::webgpu::PlanLimits(gpu->device().info());
  auto compiled = pipeline::CompileGraph(g, options);
  ASSERT_TRUE(compiled.ok());
  const execplan::Plan& plan = *compiled->plan;
  auto want = runtime::cpu::RunPlan<float>(plan, feeds, ref::Parallel(1));
  ASSERT_TRUE(want.ok());
  auto got = gpu->Run(plan, feeds);
  ASSERT_TRUE(got.ok()) << got.errors()[0].Format();
  const std::vector<float>& w = want.value()[0];
  const std::vector<float>& r = got.value().outputs[0].second.ToFloats();
  ASSERT_EQ(w.size(), r.size());
  policy::Thresholds limits = policy::ResolveThresholds(def->tolerance, policy::Tier::kProd);
  bool any_nan = false;
  for (size_t i = 0; i < w.size(); ++i) {
    any_nan |= std::isnan(w[i]);
    EXPECT_EQ(std::isnan(w[i]), std::isnan(r[i])) << "element " << i;
    if (!std::isnan(w[i])) {
      EXPECT_TRUE(limits.Accepts(r[i], w[i]))
          << "element " << i << ": gpu " << r[i] << ", cpu " << w[i] << " (atol " << limits.atol
          << ", rtol " << limits.rtol << ")";
    }
  }
  EXPECT_EQ(any_nan, expect_nan);
}

TEST(WgslTrainOps, SoftmaxAndLogSoftmax) {
  Compare("softmax", {{"a", {3, 7}, Random(21, 1)}}, Json::object());
  Compare("softmax", {{"a", {2, 2, 5}, Random(20, 2, 40.0f)}}, Json::object());
  Compare("log_softmax", {{"a", {4, 6}, Random(24, 3)}}, Json::object());
  Compare("log_softmax", {{"a", {9}, Random(9, 4, 50.0f)}}, Json::object());
}

TEST(WgslTrainOps, CrossEntropyAndItsGradient) {
  std::vector<float> labels = {0, 4, 2, 2, 1};
  Compare("cross_entropy", {{"a", {5, 5}, Random(25, 5)}, {"t", {5}, labels}}, Json::object());
  // More rows than the 256 partial sums: every partial takes several rows.
  std::vector<float> many(600);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<float>(i % 3);
  Compare("cross_entropy", {{"a", {600, 3}, Random(1800, 6)}, {"t", {600}, many}}, Json::object());
  Compare("cross_entropy_grad",
          {{"a", {5, 5}, Random(25, 7)}, {"t", {5}, labels}, {"b", {}, {0.75f}}}, Json::object());
}

TEST(WgslTrainOps, InvalidLabelsGiveNanOnBothBackends) {
  for (float bad : {-1.0f, 5.0f, 1.5f, NAN}) {
    std::vector<float> labels = {0, bad, 2};
    Compare("cross_entropy", {{"a", {3, 5}, Random(15, 8)}, {"t", {3}, labels}}, Json::object(),
            true);
    Compare("cross_entropy_grad",
            {{"a", {3, 5}, Random(15, 8)}, {"t", {3}, labels}, {"b", {}, {1.0f}}}, Json::object(),
            true);
  }
}

TEST(WgslTrainOps, OptimizerUpdates) {
  const int64_t n = 70;
  std::vector<Input> sgd = {{"p", {n}, Random(n, 10)}, {"g", {n}, Random(n, 11)}};
  Compare("sgd_update", sgd, {{"lr", 0.1}, {"weight_decay", 0.01}});
  Compare("sgd_update", sgd, {{"lr", 0.1}, {"maximize", true}});
  for (float t : {1.0f, 4.0f}) {
    std::vector<Input> mom = {{"p", {n}, Random(n, 12)},
                              {"g", {n}, Random(n, 13)},
                              {"vel", {n}, Random(n, 14)},
                              {"t", {}, {t}}};
    Json a = {{"lr", 0.1}, {"momentum", 0.9}, {"dampening", 0.2}, {"weight_decay", 0.01}};
    Json nesterov = {{"lr", 0.1}, {"momentum", 0.9}, {"nesterov", true}};
    Compare("momentum_update", mom, a);
    Compare("momentum_velocity", mom, a);
    Compare("momentum_update", mom, nesterov);
    std::vector<float> v = Random(n, 15);
    for (float& x : v) x = std::fabs(x) * 0.01f;
    std::vector<Input> adam = {{"p", {n}, Random(n, 16)},
                               {"g", {n}, Random(n, 17)},
                               {"m", {n}, Random(n, 18, 0.1f)},
                               {"v", {n}, v},
                               {"t", {}, {t}}};
    for (const Json& attrs : {Json{{"lr", 1e-3}}, Json{{"lr", 1e-2}, {"weight_decay", 0.1}},
                              Json{{"lr", 1e-2}, {"decoupled", true}, {"beta1", 0.3}}}) {
      Compare("adam_update", adam, attrs);
      Compare("adam_m", adam, attrs);
      Compare("adam_v", adam, attrs);
    }
  }
}

}  // namespace
}  // namespace scellis::kernel::wgsl
