// A stand-in for the Vulkan loader that writes down what a process asks of Vulkan: the device it
// creates (extensions, and the features it turns on through the create info's chain), every
// memory allocation (size, memory type, what its chain asks: a dedicated allocation, device
// addresses, a priority), every buffer (size, usage, flags) and every free. It asks what Dawn does
// that vk_bandwidth.cpp does not, where the copy through Dawn falls to about 1.6 TB/s on an H100
// and the copy through Vulkan alone keeps 2.9 (bench/RESULTS.md, 2026-12-06 and 12-07).
//
// Built as a library named libvulkan.so.1 (vk_bandwidth.sh build writes dist/libvk_trace.so); it
// forwards every call to the real loader, named by VK_TRACE_REAL, and appends one JSON object per
// call to the file VK_TRACE_OUT (stderr without it). Scellis loads it before Dawn through
// SCELLIS_VULKAN_LOADER, so Dawn's own dlopen("libvulkan.so.1") finds it. With
//   SCELLIS_VULKAN_LOADER=dist/libvk_trace.so VK_TRACE_OUT=trace.jsonl
//   VK_TRACE_REAL=/usr/lib/x86_64-linux-gnu/libvulkan.so.1
// in the environment, `dist/scellis_bench_elementwise --kinds=copy --log2=26` writes its trace
// (`bash bench/elementwise/vk_bandwidth.sh trace` sets them up).
#define VK_NO_PROTOTYPES
#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

namespace {

std::mutex lock;
PFN_vkGetInstanceProcAddr real_instance_proc = nullptr;
PFN_vkGetDeviceProcAddr real_device_proc = nullptr;
PFN_vkCreateDevice real_create_device = nullptr;
PFN_vkAllocateMemory real_allocate = nullptr;
PFN_vkFreeMemory real_free = nullptr;
PFN_vkCreateBuffer real_create_buffer = nullptr;
// Each live allocation's number (in the order of the process's allocations) and size.
std::map<VkDeviceMemory, std::pair<uint64_t, VkDeviceSize>> allocated;
uint64_t allocations = 0;
VkDeviceSize live_bytes = 0;

void Emit(const std::string& json) {
  static FILE* out = [] {
    const char* path = std::getenv("VK_TRACE_OUT");
    FILE* f = path && *path ? std::fopen(path, "a") : nullptr;
    return f ? f : stderr;
  }();
  std::fprintf(out, "%s\n", json.c_str());
  std::fflush(out);
}

std::string Quote(const char* s) {
  return "\"" + std::string(s ? s : "") + "\"";
}

std::string Bool(VkBool32 b) {
  return b ? "true" : "false";
}

// The structures of a chain by their sType, and the fields that bear on memory and robustness
// of those that carry them.
std::string Chain(const void* next) {
  std::string out = "[";
  for (auto* s = static_cast<const VkBaseInStructure*>(next); s; s = s->pNext) {
    if (out.size() > 1) out += ", ";
    out += "{\"sType\": " + std::to_string(int(s->sType));
    switch (s->sType) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2: {
        auto* f = reinterpret_cast<const VkPhysicalDeviceFeatures2*>(s);
        out += ", \"robustBufferAccess\": " + Bool(f->features.robustBufferAccess);
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT: {
        auto* f = reinterpret_cast<const VkPhysicalDeviceRobustness2FeaturesEXT*>(s);
        out += ", \"robustBufferAccess2\": " + Bool(f->robustBufferAccess2) +
               ", \"nullDescriptor\": " + Bool(f->nullDescriptor);
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
        auto* f = reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(s);
        out += ", \"bufferDeviceAddress\": " + Bool(f->bufferDeviceAddress) +
               ", \"vulkanMemoryModel\": " + Bool(f->vulkanMemoryModel);
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PRIORITY_FEATURES_EXT:
        out += ", \"memoryPriority\": " +
               Bool(reinterpret_cast<const VkPhysicalDeviceMemoryPriorityFeaturesEXT*>(s)
                        ->memoryPriority);
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PAGEABLE_DEVICE_LOCAL_MEMORY_FEATURES_EXT:
        out += ", \"pageableDeviceLocalMemory\": " +
               Bool(reinterpret_cast<const VkPhysicalDevicePageableDeviceLocalMemoryFeaturesEXT*>(s)
                        ->pageableDeviceLocalMemory);
        break;
      case VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO:
        out += ", \"flags\": " +
               std::to_string(reinterpret_cast<const VkMemoryAllocateFlagsInfo*>(s)->flags);
        break;
      case VK_STRUCTURE_TYPE_MEMORY_PRIORITY_ALLOCATE_INFO_EXT:
        out +=
            ", \"priority\": " +
            std::to_string(reinterpret_cast<const VkMemoryPriorityAllocateInfoEXT*>(s)->priority);
        break;
      case VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO:
        out += ", \"dedicated\": true";
        break;
      default:
        break;
    }
    out += "}";
  }
  return out + "]";
}

VKAPI_ATTR VkResult VKAPI_CALL CreateDevice(VkPhysicalDevice physical,
                                            const VkDeviceCreateInfo* info,
                                            const VkAllocationCallbacks* callbacks,
                                            VkDevice* device) {
  std::string extensions = "[";
  for (uint32_t i = 0; i < info->enabledExtensionCount; ++i)
    extensions += (i ? ", " : "") + Quote(info->ppEnabledExtensionNames[i]);
  std::string json = "{\"call\": \"vkCreateDevice\", \"extensions\": " + extensions + "]";
  if (info->pEnabledFeatures)
    json += ", \"robustBufferAccess\": " + Bool(info->pEnabledFeatures->robustBufferAccess);
  Emit(json + ", \"chain\": " + Chain(info->pNext) + "}");
  return real_create_device(physical, info, callbacks, device);
}

VKAPI_ATTR VkResult VKAPI_CALL AllocateMemory(VkDevice device, const VkMemoryAllocateInfo* info,
                                              const VkAllocationCallbacks* callbacks,
                                              VkDeviceMemory* memory) {
  const VkResult result = real_allocate(device, info, callbacks, memory);
  std::lock_guard<std::mutex> hold(lock);
  const uint64_t id = allocations++;
  if (result == VK_SUCCESS) {
    allocated[*memory] = {id, info->allocationSize};
    live_bytes += info->allocationSize;
  }
  Emit("{\"call\": \"vkAllocateMemory\", \"id\": " + std::to_string(id) +
       ", \"bytes\": " + std::to_string(info->allocationSize) +
       ", \"type\": " + std::to_string(info->memoryTypeIndex) +
       ", \"chain\": " + Chain(info->pNext) + ", \"result\": " + std::to_string(int(result)) +
       ", \"live_bytes\": " + std::to_string(live_bytes) + "}");
  return result;
}

VKAPI_ATTR void VKAPI_CALL FreeMemory(VkDevice device, VkDeviceMemory memory,
                                      const VkAllocationCallbacks* callbacks) {
  {
    std::lock_guard<std::mutex> hold(lock);
    auto it = allocated.find(memory);
    if (it != allocated.end()) {
      live_bytes -= it->second.second;
      Emit("{\"call\": \"vkFreeMemory\", \"id\": " + std::to_string(it->second.first) +
           ", \"bytes\": " + std::to_string(it->second.second) +
           ", \"live_bytes\": " + std::to_string(live_bytes) + "}");
      allocated.erase(it);
    }
  }
  real_free(device, memory, callbacks);
}

VKAPI_ATTR VkResult VKAPI_CALL CreateBuffer(VkDevice device, const VkBufferCreateInfo* info,
                                            const VkAllocationCallbacks* callbacks,
                                            VkBuffer* buffer) {
  Emit("{\"call\": \"vkCreateBuffer\", \"bytes\": " + std::to_string(info->size) +
       ", \"usage\": " + std::to_string(info->usage) +
       ", \"flags\": " + std::to_string(info->flags) + ", \"chain\": " + Chain(info->pNext) + "}");
  return real_create_buffer(device, info, callbacks, buffer);
}

// The traced function in place of `real` where `name` is one (remembering `real` for it to call),
// else `real` itself.
PFN_vkVoidFunction Traced(const char* name, PFN_vkVoidFunction real);

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetDeviceProcAddr(VkDevice device, const char* name) {
  return Traced(name, real_device_proc(device, name));
}

PFN_vkVoidFunction Traced(const char* name, PFN_vkVoidFunction real) {
  if (!real) return nullptr;
  auto swap = [&](auto& slot, auto traced) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(real);
    return reinterpret_cast<PFN_vkVoidFunction>(traced);
  };
  if (!std::strcmp(name, "vkCreateDevice")) return swap(real_create_device, &CreateDevice);
  if (!std::strcmp(name, "vkAllocateMemory")) return swap(real_allocate, &AllocateMemory);
  if (!std::strcmp(name, "vkFreeMemory")) return swap(real_free, &FreeMemory);
  if (!std::strcmp(name, "vkCreateBuffer")) return swap(real_create_buffer, &CreateBuffer);
  if (!std::strcmp(name, "vkGetDeviceProcAddr")) return swap(real_device_proc, &GetDeviceProcAddr);
  return real;
}

bool LoadReal() {
  if (real_instance_proc) return true;
  const char* path = std::getenv("VK_TRACE_REAL");
  void* handle = path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (!handle) {
    std::fprintf(stderr, "vk_trace: VK_TRACE_REAL must name the real Vulkan loader (%s)\n",
                 dlerror());
    return false;
  }
  real_instance_proc =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(handle, "vkGetInstanceProcAddr"));
  return real_instance_proc != nullptr;
}

}  // namespace

extern "C" VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance instance,
                                                                          const char* name) {
  if (!LoadReal()) return nullptr;
  if (!std::strcmp(name, "vkGetInstanceProcAddr"))
    return reinterpret_cast<PFN_vkVoidFunction>(&vkGetInstanceProcAddr);
  return Traced(name, real_instance_proc(instance, name));
}
