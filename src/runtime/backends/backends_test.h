// Shared by the backend tests that run one document on each backend: its plan against the
// executor's limits, and an executor opened explicitly (SwiftShader allowed for WebGPU).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "pipeline/compile.h"
#include "runtime/backends/select.h"

namespace scellis::runtime::testing {

inline Result<execplan::Plan> PlanFor(const Json& doc, const Executor& exec) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kProd;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits = exec.limits();
  SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled c, pipeline::Compile(doc.dump(), o));
  return *c.plan;
}

inline std::unique_ptr<Executor> Open(const std::string& backend) {
  if (!std::getenv("VK_ICD_FILENAMES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  auto s = SelectBackend({.requested = backend, .allow_software_adapter = true, .cpu_threads = 1});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.errors().front().message);
  return s.ok() ? std::move(s->executor) : nullptr;
}

}  // namespace scellis::runtime::testing
