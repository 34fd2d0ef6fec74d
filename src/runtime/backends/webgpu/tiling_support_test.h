// What the tests of tiles over the storage-binding cap share: a device opened with a small cap,
// compiling for it, and running a document tiled against the untiled kernel and the reference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"
#include "runtime/backends/webgpu/executor.h"

namespace scellis::runtime::webgpu::tiling_support {

inline constexpr uint64_t kCap = 4096;  // bytes: 1024 floats per tile

inline std::unique_ptr<WebGpuExecutor> SmallCapGpu(uint64_t cap = kCap) {
  if (!std::getenv("VK_ICD_FILENAMES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  auto d = Device::Open({.allow_software_adapter = true, .max_binding_bytes = cap});
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.errors().front().message);
  return d.ok() ? std::make_unique<WebGpuExecutor>(std::move(d.value())) : nullptr;
}

inline Result<pipeline::Compiled> Compile(
    const Json& doc, const WebGpuExecutor& gpu, policy::Tier tier = policy::Tier::kProd,
    std::optional<kernel::MatmulSchedule> schedule = std::nullopt) {
  pipeline::CompileOptions o;
  o.lower.tier = tier;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits = gpu.limits();
  o.matmul_schedule = schedule;
  return pipeline::Compile(doc.dump(), o);
}

inline std::vector<float> Random(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

inline std::vector<float> Floats(const RunResult& r) {
  return r.outputs[0].second.ToFloats();
}

inline void ExpectSameBits(const std::vector<float>& a, const std::vector<float>& b,
                           const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0)
        << what << " at " << i << ": " << a[i] << " vs " << b[i];
}

// Runs `doc` (in debug) tiled on the small-cap device and untiled on one with the full cap, and
// on the CPU reference; checks the tiled plan's finding mentions `tiling`, that the tiled run has
// `dispatches` dispatches, and returns the tiled result after comparing it bit for bit with the
// untiled kernel and (when `reference_bits`) with the reference.
inline std::vector<float> RunTiled(const Json& doc, const Feeds& feeds, const std::string& tiling,
                                   int dispatches, bool reference_bits,
                                   std::optional<kernel::MatmulSchedule> schedule = std::nullopt) {
  auto gpu = SmallCapGpu();
  auto whole = SmallCapGpu(0);
  if (!gpu || !whole) return {};
  auto c = Compile(doc, *gpu, policy::Tier::kDebug, schedule);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  if (!c.ok()) return {};
  EXPECT_EQ(c->plan->verdict, execplan::Verdict::kYellow);
  EXPECT_FALSE(c->plan->findings.empty());
  if (c->plan->findings.empty()) return {};
  EXPECT_EQ(c->plan->findings.front().code, "tiled-binding");
  EXPECT_NE(c->plan->findings.front().message.find(tiling), std::string::npos)
      << c->plan->findings.front().message;
  EXPECT_NE(execplan::Print(*c->plan).find(tiling), std::string::npos);
  // The output is poisoned before the first tile: an element no tile wrote shows.
  auto got = gpu->Run(*c->plan, feeds, {.poison_outputs = true});
  EXPECT_TRUE(got.ok()) << got.errors().front().Format();
  if (!got.ok()) return {};
  EXPECT_EQ(got->stats["dispatches"].get<int>(), dispatches);

  auto untiled_plan = Compile(doc, *whole, policy::Tier::kDebug, schedule);
  EXPECT_TRUE(untiled_plan.ok());
  EXPECT_EQ(untiled_plan->plan->verdict, execplan::Verdict::kGreen);
  auto untiled = whole->Run(*untiled_plan->plan, feeds);
  EXPECT_TRUE(untiled.ok());
  if (!untiled.ok()) return {};
  ExpectSameBits(Floats(*got), Floats(*untiled), "tiled vs untiled kernel");

  cpu::CpuExecutor ref({.threads = 1});
  auto want = ref.Run(*c->plan, feeds);
  EXPECT_TRUE(want.ok());
  if (want.ok() && reference_bits) ExpectSameBits(Floats(*got), Floats(*want), "GPU vs reference");
  return Floats(*got);
}

// C = A B in float64, with each element's bound on the rounding of an f32 sum of K products in
// any order (K * 2^-24 * sum |products|, doubled for margin).
inline void ExpectNearFloat64Product(const std::vector<float>& got, int64_t m, int64_t n, int64_t k,
                                     const std::function<double(int64_t, int64_t)>& a,
                                     const std::function<double(int64_t, int64_t)>& b) {
  ASSERT_EQ(got.size(), static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double sum = 0, magnitude = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        sum += a(r, kk) * b(kk, c);
        magnitude += std::fabs(a(r, kk) * b(kk, c));
      }
      ASSERT_NEAR(got[r * n + c], sum, 2.0 * k * std::ldexp(magnitude, -24) + 1e-30)
          << r << "," << c;
    }
}

inline Json MatmulDoc(std::vector<int64_t> a, std::vector<int64_t> b, bool ta, bool tb,
                      const std::vector<float>& b_data) {
  Json nodes = {{{"id", 0}, {"op", "input"}, {"name", "a"}, {"shape", a}},
                {{"id", 1}, {"op", "input"}, {"shape", b}, {"data", b_data}}};
  int ia = 0, ib = 1, id = 2;
  if (ta) {
    nodes.push_back({{"id", id}, {"op", "transpose"}, {"a", 0}});
    ia = id++;
  }
  if (tb) {
    nodes.push_back({{"id", id}, {"op", "transpose"}, {"a", 1}});
    ib = id++;
  }
  nodes.push_back({{"id", id}, {"op", "matmul"}, {"a", ia}, {"b", ib}});
  return {{"version", 1}, {"nodes", nodes}, {"outputs", {{{"name", "c"}, {"id", id}}}}};
}

inline Json ReduceDoc(const std::string& op, std::vector<int64_t> shape, Json axis) {
  Json node = {{"id", 1}, {"op", op}, {"a", 0}};
  if (!axis.is_null()) node["axis"] = axis;
  return {{"version", 2},
          {"nodes", {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", shape}}, node}},
          {"outputs", {{{"name", "y"}, {"id", 1}}}}};
}

}  // namespace scellis::runtime::webgpu::tiling_support
