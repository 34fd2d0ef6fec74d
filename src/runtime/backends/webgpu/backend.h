// WebGPU as a registry entry. Probing opens a device, which is also the only honest test of
// whether one can be opened; Dawn's and the Vulkan loader's own stderr chatter during it is
// captured (ProbeReport::log), not shown on every run.
#pragma once

#include <memory>
#include <string>

#include "runtime/backend.h"
#include "runtime/backends/webgpu/device.h"

namespace scellis::runtime::webgpu {

std::unique_ptr<Backend> MakeBackend();

// Opens a device with Dawn's and the Vulkan loader's stderr captured into `log`.
Result<std::unique_ptr<Device>> OpenQuietly(const OpenOptions& options, std::string* log);

// The adapter, its limits and features as JSON (what `scellis probe` shows).
Json AdapterJson(const Device& device);

}  // namespace scellis::runtime::webgpu
