// Tensors over the storage-binding cap: elementwise kernels and rank-2 matmuls run in tiles that
// each bind at most the cap; kernels that must bind a whole tensor are refused in planning. The device is opened with a
// small cap (SwiftShader's real one is 1 GiB) so the tiles are exercised with small tensors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"
#include "runtime/backends/webgpu/executor.h"

namespace scellis::runtime::webgpu {
namespace {

constexpr uint64_t kCap = 4096;  // bytes: 1024 floats per tile

std::unique_ptr<WebGpuExecutor> SmallCapGpu() {
  if (!std::getenv("VK_ICD_FILENAMES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  auto d = Device::Open({.allow_software_adapter = true, .max_binding_bytes = kCap});
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.errors().front().message);
  return d.ok() ? std::make_unique<WebGpuExecutor>(std::move(d.value())) : nullptr;
}

Result<pipeline::Compiled> Compile(const Json& doc, const WebGpuExecutor& gpu,
                                   policy::Tier tier = policy::Tier::kProd) {
  pipeline::CompileOptions o;
  o.lower.tier = tier;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits = gpu.limits();
  return pipeline::Compile(doc.dump(), o);
}

// relu(x * y_row + z) * 0.5 over [301, 97] (29197 elements: 29 tiles, the last one partial), with
// x fed per run and y broadcast along the rows (bound whole in every tile).
Json ChainDoc(std::mt19937& rng, std::vector<float>& x) {
  std::uniform_real_distribution<float> u(-2, 2);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    return v;
  };
  x = random(301 * 97);
  return {{"version", 2},
          {"nodes",
           {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {301, 97}}},
            {{"id", 1}, {"op", "input"}, {"shape", {97}}, {"data", random(97)}},
            {{"id", 2}, {"op", "input"}, {"shape", {301, 97}}, {"data", random(301 * 97)}},
            {{"id", 3}, {"op", "mul"}, {"a", 0}, {"b", 1}},
            {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 2}},
            {{"id", 5}, {"op", "relu"}, {"a", 4}},
            {{"id", 6}, {"op", "mul"}, {"a", 5}, {"scalar", 0.5}}}},
          {"outputs", {{{"name", "y"}, {"id", 6}}}}};
}

TEST(Tiling, ElementwiseOverTheCapRunsInTilesAndMatchesTheReference) {
  auto gpu = SmallCapGpu();
  ASSERT_NE(gpu, nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::vector<float> x;
  Json doc = ChainDoc(rng, x);
  auto c = Compile(doc, *gpu);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  EXPECT_EQ(c->plan->verdict, execplan::Verdict::kYellow);
  EXPECT_EQ(c->plan->findings.front().code, "tiled-binding");

  Feeds feeds = {{"x", HostTensor::FromFloats(MakeType({301, 97}), x)}};
  // Poisoned outputs prove every tile wrote its window and nothing else was left unwritten.
  auto got = gpu->Run(*c->plan, feeds, {.poison_outputs = true});
  ASSERT_TRUE(got.ok()) << got.errors().front().Format();
  EXPECT_GE(got->stats["dispatches"].get<int>(), 29);

  cpu::CpuExecutor ref({.threads = 1});
  auto want = ref.Run(*c->plan, feeds);
  ASSERT_TRUE(want.ok());
  const auto& a = got->outputs[0].second.ToFloats();
  const auto& b = want->outputs[0].second.ToFloats();
  ASSERT_EQ(a.size(), b.size());
  // mul/add/relu are exact; the GPU may contract the multiply-add into one FMA.
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-6 + 2e-6 * std::fabs(b[i])) << i;
}

TEST(Tiling, FedInputsOverTheCapAreWindowedPerStep) {
  auto gpu = SmallCapGpu();
  ASSERT_NE(gpu, nullptr);
  std::mt19937 rng(11);
  std::vector<float> x0, x1;
  Json doc = ChainDoc(rng, x0);
  auto c = Compile(doc, *gpu);
  ASSERT_TRUE(c.ok());
  std::uniform_real_distribution<float> u(-2, 2);
  x1.resize(x0.size());
  for (float& f : x1) f = u(rng);
  auto session = gpu->Prepare(*c->plan);
  ASSERT_TRUE(session.ok());
  auto r = session.value()->RunSteps({{{"x", HostTensor::FromFloats(MakeType({301, 97}), x0)}},
                                      {{"x", HostTensor::FromFloats(MakeType({301, 97}), x1)}}},
                                     {"y"});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  cpu::CpuExecutor ref({.threads = 1});
  for (int k = 0; k < 2; ++k) {
    auto want =
        ref.Run(*c->plan, {{"x", HostTensor::FromFloats(MakeType({301, 97}), k ? x1 : x0)}});
    ASSERT_TRUE(want.ok());
    const auto& a = r->watched[0].second[k].ToFloats();
    const auto& b = want->outputs[0].second.ToFloats();
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], 1e-6 + 2e-6 * std::fabs(b[i])) << k << ":" << i;
  }
}

// x [300, 40] (48000 B) @ w [40, 24] = [300, 24] (28800 B): A and the output are over the 4 KiB
// cap, B is not. Tiles of 24 rows (the most under the cap that start at multiples of 256 bytes
// in both A and the output; 13 tiles, the last of 12 rows). In debug every output element adds
// its 40 products in increasing order on both backends, so the tiled kernel equals the reference
// bit for bit.
TEST(Tiling, AMatmulOverTheCapRunsInRowTilesWithTheReferencesBits) {
  auto gpu = SmallCapGpu();
  ASSERT_NE(gpu, nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> x(300 * 40), w(40 * 24);
  for (float& f : x) f = u(rng);
  for (float& f : w) f = u(rng);
  Json doc = {{"version", 1},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {300, 40}}},
                {{"id", 1}, {"op", "input"}, {"shape", {40, 24}}, {"data", w}},
                {{"id", 2}, {"op", "matmul"}, {"a", 0}, {"b", 1}}}},
              {"outputs", {{{"name", "c"}, {"id", 2}}}}};
  auto c = Compile(doc, *gpu, policy::Tier::kDebug);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  EXPECT_EQ(c->plan->verdict, execplan::Verdict::kYellow);
  ASSERT_FALSE(c->plan->findings.empty());
  EXPECT_EQ(c->plan->findings.front().code, "tiled-binding");
  EXPECT_NE(c->plan->findings.front().message.find("rows"), std::string::npos);

  Feeds feeds = {{"x", HostTensor::FromFloats(MakeType({300, 40}), x)}};
  auto got = gpu->Run(*c->plan, feeds, {.poison_outputs = true});
  ASSERT_TRUE(got.ok()) << got.errors().front().Format();
  EXPECT_EQ(got->stats["dispatches"].get<int>(), 2 * 13);  // each tile after its poison fill
  cpu::CpuExecutor ref({.threads = 1});
  auto want = ref.Run(*c->plan, feeds);
  ASSERT_TRUE(want.ok());
  const auto& a = got->outputs[0].second.ToFloats();
  const auto& b = want->outputs[0].second.ToFloats();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0) << i << ": " << a[i] << " vs " << b[i];
}

// The same row tiles with an epilogue (fuse-matmul-epilogue): relu(x @ w + bias) + r, with bias
// broadcast along the rows (bound whole, read at the element's column from the tile's first row)
// and r of the output's shape (bound in the output's window). The same bits as the reference.
TEST(Tiling, AMatmulWithAnEpilogueRunsInRowTilesWithTheReferencesBits) {
  auto gpu = SmallCapGpu();
  ASSERT_NE(gpu, nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> x(300 * 40), w(40 * 24), bias(24), r(300 * 24);
  for (auto* v : {&x, &w, &bias, &r})
    for (float& f : *v) f = u(rng);
  Json doc = {{"version", 2},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {300, 40}}},
                {{"id", 1}, {"op", "input"}, {"shape", {40, 24}}, {"data", w}},
                {{"id", 2}, {"op", "input"}, {"shape", {24}}, {"data", bias}},
                {{"id", 3}, {"op", "input"}, {"shape", {300, 24}}, {"data", r}},
                {{"id", 4}, {"op", "matmul"}, {"a", 0}, {"b", 1}},
                {{"id", 5}, {"op", "add"}, {"a", 4}, {"b", 2}},
                {{"id", 6}, {"op", "relu"}, {"a", 5}},
                {{"id", 7}, {"op", "add"}, {"a", 6}, {"b", 3}}}},
              {"outputs", {{{"name", "c"}, {"id", 7}}}}};
  auto c = Compile(doc, *gpu, policy::Tier::kDebug);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  ASSERT_EQ(c->module->kernels.size(), 1u) << kernel::Print(*c->module);
  EXPECT_TRUE(c->module->kernels[0].HasEpilogue());
  EXPECT_EQ(c->plan->verdict, execplan::Verdict::kYellow);

  Feeds feeds = {{"x", HostTensor::FromFloats(MakeType({300, 40}), x)}};
  auto got = gpu->Run(*c->plan, feeds, {.poison_outputs = true});
  ASSERT_TRUE(got.ok()) << got.errors().front().Format();
  EXPECT_EQ(got->stats["dispatches"].get<int>(), 2 * 13);
  cpu::CpuExecutor ref({.threads = 1});
  auto want = ref.Run(*c->plan, feeds);
  ASSERT_TRUE(want.ok());
  const auto& a = got->outputs[0].second.ToFloats();
  const auto& b = want->outputs[0].second.ToFloats();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0) << i << ": " << a[i] << " vs " << b[i];
  // And against float64, so the reference's epilogue is checked too.
  for (int i = 0; i < 300; ++i)
    for (int j = 0; j < 24; ++j) {
      double sum = 0;
      for (int k = 0; k < 40; ++k) sum += double{x[i * 40 + k]} * w[k * 24 + j];
      const double want64 = std::max(0.0, sum + bias[j]) + r[i * 24 + j];
      ASSERT_NEAR(b[i * 24 + j], want64, 1e-4) << i << "," << j;
    }
}

// A matmul whose B is over the cap (its columns are not contiguous rows of a tile), or that reads
// A transposed (a tile of output rows is a set of A's columns), must bind them whole: refused in
// planning.
TEST(Tiling, KernelsThatBindWholeTensorsAreRefusedInPlanning) {
  auto gpu = SmallCapGpu();
  ASSERT_NE(gpu, nullptr);
  auto refused = [&](const Json& doc) {
    auto c = Compile(doc, *gpu);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->plan->verdict, execplan::Verdict::kRed);
    EXPECT_EQ(c->plan->findings.front().code, "binding-cap-exceeded");
    EXPECT_NE(c->plan->findings.front().message.find("matmul"), std::string::npos);
  };
  std::vector<float> small(8 * 40, 0.5f), large(40 * 64, 0.25f);
  refused({{"version", 1},
           {"nodes",
            {{{"id", 0}, {"op", "input"}, {"shape", {8, 40}}, {"data", small}},
             {{"id", 1}, {"op", "input"}, {"shape", {40, 64}}, {"data", large}},
             {{"id", 2}, {"op", "matmul"}, {"a", 0}, {"b", 1}}}},
           {"outputs", {{{"name", "c"}, {"id", 2}}}}});
  refused({{"version", 1},
           {"nodes",
            {{{"id", 0}, {"op", "input"}, {"shape", {40, 64}}, {"data", large}},
             {{"id", 1}, {"op", "transpose"}, {"a", 0}},
             {{"id", 2}, {"op", "input"}, {"shape", {40, 8}}, {"data", small}},
             {{"id", 3}, {"op", "matmul"}, {"a", 1}, {"b", 2}}}},
           {"outputs", {{{"name", "c"}, {"id", 3}}}}});
}

}  // namespace
}  // namespace scellis::runtime::webgpu
