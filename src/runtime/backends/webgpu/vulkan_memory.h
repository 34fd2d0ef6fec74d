// The memory of the GPU behind a WebGPU adapter, asked of Vulkan. The standard WebGPU C API says
// nothing of a device's memory, so without this a plan on a discrete GPU is judged against the
// host's memory (an 80 GB card on a host of 128 GB would be given a budget of 100 GB). The answer
// comes from the same Vulkan loader Dawn runs on, for the physical device whose vendor and device
// IDs are the adapter's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace scellis::runtime::webgpu {

// One of a Vulkan device's memory heaps: its size, whether it is the device's own memory
// (VK_MEMORY_HEAP_DEVICE_LOCAL_BIT), and what VK_EXT_memory_budget says this process may allocate
// from it now, other processes' use counted (0 where the driver does not say).
struct VulkanHeap {
  int64_t bytes = 0;
  bool device_local = false;
  int64_t budget_bytes = 0;
};

// What a plan may count on: the largest device-local heap, or its budget where the driver gives a
// smaller one (another process holding part of the card). `bytes` is 0 when no heap is
// device-local; `source` says where the figure came from, for the plan's budget line.
struct DeviceMemory {
  int64_t bytes = 0;
  std::string source;
};
DeviceMemory DeviceMemoryOf(const std::vector<VulkanHeap>& heaps, const std::string& device_name);

struct VulkanDevice {
  std::string name;
  std::vector<VulkanHeap> heaps;
};

// The heaps of the first physical device with these IDs, through the Vulkan loader at
// `loader_path` (its own instance, made and released here). Errors name what failed: no loader, no
// instance, no device with these IDs (the devices seen are listed).
Result<VulkanDevice> ReadVulkanDevice(const std::string& loader_path, uint32_t vendor_id,
                                      uint32_t device_id);

}  // namespace scellis::runtime::webgpu
