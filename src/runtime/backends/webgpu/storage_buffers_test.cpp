// The plan refuses a kernel that binds more storage buffers than the adapter lets one shader stage
// bind (SwiftShader: 10), before anything runs; a kernel at the limit runs and is right.
#include <gtest/gtest.h>

#include <random>

#include "pipeline/compile.h"
#include "runtime/backends/backends_test.h"
#include "support/graph.h"

namespace scellis::runtime::webgpu {
namespace {

using scellis::testing::GraphDoc;
using scellis::testing::InputNode;

// y = x0 + x1 + ... + x{n-1}, one fused kernel binding n inputs and y; `expected` gets each
// element's sum in float64.
std::string SumOf(int n, uint32_t seed, std::vector<double>& expected) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<Json> nodes;
  expected.assign(16, 0.0);
  for (int i = 0; i < n; ++i) {
    std::vector<float> data(16);
    for (size_t e = 0; e < data.size(); ++e) expected[e] += data[e] = value(rng);
    nodes.push_back(InputNode(i, {16}, data));
  }
  int last = 0;
  for (int i = 1; i < n; ++i) {
    nodes.push_back({{"id", n + i}, {"op", "add"}, {"a", last}, {"b", i}});
    last = n + i;
  }
  return GraphDoc(nodes, {{"y", last}}).dump();
}

Result<pipeline::Compiled> Compiled(const std::string& doc, const Executor& gpu) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.plan.limits = gpu.limits();
  return pipeline::Compile(doc, o);
}

TEST(StorageBuffers, APlanOverTheAdaptersLimitIsRefusedAndOneAtItRuns) {
  auto gpu = runtime::testing::Open("webgpu");
  ASSERT_NE(gpu, nullptr);
  const int64_t cap = gpu->limits().max_storage_buffers_per_kernel;
  ASSERT_GE(cap, 8);  // WebGPU's guaranteed minimum; SwiftShader offers 10

  std::vector<double> expected;
  auto over = Compiled(SumOf(static_cast<int>(cap), 3, expected), *gpu);  // cap inputs + y
  ASSERT_TRUE(over.ok()) << over.errors().front().Format();
  ASSERT_EQ(over->module->kernels.size(), 1u) << kernel::Print(*over->module);
  EXPECT_EQ(over->module->kernels[0].StorageBindings(), cap + 1);
  EXPECT_EQ(over->plan->verdict, execplan::Verdict::kRed);
  ASSERT_FALSE(over->plan->findings.empty());
  const Diagnostic& d = over->plan->findings.front();
  EXPECT_EQ(d.code, "too-many-storage-buffers");
  EXPECT_EQ(d.pointer.rfind("/nodes/", 0), 0u) << d.pointer;
  EXPECT_NE(d.message.find("binds " + std::to_string(cap + 1) + " storage buffers"),
            std::string::npos)
      << d.message;

  auto at = Compiled(SumOf(static_cast<int>(cap - 1), 4, expected), *gpu);
  ASSERT_TRUE(at.ok()) << at.errors().front().Format();
  EXPECT_EQ(at->module->kernels[0].StorageBindings(), cap);
  EXPECT_NE(at->plan->verdict, execplan::Verdict::kRed);
  auto r = gpu->Run(*at->plan, {});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  const std::vector<float> y = r->outputs.at(0).second.ToFloats();
  ASSERT_EQ(y.size(), expected.size());
  for (size_t e = 0; e < y.size(); ++e) EXPECT_NEAR(y[e], expected[e], 1e-5) << e;
}

}  // namespace
}  // namespace scellis::runtime::webgpu
