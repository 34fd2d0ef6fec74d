#include "runtime/backends/webgpu/vulkan_memory.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "execplan/plan.h"

namespace scellis::runtime::webgpu {
namespace {

// The few Vulkan declarations this needs, as the Vulkan specification defines them (the headers
// are not a build dependency; these layouts are part of Vulkan's stable ABI).
using VkInstance = struct VkInstanceOpaque*;
using VkPhysicalDevice = struct VkPhysicalDeviceOpaque*;
using VkResult = int32_t;
using PFN_vkVoidFunction = void (*)();
using PFN_vkGetInstanceProcAddr = PFN_vkVoidFunction (*)(VkInstance, const char*);

constexpr int32_t kStructureTypeApplicationInfo = 0;
constexpr int32_t kStructureTypeInstanceCreateInfo = 1;
constexpr int32_t kStructureTypeMemoryProperties2 = 1000059006;
constexpr int32_t kStructureTypeMemoryBudgetProperties = 1000237000;
constexpr uint32_t kApiVersion11 = (1u << 22) | (1u << 12);
constexpr uint32_t kHeapDeviceLocalBit = 0x1;
constexpr int kMaxMemoryTypes = 32;
constexpr int kMaxMemoryHeaps = 16;

struct VkApplicationInfo {
  int32_t sType;
  const void* pNext;
  const char* pApplicationName;
  uint32_t applicationVersion;
  const char* pEngineName;
  uint32_t engineVersion;
  uint32_t apiVersion;
};

struct VkInstanceCreateInfo {
  int32_t sType;
  const void* pNext;
  uint32_t flags;
  const VkApplicationInfo* pApplicationInfo;
  uint32_t enabledLayerCount;
  const char* const* ppEnabledLayerNames;
  uint32_t enabledExtensionCount;
  const char* const* ppEnabledExtensionNames;
};

// VkPhysicalDeviceProperties: the fields read here lead it; the limits and sparse properties
// after them (824 bytes in all) land in `rest`, which is larger than they are.
struct VkPhysicalDevicePropertiesHead {
  uint32_t apiVersion;
  uint32_t driverVersion;
  uint32_t vendorID;
  uint32_t deviceID;
  int32_t deviceType;
  char deviceName[256];
  alignas(8) unsigned char rest[2048];
};

struct VkMemoryType {
  uint32_t propertyFlags;
  uint32_t heapIndex;
};
struct VkMemoryHeap {
  uint64_t size;
  uint32_t flags;
};
struct VkPhysicalDeviceMemoryProperties {
  uint32_t memoryTypeCount;
  VkMemoryType memoryTypes[kMaxMemoryTypes];
  uint32_t memoryHeapCount;
  VkMemoryHeap memoryHeaps[kMaxMemoryHeaps];
};
static_assert(offsetof(VkPhysicalDeviceMemoryProperties, memoryHeaps) == 264 &&
                  sizeof(VkPhysicalDeviceMemoryProperties) == 520,
              "VkPhysicalDeviceMemoryProperties must have Vulkan's layout");

struct VkPhysicalDeviceMemoryBudgetProperties {
  int32_t sType;
  void* pNext;
  uint64_t heapBudget[kMaxMemoryHeaps];
  uint64_t heapUsage[kMaxMemoryHeaps];
};
struct VkPhysicalDeviceMemoryProperties2 {
  int32_t sType;
  void* pNext;
  VkPhysicalDeviceMemoryProperties memoryProperties;
};
struct VkExtensionProperties {
  char extensionName[256];
  uint32_t specVersion;
};

using PFN_vkCreateInstance = VkResult (*)(const VkInstanceCreateInfo*, const void*, VkInstance*);
using PFN_vkDestroyInstance = void (*)(VkInstance, const void*);
using PFN_vkEnumeratePhysicalDevices = VkResult (*)(VkInstance, uint32_t*, VkPhysicalDevice*);
using PFN_vkGetPhysicalDeviceProperties = void (*)(VkPhysicalDevice,
                                                   VkPhysicalDevicePropertiesHead*);
using PFN_vkGetPhysicalDeviceMemoryProperties = void (*)(VkPhysicalDevice,
                                                         VkPhysicalDeviceMemoryProperties*);
using PFN_vkGetPhysicalDeviceMemoryProperties2 = void (*)(VkPhysicalDevice,
                                                          VkPhysicalDeviceMemoryProperties2*);
using PFN_vkEnumerateDeviceExtensionProperties = VkResult (*)(VkPhysicalDevice, const char*,
                                                              uint32_t*, VkExtensionProperties*);

template <typename F>
F Proc(PFN_vkGetInstanceProcAddr get, VkInstance instance, const char* name) {
  return reinterpret_cast<F>(get(instance, name));
}

bool HasExtension(PFN_vkEnumerateDeviceExtensionProperties enumerate, VkPhysicalDevice device,
                  const char* name) {
  uint32_t count = 0;
  if (!enumerate || enumerate(device, nullptr, &count, nullptr) != 0) return false;
  std::vector<VkExtensionProperties> extensions(count);
  if (enumerate(device, nullptr, &count, extensions.data()) < 0) return false;
  return std::any_of(
      extensions.begin(), extensions.begin() + count,
      [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// A device's vendor and device IDs as the messages print them: "0x10de:0x2335".
std::string Ids(uint32_t vendor_id, uint32_t device_id) {
  char ids[32];
  std::snprintf(ids, sizeof ids, "0x%04x:0x%04x", vendor_id, device_id);
  return ids;
}

}  // namespace

DeviceMemory DeviceMemoryOf(const std::vector<VulkanHeap>& heaps, const std::string& device_name) {
  const VulkanHeap* largest = nullptr;
  for (const VulkanHeap& h : heaps)
    if (h.device_local && (!largest || h.bytes > largest->bytes)) largest = &h;
  DeviceMemory m;
  if (!largest) return m;
  m.bytes = largest->bytes;
  m.source = "the device-local memory of " + device_name + " (" +
             execplan::FormatBytes(largest->bytes) + ", from Vulkan";
  if (largest->budget_bytes > 0 && largest->budget_bytes < largest->bytes) {
    m.bytes = largest->budget_bytes;
    m.source += "; " + execplan::FormatBytes(largest->budget_bytes) + " of it free to this process";
  }
  m.source += ")";
  return m;
}

Result<VulkanDevice> ReadVulkanDevice(const std::string& loader_path, uint32_t vendor_id,
                                      uint32_t device_id) {
  if (loader_path.empty())
    return RuntimeError("device-memory-unknown", "no Vulkan loader was loaded");
  // Dawn has loaded this library already; this takes one more reference to it.
  void* loader = dlopen(loader_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!loader) return RuntimeError("device-memory-unknown", "cannot load " + loader_path);
  auto get = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(loader, "vkGetInstanceProcAddr"));
  auto create = get ? Proc<PFN_vkCreateInstance>(get, nullptr, "vkCreateInstance") : nullptr;
  if (!create) {
    dlclose(loader);
    return RuntimeError("device-memory-unknown", loader_path + " has no vkCreateInstance");
  }
  VkApplicationInfo app{
      kStructureTypeApplicationInfo, nullptr, "scellis", 1, "scellis", 1, kApiVersion11};
  VkInstanceCreateInfo ci{
      kStructureTypeInstanceCreateInfo, nullptr, 0, &app, 0, nullptr, 0, nullptr};
  VkInstance instance = nullptr;
  if (VkResult r = create(&ci, nullptr, &instance); r != 0 || !instance) {
    dlclose(loader);
    return RuntimeError("device-memory-unknown",
                        "vkCreateInstance failed (VkResult " + std::to_string(r) + ")");
  }
  auto destroy = Proc<PFN_vkDestroyInstance>(get, instance, "vkDestroyInstance");
  auto enumerate =
      Proc<PFN_vkEnumeratePhysicalDevices>(get, instance, "vkEnumeratePhysicalDevices");
  auto properties =
      Proc<PFN_vkGetPhysicalDeviceProperties>(get, instance, "vkGetPhysicalDeviceProperties");
  auto memory = Proc<PFN_vkGetPhysicalDeviceMemoryProperties>(
      get, instance, "vkGetPhysicalDeviceMemoryProperties");
  auto memory2 = Proc<PFN_vkGetPhysicalDeviceMemoryProperties2>(
      get, instance, "vkGetPhysicalDeviceMemoryProperties2");
  auto extensions = Proc<PFN_vkEnumerateDeviceExtensionProperties>(
      get, instance, "vkEnumerateDeviceExtensionProperties");

  Result<VulkanDevice> out =
      RuntimeError("device-memory-unknown", "Vulkan offers no device " + Ids(vendor_id, device_id));
  uint32_t count = 0;
  std::vector<VkPhysicalDevice> devices;
  if (enumerate && properties && memory && enumerate(instance, &count, nullptr) == 0) {
    devices.resize(count);
    if (enumerate(instance, &count, devices.data()) < 0) count = 0;
  }
  std::string seen;
  for (uint32_t i = 0; i < count; ++i) {
    VkPhysicalDevicePropertiesHead p{};
    properties(devices[i], &p);
    p.deviceName[sizeof p.deviceName - 1] = '\0';
    seen +=
        std::string(seen.empty() ? "" : ", ") + p.deviceName + " " + Ids(p.vendorID, p.deviceID);
    if (p.vendorID != vendor_id || p.deviceID != device_id) continue;
    VkPhysicalDeviceMemoryBudgetProperties budget{
        kStructureTypeMemoryBudgetProperties, nullptr, {}, {}};
    VkPhysicalDeviceMemoryProperties2 props2{kStructureTypeMemoryProperties2, nullptr, {}};
    const bool with_budget = memory2 && p.apiVersion >= kApiVersion11 &&
                             HasExtension(extensions, devices[i], "VK_EXT_memory_budget");
    if (with_budget) {
      props2.pNext = &budget;
      memory2(devices[i], &props2);
    } else {
      memory(devices[i], &props2.memoryProperties);
    }
    const VkPhysicalDeviceMemoryProperties& mp = props2.memoryProperties;
    VulkanDevice d;
    d.name = p.deviceName;
    for (uint32_t h = 0; h < std::min<uint32_t>(mp.memoryHeapCount, kMaxMemoryHeaps); ++h) {
      VulkanHeap heap;
      heap.bytes = static_cast<int64_t>(mp.memoryHeaps[h].size);
      heap.device_local = (mp.memoryHeaps[h].flags & kHeapDeviceLocalBit) != 0;
      if (with_budget) heap.budget_bytes = static_cast<int64_t>(budget.heapBudget[h]);
      d.heaps.push_back(heap);
    }
    out = std::move(d);
    break;
  }
  if (!out.ok() && !seen.empty())
    out = RuntimeError(
        "device-memory-unknown",
        "Vulkan offers no device " + Ids(vendor_id, device_id) + " (it offers " + seen + ")");
  if (destroy) destroy(instance, nullptr);
  dlclose(loader);
  return out;
}

}  // namespace scellis::runtime::webgpu
