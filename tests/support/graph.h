// Builds graph-protocol documents in tests and runs them through the whole descent
// (pipeline::Compile) and the CPU reference executor.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/backends/cpu/executor.h"
#include "base/json_util.h"
#include "pipeline/compile.h"

namespace scellis::testing {

inline Json InputNode(int id, const std::vector<int64_t>& shape, const std::vector<float>& data) {
  return Json{{"id", id}, {"op", "input"}, {"shape", shape}, {"data", data}};
}

inline Json GraphDoc(const std::vector<Json>& nodes,
                     const std::vector<std::pair<std::string, int>>& outputs, int version = 1) {
  Json j{{"version", version}, {"nodes", nodes}, {"outputs", Json::array()}};
  for (const auto& [name, id] : outputs) j["outputs"].push_back({{"name", name}, {"id", id}});
  return j;
}

inline pipeline::CompileOptions ProdOptions() {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kProd;
  o.plan.budget_bytes = int64_t{1} << 32;  // plans do not depend on the host's free memory
  return o;
}

// Compiles `text` to an ExecPlan and runs it on the CPU reference with `threads` threads. Fails
// the calling test (and returns an empty result) if any rung refuses.
inline runtime::RunResult CompileAndRun(const std::string& text, int threads = 1,
                                        pipeline::CompileOptions options = ProdOptions()) {
  auto c = pipeline::Compile(text, options);
  if (!c.ok()) {
    ADD_FAILURE() << "compile failed: " << c.errors().front().Format();
    return {};
  }
  runtime::cpu::CpuExecutor exec({.threads = threads});
  auto r = exec.Run(*c->plan, {});
  if (!r.ok()) {
    ADD_FAILURE() << "run failed: " << r.errors().front().Format();
    return {};
  }
  return std::move(r.value());
}

inline const runtime::HostTensor* FindOutput(const runtime::RunResult& r, const std::string& name) {
  for (const auto& [n, t] : r.outputs)
    if (n == name) return &t;
  return nullptr;
}

}  // namespace scellis::testing
