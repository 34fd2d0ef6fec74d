// A backend as the registry sees it: a name, a probe that says whether it is usable here (and if
// not, why), a way to open an executor, whether it can run a given kernel, and the profile key of
// the device it would run on. The built-in registry (runtime/backends/registry.h) lists them in
// the order `auto` tries them.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/json_util.h"
#include "base/result.h"
#include "kernel/module.h"
#include "runtime/executor.h"

namespace scellis::runtime {

struct BackendOptions {
  // Software WebGPU adapters (SwiftShader, lavapipe) are not a GPU; only an explicit request with
  // this set takes one.
  bool allow_software_adapter = false;
  int cpu_threads = 0;  // 0: the machine's hardware threads
  // WebGPU: plan against a storage binding cap of at most this many bytes (0: the adapter's).
  uint64_t max_binding_bytes = 0;
  // WebGPU: which of the adapters Dawn offers (webgpu::OpenOptions::adapter); unset: Dawn's
  // first, or under MPI the local rank's.
  std::optional<uint32_t> adapter = std::nullopt;
  // WebGPU profiling: time every dispatch with GPU timestamps (webgpu::OpenOptions::gpu_timestamps);
  // a run's stats then carry `gpu_timestamps`.
  bool gpu_timestamps = false;
};

struct ProbeReport {
  std::string summary;            // one line: "SwiftShader Device (vulkan)", "the reference"
  Json details = Json::object();  // backend-specific: adapter, limits, features, ...
  std::string log;                // what the driver printed while probing
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // What an unusable backend lacked, for fallback records: "WebGPU adapter".
  virtual std::string noun() const { return name() + " backend"; }
  // False for backends only an explicit request may choose (null).
  virtual bool automatic() const { return true; }
  // Usable here, with a report; or the diagnostic saying why not.
  virtual Result<ProbeReport> Probe(const BackendOptions& options) const = 0;
  virtual Result<std::unique_ptr<Executor>> Open(const BackendOptions& options) const = 0;
  // Ok when this backend can run `k` of `m`; otherwise the reason.
  virtual Status SupportsKernel(const kernel::Module& m, const kernel::Kernel& k) const = 0;
  // The key receipts made on this backend here would be scoped to.
  virtual Result<std::string> ProfileKey(const BackendOptions& options) const = 0;
};

}  // namespace scellis::runtime
