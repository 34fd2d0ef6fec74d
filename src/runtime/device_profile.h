// The identity of the device a run happened on, which conformance receipts are scoped to: the
// adapter, its backend API, the driver and the Dawn build. Every executor reports its own.
#pragma once

#include <string>

namespace scellis::runtime {

struct DeviceProfile {
  // Stable, e.g. "webgpu;backend=vulkan;vendor=...;device=...;driver=...;dawn=..." or
  // "cpu;reference" (the reference gives the same bits on every machine).
  std::string key;
  std::string vendor, architecture, device, driver, backend_api, dawn_version, adapter_type;
  bool is_software = false;
};

}  // namespace scellis::runtime
