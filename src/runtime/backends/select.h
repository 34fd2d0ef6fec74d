// Backend choice. `auto` walks the registry in order and takes the first automatic backend that
// opens — a hardware WebGPU adapter, else the CPU reference — recording every attempt and why it
// was passed over. Software adapters are not a GPU: only an explicit `webgpu` request with
// allow_software_adapter takes one. An explicit request that cannot be met is an error, never a
// silent run elsewhere.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/backends/registry.h"

namespace scellis::runtime {

struct SelectOptions {
  std::string requested = "auto";  // auto | webgpu | cpu | null
  bool allow_software_adapter = false;
  int cpu_threads = 0;
  // WebGPU: the adapter's index among those Dawn offers (BackendOptions::adapter).
  std::optional<uint32_t> adapter = std::nullopt;
  bool gpu_timestamps = false;  // BackendOptions::gpu_timestamps
};

struct Selection {
  std::unique_ptr<Executor> executor;
  std::string backend;                         // the chosen backend's name
  std::optional<std::string> fallback_reason;  // set when auto passed over a backend
  std::vector<std::string> attempts;
  execplan::DeviceLimits limits;
  DeviceProfile profile;
};

Result<Selection> SelectBackend(const SelectOptions& options);

// The loud banner every CPU run prints (to stderr), with the reason.
std::string CpuBanner(const std::string& why);

}  // namespace scellis::runtime
