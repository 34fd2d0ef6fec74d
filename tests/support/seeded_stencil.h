// The set-up the stencil tests share (repeat, hoist-loop-invariants, block-temporally): a fresh
// seed for every test, printed on failure; values drawn from it; SwiftShader as the Vulkan driver
// unless one is set; and api::Run options for a backend with an optional pass switched off.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "api/run.h"

namespace scellis::testing {

class SeededStencilTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    if (!std::getenv("VK_ICD_FILENAMES"))
      setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  }

  // `n` values uniform in [lo, hi).
  std::vector<float> Values(int n, float lo = -1, float hi = 1) {
    std::uniform_real_distribution<float> value(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = value(rng_);
    return v;
  }

  // `backend` ("cpu" on 2 threads, or "webgpu" on a software adapter if that is all there is)
  // in `tier`, `steps` steps per run, without the optional pass `off` ("" keeps every pass).
  static api::RunOptions On(const std::string& backend, policy::Tier tier, int steps = 1,
                            const std::string& off = "") {
    api::RunOptions o;
    o.compile.lower.tier = tier;
    o.select = {.requested = backend, .allow_software_adapter = true, .cpu_threads = 2};
    o.steps = steps;
    if (!off.empty()) o.compile.disabled_passes = {off};
    return o;
  }

  unsigned seed_ = 0;
  std::mt19937 rng_;
};

}  // namespace scellis::testing
