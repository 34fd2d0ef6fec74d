// Conformance on a real WebGPU device: Dawn on SwiftShader (Vulkan on the CPU). CI installs both
// (`make setup`); a machine without them fails these tests with a message saying what is missing,
// it never skips them. The data is fresh on every run; the seed is printed, and
// SCELLIS_CONFORM_SEED=<seed> replays it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "conform/receipt.h"
#include "conform/runner.h"
#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"
#include "runtime/backends/webgpu/executor.h"

namespace scellis::conform {
namespace {

namespace fs = std::filesystem;
using runtime::webgpu::Device;
using runtime::webgpu::WebGpuExecutor;

constexpr const char* kSwiftShaderIcd = "/usr/lib/chromium/vk_swiftshader_icd.json";

std::string Describe(const std::vector<Diagnostic>& errors) {
  std::string out;
  for (const Diagnostic& d : errors) out += d.Format() + "\n";
  return out;
}

uint64_t TestSeed() {
  static const uint64_t seed = [] {
    const char* s = std::getenv("SCELLIS_CONFORM_SEED");
    uint64_t v = s && *s ? std::strtoull(s, nullptr, 10) : FreshSeed();
    std::cout << "conformance seed " << v << " (replay with SCELLIS_CONFORM_SEED=" << v << ")\n";
    return v;
  }();
  return seed;
}

// Every failing case of `results`, one per line.
std::string Failures(const std::vector<GroupResult>& results) {
  std::string out;
  for (const GroupResult& g : results)
    for (const CaseResult& c : g.cases)
      if (!c.passed()) out += "  " + c.id + " " + c.shape + ": " + c.Failure() + "\n";
  return out;
}

class ConformanceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
      setenv("VK_ICD_FILENAMES", kSwiftShaderIcd, 1);
    const char* icd = std::getenv("VK_ICD_FILENAMES");
    if (icd && std::string(icd) == kSwiftShaderIcd && !fs::exists(kSwiftShaderIcd)) {
      open_error_ = std::string("SwiftShader is missing: ") + kSwiftShaderIcd +
                    " does not exist (it comes with Debian's chromium package; run make setup)";
      return;
    }
    auto dev = Device::Open({.allow_software_adapter = true});
    if (!dev.ok()) {
      open_error_ = "could not open a WebGPU device on SwiftShader:\n" + Describe(dev.errors());
      return;
    }
    gpu_ = new WebGpuExecutor(std::move(dev).value());
  }
  static void TearDownTestSuite() {
    delete gpu_;
    gpu_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(gpu_) << open_error_; }

  static Result<std::vector<GroupResult>> RunGroups(
      policy::Tier tier, std::vector<std::string> groups,
      std::function<void(kernel::Kernel&)> tamper = {}) {
    Options o;
    o.tier = tier;
    o.seed = TestSeed();
    o.groups = std::move(groups);
    o.tamper = std::move(tamper);
    return conform::Run(*gpu_, o);
  }

  static WebGpuExecutor* gpu_;
  static std::string open_error_;
};

WebGpuExecutor* ConformanceTest::gpu_ = nullptr;
std::string ConformanceTest::open_error_;

// A scratch store directory, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    path_ = fs::temp_directory_path() / ("scellis-conform-test-" + std::to_string(::getpid()) +
                                         "-" + std::to_string(counter_++));
    fs::remove_all(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

// NaN, +-inf and +-0 through every op, on the CPU reference and on the GPU, each held to what
// PyTorch gives (not merely to each other): NaN where PyTorch has NaN, the same infinities.
TEST_F(ConformanceTest, SpecialValuesFollowPyTorchOnBothBackends) {
  const kernel::ref::Parallel parallel(2);
  std::vector<std::string> covered;
  for (const SpecialValueCase& s : SpecialValueCases()) {
    SCOPED_TRACE(s.c.id());
    covered.push_back(s.c.group);
    auto plan = CompileCase(s.c, policy::Tier::kProd, gpu_->limits());
    ASSERT_TRUE(plan.ok()) << Describe(plan.errors());
    const policy::Thresholds t = policy::ResolveThresholds(s.c.tolerance, policy::Tier::kProd);
    auto cpu = runtime::cpu::RunPlan<float>(*plan, s.feeds, parallel);
    ASSERT_TRUE(cpu.ok()) << Describe(cpu.errors());
    // The reference holds i32 results as their bits (kernel/ref/ref.h): compared as values.
    if (plan->graph().at(plan->graph().outputs.at(0).node).type.dtype == DType::kI32)
      for (float& slot : cpu->at(0)) slot = static_cast<float>(std::bit_cast<int32_t>(slot));
    Comparison on_cpu = Compare(cpu->at(0), s.want, t, runtime::kPoisonBits);
    EXPECT_TRUE(on_cpu.ok()) << "CPU: element " << on_cpu.first_bad << " is " << on_cpu.first_got
                             << ", PyTorch gives " << on_cpu.first_want;
    auto gpu = gpu_->Run(*plan, s.feeds, {.poison_outputs = true});
    ASSERT_TRUE(gpu.ok()) << Describe(gpu.errors());
    Comparison on_gpu =
        Compare(gpu->outputs.at(0).second.ToFloats(), s.want, t, runtime::kPoisonBits);
    EXPECT_TRUE(on_gpu.ok()) << "GPU: element " << on_gpu.first_bad << " is " << on_gpu.first_got
                             << ", PyTorch gives " << on_gpu.first_want;
  }
  for (const std::string& group : Groups()) {
    if (group == kFusedGroup) continue;
    EXPECT_NE(std::find(covered.begin(), covered.end(), group), covered.end())
        << group << " has no special-value case";
  }
}

// One NaN weight in the first layer of a relu MLP: relu must carry the NaN on to the loss (it
// used to map NaN to 0, so NaN weights trained on unnoticed).
TEST_F(ConformanceTest, ANanWeightInAReluMlpGivesANanLoss) {
  Case c;
  c.group = "mlp";
  c.name = "nan_weight";
  c.inputs = {{"x", {2, 3}}, {"w1", {3, 4}}, {"w2", {4, 3}}, {"labels", {2}}};
  c.doc = Json::parse(R"({"version": 2, "nodes": [
      {"id": 0, "op": "input", "name": "x", "shape": [2, 3]},
      {"id": 1, "op": "input", "name": "w1", "shape": [3, 4]},
      {"id": 2, "op": "input", "name": "w2", "shape": [4, 3]},
      {"id": 3, "op": "input", "name": "labels", "shape": [2]},
      {"id": 4, "op": "matmul", "a": 0, "b": 1},
      {"id": 5, "op": "relu", "a": 4},
      {"id": 6, "op": "matmul", "a": 5, "b": 2},
      {"id": 7, "op": "cross_entropy", "a": 6, "target": 3}],
      "outputs": [{"name": "loss", "id": 7}]})");
  std::vector<float> w1(12, 0.25f);
  w1[0] = std::numeric_limits<float>::quiet_NaN();
  runtime::Feeds feeds = {
      {"x", HostTensor::FromFloats(MakeType({2, 3}), std::vector<float>{1, 2, 3, -1, 0.5f, 2})},
      {"w1", HostTensor::FromFloats(MakeType({3, 4}), w1)},
      {"w2", HostTensor::FromFloats(MakeType({4, 3}), std::vector<float>(12, 0.5f))},
      {"labels", HostTensor::FromFloats(MakeType({2}), std::vector<float>{0, 2})}};
  auto plan = CompileCase(c, policy::Tier::kProd, gpu_->limits());
  ASSERT_TRUE(plan.ok()) << Describe(plan.errors());
  auto cpu = runtime::cpu::RunPlan<float>(*plan, feeds, kernel::ref::Parallel(1));
  ASSERT_TRUE(cpu.ok()) << Describe(cpu.errors());
  EXPECT_TRUE(std::isnan(cpu->at(0).at(0))) << "CPU loss " << cpu->at(0).at(0);
  auto gpu = gpu_->Run(*plan, feeds);
  ASSERT_TRUE(gpu.ok()) << Describe(gpu.errors());
  float loss = gpu->outputs.at(0).second.ToFloats().at(0);
  EXPECT_TRUE(std::isnan(loss)) << "GPU loss " << loss;
}

TEST_F(ConformanceTest, EveryOpConformsAtProd) {
  auto results = RunGroups(policy::Tier::kProd, {});
  ASSERT_TRUE(results.ok()) << Describe(results.errors());
  ASSERT_EQ(results->size(), Groups().size());
  EXPECT_EQ(Failures(*results), "") << "seed " << TestSeed();
  for (const GroupResult& g : *results) {
    EXPECT_TRUE(g.passed()) << g.group;
    EXPECT_FALSE(g.cases.empty()) << g.group;
    // The hash a receipt records is the one `scellis run` recomputes without a device.
    auto hash = SourceHash(g.group, policy::Tier::kProd);
    ASSERT_TRUE(hash.ok()) << Describe(hash.errors());
    EXPECT_EQ(g.source_hash, hash.value()) << g.group;
    std::cout << "  " << g.group << ": " << g.cases.size() << " cases, max abs " << g.max_abs
              << ", max rel " << g.max_rel << "\n";
  }
}

// The debug tier runs every case twice on the GPU and demands the same bits; our kernels have fixed
// reduction trees and no float atomics, so they must deliver.
TEST_F(ConformanceTest, DebugTierRerunsAreBitIdentical) {
  auto results = RunGroups(policy::Tier::kDebug, {"sum", "mean", "matmul", "exp", "gelu", "fused"});
  ASSERT_TRUE(results.ok()) << Describe(results.errors());
  EXPECT_EQ(Failures(*results), "") << "seed " << TestSeed();
  for (const GroupResult& g : *results) {
    EXPECT_TRUE(g.passed()) << g.group;
    // Debug thresholds are the tightest of the tiers.
    policy::Thresholds prod = policy::ResolveThresholds(g.tolerance, policy::Tier::kProd);
    EXPECT_LE(g.thresholds.atol, prod.atol);
    for (const CaseResult& c : g.cases) EXPECT_TRUE(c.rerun_identical) << c.id;
  }
  // The whole-tensor sum follows the same tree on both sides: not merely close, identical.
  for (const CaseResult& c : results->front().cases) EXPECT_EQ(c.comparison.max_abs, 0) << c.id;
}

// A kernel that never writes its last element: without the poison, whatever the buffer held
// before could pass for a result; with it, every such element shows up.
TEST_F(ConformanceTest, PoisonCatchesAKernelThatSkipsItsLastElement) {
  auto skip_last = [](kernel::Kernel& k) {
    const std::string guard = "if (i >= ";
    size_t at = k.Wgsl().source.find(guard);
    if (at != std::string::npos) {
      k.Wgsl().source.replace(at, guard.size(), "if (i + 1u >= ");
      return;
    }
    // A wide elementwise kernel stores whole vectors: it skips its last vector of 4 elements.
    const std::string vector_guard = "if (j >= ";
    at = k.Wgsl().source.find(vector_guard);
    if (at != std::string::npos) {
      k.Wgsl().source.replace(at, vector_guard.size(), "if (j + 1u >= ");
      return;
    }
    // The tiled matmul guards its write with the tile's bounds: also skip the buffer's last word.
    const std::string write = ") { out[";
    at = k.Wgsl().source.find(write);
    ASSERT_NE(at, std::string::npos) << k.name;
    size_t end = k.Wgsl().source.find("] = acc;", at);
    std::string index = k.Wgsl().source.substr(at + write.size(), end - at - write.size());
    k.Wgsl().source.insert(at, " && " + index + " + 1u < arrayLength(&out)");
  };
  auto results =
      RunGroups(policy::Tier::kProd, {"relu", "add", "matmul", "transpose", "fused"}, skip_last);
  ASSERT_TRUE(results.ok()) << Describe(results.errors());
  for (const GroupResult& g : *results) {
    EXPECT_FALSE(g.passed()) << g.group;
    for (const CaseResult& c : g.cases) {
      EXPECT_EQ(c.error, "") << c.id;
      if (c.comparison.elements == 0) {  // an empty output has no last element to skip
        EXPECT_TRUE(c.passed()) << c.id;
        continue;
      }
      // One element, or the last vector of a wide elementwise kernel.
      const int64_t skipped = c.comparison.unwritten;
      EXPECT_TRUE(skipped == 1 || (skipped == 4 && c.comparison.elements % 4 == 0)) << c.id;
      EXPECT_EQ(c.comparison.first_bad, c.comparison.elements - skipped) << c.id;
      EXPECT_NE(c.Failure().find(std::to_string(skipped) + " unwritten element"), std::string::npos)
          << c.Failure();
    }
  }
}

// A reduction whose single result is never written (its one writer waits for a thread that does
// not exist).
TEST_F(ConformanceTest, PoisonCatchesADroppedWrite) {
  auto drop = [](kernel::Kernel& k) {
    const std::string writer = "if (t == 0u)";
    size_t at = k.Wgsl().source.find(writer);
    if (at != std::string::npos) k.Wgsl().source.replace(at, writer.size(), "if (t == 256u)");
  };
  auto results = RunGroups(policy::Tier::kProd, {"sum"}, drop);
  ASSERT_TRUE(results.ok()) << Describe(results.errors());
  const GroupResult& g = results->front();
  EXPECT_FALSE(g.passed());
  int dropped = 0;
  for (const CaseResult& c : g.cases) {
    if (c.id.find("/whole") == std::string::npos) {
      EXPECT_TRUE(c.passed()) << c.id << ": " << c.Failure();  // axis reductions untouched
      continue;
    }
    ++dropped;
    EXPECT_EQ(c.comparison.unwritten, c.comparison.elements) << c.id;
  }
  EXPECT_GE(dropped, 5);
}

TEST_F(ConformanceTest, ReceiptsAreMintedAndScopedToTheProfile) {
  ScratchDir dir;
  auto store = store::Store::Open(dir.str());
  ASSERT_TRUE(store.ok());
  auto results = RunGroups(policy::Tier::kProd, {"neg", "mul", "relu"});
  ASSERT_TRUE(results.ok()) << Describe(results.errors());
  DeviceProfile profile = gpu_->profile();
  EXPECT_EQ(profile.key, gpu_->device().ProfileKey());

  std::map<std::string, std::string> ids;
  for (const GroupResult& g : *results) {
    ASSERT_TRUE(g.passed()) << Failures(*results);
    auto id = MintReceipt(*store, g, profile, policy::Tier::kProd, TestSeed());
    ASSERT_TRUE(id.ok()) << Describe(id.errors());
    ids[g.group] = id.value();
  }

  // The receipt is a complete record.
  auto receipt = store->Get(ids["neg"]);
  ASSERT_TRUE(receipt.ok()) << Describe(receipt.errors());
  const Json& r = receipt.value();
  EXPECT_EQ(r["kind"], kReceiptKind);
  EXPECT_EQ(r["op"], "neg");
  EXPECT_EQ(r["profile"], profile.key);
  EXPECT_EQ(r["tier"], "prod");
  EXPECT_EQ(r["tolerance"], "exact");
  EXPECT_EQ(r["thresholds"]["atol"], 0.0);
  EXPECT_EQ(r["seed"], TestSeed());
  EXPECT_EQ(r["case_count"], CasesFor("neg").size());
  EXPECT_EQ(r["device"]["backend_api"], "vulkan");
  EXPECT_EQ(r["device"]["dawn_version"], "bun-webgpu-linux-x64@0.1.7");
  EXPECT_EQ(r["date"].get<std::string>().size(), 20u);  // 2026-11-03T09:51:18Z
  EXPECT_EQ(r["source_hash"], results->front().source_hash);

  // Found again for this profile, this code and this tier (or a looser one)...
  auto hash = SourceHash("neg", policy::Tier::kProd);
  ASSERT_TRUE(hash.ok());
  EXPECT_TRUE(HasReceipt(*store, profile.key, "neg", hash.value(), policy::Tier::kProd));
  EXPECT_TRUE(HasReceipt(*store, profile.key, "neg", hash.value(), policy::Tier::kFast));
  // ...but not for a stricter tier, other code, another op or another device.
  EXPECT_FALSE(HasReceipt(*store, profile.key, "neg", hash.value(), policy::Tier::kDebug));
  EXPECT_FALSE(HasReceipt(*store, profile.key, "neg", "sha256:" + std::string(64, '0'),
                          policy::Tier::kProd));
  EXPECT_FALSE(HasReceipt(*store, profile.key, "exp", hash.value(), policy::Tier::kProd));
  std::string other =
      "webgpu;backend=vulkan;vendor=nvidia;arch=hopper;device=NVIDIA H200;"
      "driver=570.86;ids=10de:2335;dawn=bun-webgpu-linux-x64@0.1.7";
  EXPECT_FALSE(HasReceipt(*store, other, "neg", hash.value(), policy::Tier::kProd));

  // `scellis run` reports per kernel: relu(x * y) is one fused kernel needing mul, relu and the
  // fused chains; a lone neg needs only neg.
  pipeline::CompileOptions to_kernels;
  to_kernels.up_to = pipeline::Rung::kKernel;
  to_kernels.lower.tier = policy::Tier::kProd;
  auto module = pipeline::Compile(
      R"({"version": 2, "nodes": [
           {"id": 0, "op": "input", "shape": [3], "data": [1, 2, 3]},
           {"id": 1, "op": "input", "shape": [3], "data": [4, 5, 6]},
           {"id": 2, "op": "mul", "a": 0, "b": 1},
           {"id": 3, "op": "relu", "a": 2},
           {"id": 4, "op": "neg", "a": 0},
           {"id": 5, "op": "sum", "a": 4}],
         "outputs": [{"name": "r", "id": 3}, {"name": "s", "id": 5}]})",
      to_kernels);
  ASSERT_TRUE(module.ok()) << Describe(module.errors());
  ReceiptReport report = CheckReceipts(*store, profile.key, *module->module, policy::Tier::kProd);
  ASSERT_EQ(report.kernels.size(), 3u);
  EXPECT_EQ(report.conformed(), 1);  // neg
  EXPECT_EQ(report.missing(), (std::vector<std::string>{"fused", "sum"}));
  EXPECT_EQ(report.Line(), "receipts: 1/3 kernels conformed on this profile (missing: fused, sum)");
  ReceiptReport elsewhere = CheckReceipts(*store, other, *module->module, policy::Tier::kProd);
  EXPECT_EQ(elsewhere.conformed(), 0);

  // A failing group gets no receipt.
  GroupResult failed = results->front();
  failed.cases.front().comparison.mismatches = 1;
  EXPECT_FALSE(MintReceipt(*store, failed, profile, policy::Tier::kProd, 1).ok());
}

}  // namespace
}  // namespace scellis::conform
