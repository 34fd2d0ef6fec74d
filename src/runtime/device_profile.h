// The identity of the device a run happened on, which conformance receipts are scoped to: the
// adapter, its backend API, the driver and the Dawn build. Every executor reports its own.
#pragma once

#include <string>

namespace scellis::runtime {

// A value made safe for a profile key, whose parts are "name=value" joined by ';'.
inline std::string ProfileKeyPart(std::string s) {
  for (char& c : s)
    if (c == ';' || c == '=' || c == '\n' || c == '\r') c = '_';
  return s;
}

struct DeviceProfile {
  // Stable, e.g. "webgpu;backend=vulkan;vendor=...;device=...;driver=...;dawn=..." or
  // "cpu;reference" (the reference gives the same bits on every machine).
  std::string key;
  std::string vendor, architecture, device, driver, backend_api, dawn_version, adapter_type;
  bool is_software = false;
  // Which of the host's adapters (WebGPU): "adapter 2 of 2: NVIDIA H200 (vulkan), by MPI local
  // rank 1"; "" on backends with one device. Not part of the key: identical GPUs share receipts.
  std::string adapter;
  int adapter_index = 0;  // 0-based
  int adapter_count = 0;  // 0: unknown
};

}  // namespace scellis::runtime
