#include "runtime/backends/registry.h"

#include "runtime/backends/cpu/backend.h"
#include "runtime/backends/null/backend.h"
#ifndef SCELLIS_WITHOUT_WEBGPU_BACKEND
#include "runtime/backends/webgpu/backend.h"
#endif

namespace scellis::runtime {

const std::vector<std::unique_ptr<Backend>>& BuiltinBackends() {
  static const std::vector<std::unique_ptr<Backend>> backends = [] {
    std::vector<std::unique_ptr<Backend>> b;
#ifndef SCELLIS_WITHOUT_WEBGPU_BACKEND
    b.push_back(webgpu::MakeBackend());
#endif
    b.push_back(cpu::MakeBackend());
    b.push_back(null::MakeBackend());
    return b;
  }();
  return backends;
}

const Backend* FindBackend(std::string_view name) {
  for (const auto& b : BuiltinBackends())
    if (b->name() == name) return b.get();
  return nullptr;
}

std::string BackendChoices() {
  std::string s = "auto";
  for (const auto& b : BuiltinBackends()) s += " | " + b->name();
  return s;
}

}  // namespace scellis::runtime
