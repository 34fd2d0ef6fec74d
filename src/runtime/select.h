// Capability probe and backend choice. `auto` tries a hardware WebGPU adapter, then the CPU
// reference, recording every attempt and why it was passed over. Software adapters are not a GPU:
// only an explicit `webgpu` request with allow_software_adapter takes one. An explicit `webgpu`
// request that cannot be met is an error, never a silent CPU run.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/executor.h"
#include "runtime/backends/webgpu/device.h"

namespace scellis::runtime {

struct SelectOptions {
  std::string requested = "auto";  // auto | webgpu | cpu
  bool allow_software_adapter = false;
  int cpu_threads = 0;
};

struct Selection {
  std::unique_ptr<Executor> executor;
  std::string backend;                         // "webgpu" | "cpu"
  std::optional<std::string> fallback_reason;  // set when auto fell back to the CPU
  std::vector<std::string> attempts;
  execplan::DeviceLimits limits;
  std::optional<webgpu::AdapterInfo> adapter;
};

Result<Selection> SelectBackend(const SelectOptions& options);

// Opens a device with Dawn's and the Vulkan loader's own stderr chatter captured into `log`.
Result<std::unique_ptr<webgpu::Device>> OpenQuietly(const webgpu::OpenOptions& options,
                                                    std::string* log);

// The loud banner every CPU run prints (to stderr), with the reason.
std::string CpuBanner(const std::string& why);

}  // namespace scellis::runtime
