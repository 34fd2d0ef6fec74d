// The device's copy bandwidth through Vulkan alone: no Dawn, no Tint, no Scellis, the reference
// beside Scellis's kernels (it showed that the slow "held-memory" rows were neither the driver's
// placement nor Dawn's allocations but a warm-up: bench/warm_up.h, bench/RESULTS.md): the same
// vec4 copy of 2^log2 floats, timed by GPU timestamps, with N MiB of other buffers held beside it,
// in the memory type Dawn picks (device-local, the largest heap, not host-visible) or another.
//
// usage: vk_bandwidth [--log2=26] [--ballast-mib=0] [--runs=20] [--workgroups=8448]
//                     [--dedicated] [--host-visible] [--untouched-ballast]
//                     [--host-ballast-mib=0] [--host-cached] [--robust] [--replay=TRACE]
//                     [--isolated] [--gap-us=400]
// --isolated runs each timed shader copy in a submission of its own, the host waiting for it and
// pausing --gap-us before the next, as a Scellis run of one step per submission leaves the GPU
// idle between kernels (without it every run is recorded back to back in one submission).
// --replay=TRACE makes the allocations and frees a traced process made (vk_trace.cpp's JSON
// lines), in order, sizes and memory types as traced (their chains left out), and places the copy
// in the first two device-local allocations of its size, the way Scellis's copy of that size lay
// in its process; it stops where either of those two is freed. Whether the driver's placement of
// Dawn's allocation sequence alone gives Scellis's rates.
// Prints one JSON line: the memory types, then the medians and bests of the shader copy and of
// vkCmdCopyBuffer, in GB/s counting bytes read plus bytes written. Exit 2 on bad arguments,
// 1 when Vulkan fails or the copy's result is wrong.
#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "vk_copy.spv.h"  // vk_copy_spv: vk_copy.comp compiled by glslangValidator

namespace {

void Check(VkResult result, const char* what) {
  if (result != VK_SUCCESS) {
    std::fprintf(stderr, "vk_bandwidth: %s failed (VkResult %d)\n", what, int(result));
    std::exit(1);
  }
}

struct Options {
  int log2 = 26;
  int64_t ballast_mib = 0;
  int runs = 20;
  uint32_t workgroups = 132 * 64;  // 64 per multiprocessor of an H100 or H200
  bool dedicated = false;
  bool host_visible = false;
  bool touch_ballast = true;
  int64_t host_ballast_mib = 0;  // system memory the GPU reaches, as a staging buffer's
  bool host_cached = false;
  bool robust = false;    // the robustBufferAccess feature, which Dawn enables
  std::string replay;     // a vk_trace.cpp trace whose allocations are made again first
  bool isolated = false;  // each timed shader copy submitted and waited for alone
  int gap_us = 400;       // the host's pause between isolated submissions
};

bool Parse(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* prefix) -> const char* {
      return arg.rfind(prefix, 0) == 0 ? arg.c_str() + std::strlen(prefix) : nullptr;
    };
    if (const char* v = value("--log2="))
      options.log2 = std::atoi(v);
    else if (const char* v = value("--ballast-mib="))
      options.ballast_mib = std::atoll(v);
    else if (const char* v = value("--runs="))
      options.runs = std::atoi(v);
    else if (const char* v = value("--workgroups="))
      options.workgroups = uint32_t(std::atoll(v));
    else if (arg == "--dedicated")
      options.dedicated = true;
    else if (arg == "--host-visible")
      options.host_visible = true;
    else if (arg == "--untouched-ballast")
      options.touch_ballast = false;
    else if (const char* v = value("--host-ballast-mib="))
      options.host_ballast_mib = std::atoll(v);
    else if (arg == "--host-cached")
      options.host_cached = true;
    else if (arg == "--robust")
      options.robust = true;
    else if (const char* v = value("--replay="))
      options.replay = v;
    else if (arg == "--isolated")
      options.isolated = true;
    else if (const char* v = value("--gap-us="))
      options.gap_us = std::atoi(v);
    else
      return false;
  }
  return options.log2 >= 10 && options.log2 <= 30 && options.ballast_mib >= 0 &&
         options.host_ballast_mib >= 0 && options.runs >= 1 && options.runs <= 1000 &&
         options.workgroups >= 1 && options.gap_us >= 0;
}

struct Gpu {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
};

Gpu Open(bool robust) {
  Gpu gpu;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vk_bandwidth";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  instance_info.pApplicationInfo = &app;
  Check(vkCreateInstance(&instance_info, nullptr, &gpu.instance), "vkCreateInstance");
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(gpu.instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(gpu.instance, &count, devices.data());
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(d, &p);
    if (gpu.physical == VK_NULL_HANDLE || p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
      gpu.physical = d;
      gpu.properties = p;
    }
  }
  if (gpu.physical == VK_NULL_HANDLE) Check(VK_ERROR_INITIALIZATION_FAILED, "a Vulkan device");
  vkGetPhysicalDeviceMemoryProperties(gpu.physical, &gpu.memory);
  vkGetPhysicalDeviceQueueFamilyProperties(gpu.physical, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(gpu.physical, &count, families.data());
  gpu.family = count;
  for (uint32_t i = 0; i < count && gpu.family == count; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) gpu.family = i;
  if (gpu.family == count) Check(VK_ERROR_INITIALIZATION_FAILED, "a compute queue");
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = gpu.family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  VkPhysicalDeviceFeatures features{};
  features.robustBufferAccess = robust ? VK_TRUE : VK_FALSE;
  device_info.pEnabledFeatures = &features;
  Check(vkCreateDevice(gpu.physical, &device_info, nullptr, &gpu.device), "vkCreateDevice");
  vkGetDeviceQueue(gpu.device, gpu.family, 0, &gpu.queue);
  return gpu;
}

// A device-local type in the largest heap, one that is not host-visible where there is one, the
// first among equals: on the NVIDIA cards the type Dawn picks for a buffer never mapped (its
// FindBestTypeIndex takes the first device-local type of the largest heap, listed there before the
// host-visible one). --host-visible asks for a device-local type that is also host-visible.
uint32_t PickMemoryType(const Gpu& gpu, uint32_t allowed, bool host_visible) {
  int best = -1;
  auto heap = [&](int t) {
    return gpu.memory.memoryHeaps[gpu.memory.memoryTypes[t].heapIndex].size;
  };
  auto visible = [&](int t) {
    return bool(gpu.memory.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  };
  for (uint32_t i = 0; i < gpu.memory.memoryTypeCount; ++i) {
    if (!(allowed & (1u << i))) continue;
    if (!(gpu.memory.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) continue;
    if (host_visible && !visible(int(i))) continue;
    const bool better = best < 0 || (visible(best) && !visible(int(i)) && !host_visible) ||
                        (visible(best) == visible(int(i)) && heap(int(i)) > heap(best));
    if (better) best = int(i);
  }
  if (best < 0) Check(VK_ERROR_FEATURE_NOT_PRESENT, "a memory type of the kind asked for");
  return uint32_t(best);
}

struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint32_t type = 0;
};

enum class Place { kDevice, kHost, kHostCached };

Buffer MakeBuffer(const Gpu& gpu, VkDeviceSize bytes, bool dedicated, bool host_visible,
                  Place place = Place::kDevice) {
  Buffer b;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  Check(vkCreateBuffer(gpu.device, &info, nullptr, &b.buffer), "vkCreateBuffer");
  VkMemoryRequirements needs;
  vkGetBufferMemoryRequirements(gpu.device, b.buffer, &needs);
  if (place != Place::kDevice) {
    b.type = gpu.memory.memoryTypeCount;
    for (uint32_t i = 0; i < gpu.memory.memoryTypeCount && b.type == gpu.memory.memoryTypeCount;
         ++i) {
      VkMemoryPropertyFlags want =
          VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
          (place == Place::kHostCached ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : 0u);
      if ((needs.memoryTypeBits & (1u << i)) &&
          (gpu.memory.memoryTypes[i].propertyFlags & want) == want)
        b.type = i;
    }
    if (b.type == gpu.memory.memoryTypeCount) Check(VK_ERROR_FEATURE_NOT_PRESENT, "host memory");
  } else {
    b.type = PickMemoryType(gpu, needs.memoryTypeBits, host_visible);
  }
  VkMemoryDedicatedAllocateInfo dedicated_info{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO};
  dedicated_info.buffer = b.buffer;
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.pNext = dedicated ? &dedicated_info : nullptr;
  alloc.allocationSize = needs.size;
  alloc.memoryTypeIndex = b.type;
  Check(vkAllocateMemory(gpu.device, &alloc, nullptr, &b.memory), "vkAllocateMemory");
  Check(vkBindBufferMemory(gpu.device, b.buffer, b.memory, 0), "vkBindBufferMemory");
  return b;
}

// A buffer of `bytes` over memory already allocated (at its start).
Buffer BufferOver(const Gpu& gpu, VkDeviceSize bytes, VkDeviceMemory memory, uint32_t type) {
  Buffer b;
  b.memory = memory;
  b.type = type;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  Check(vkCreateBuffer(gpu.device, &info, nullptr, &b.buffer), "vkCreateBuffer");
  Check(vkBindBufferMemory(gpu.device, b.buffer, memory, 0), "vkBindBufferMemory");
  return b;
}

// The number after "key": in a trace line, or -1.
long long Field(const std::string& line, const char* key) {
  const std::string tag = std::string("\"") + key + "\": ";
  const size_t at = line.find(tag);
  return at == std::string::npos ? -1 : std::atoll(line.c_str() + at + tag.size());
}

// Makes a trace's allocations and frees again (see --replay) and returns the copy's two buffers
// over the first two device-local allocations of `bytes`. Every other allocation stays held.
std::pair<Buffer, Buffer> Replay(const Gpu& gpu, const std::string& path, VkDeviceSize bytes) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "vk_bandwidth: cannot read the trace %s\n", path.c_str());
    std::exit(2);
  }
  // The type the copy's memory must have: the one Dawn picks for a buffer never mapped.
  VkBuffer probe;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  Check(vkCreateBuffer(gpu.device, &info, nullptr, &probe), "vkCreateBuffer");
  VkMemoryRequirements needs;
  vkGetBufferMemoryRequirements(gpu.device, probe, &needs);
  vkDestroyBuffer(gpu.device, probe, nullptr);
  const uint32_t copy_type = PickMemoryType(gpu, needs.memoryTypeBits, false);
  std::map<long long, VkDeviceMemory> live;
  std::vector<long long> copy_ids;
  for (std::string line; std::getline(in, line);) {
    const long long id = Field(line, "id");
    if (line.find("\"vkAllocateMemory\"") != std::string::npos && Field(line, "result") == 0) {
      const long long size = Field(line, "bytes"), type = Field(line, "type");
      if (size <= 0 || type < 0 || type >= gpu.memory.memoryTypeCount) {
        std::fprintf(stderr, "vk_bandwidth: trace allocation %lld does not fit this device\n", id);
        std::exit(2);
      }
      VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
      alloc.allocationSize = VkDeviceSize(size);
      alloc.memoryTypeIndex = uint32_t(type);
      Check(vkAllocateMemory(gpu.device, &alloc, nullptr, &live[id]), "vkAllocateMemory (replay)");
      if (copy_ids.size() < 2 && VkDeviceSize(size) >= needs.size &&
          VkDeviceSize(size) < needs.size + (VkDeviceSize(1) << 20) && uint32_t(type) == copy_type)
        copy_ids.push_back(id);
    } else if (line.find("\"vkFreeMemory\"") != std::string::npos && live.count(id)) {
      if (std::find(copy_ids.begin(), copy_ids.end(), id) != copy_ids.end()) break;
      vkFreeMemory(gpu.device, live[id], nullptr);
      live.erase(id);
    }
  }
  if (copy_ids.size() < 2) {
    std::fprintf(stderr,
                 "vk_bandwidth: the trace holds no two device-local allocations of %llu bytes\n",
                 (unsigned long long)bytes);
    std::exit(2);
  }
  return {BufferOver(gpu, bytes, live[copy_ids[0]], copy_type),
          BufferOver(gpu, bytes, live[copy_ids[1]], copy_type)};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!Parse(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: vk_bandwidth [--log2=26] [--ballast-mib=0] [--runs=20] "
                 "[--workgroups=N] [--dedicated] [--host-visible] [--untouched-ballast] "
                 "[--host-ballast-mib=N] [--host-cached] [--robust] [--replay=TRACE] "
                 "[--isolated] [--gap-us=N]\n");
    return 2;
  }
  Gpu gpu = Open(options.robust);
  const VkDeviceSize bytes = VkDeviceSize(4) << options.log2;
  Buffer source, destination;
  if (options.replay.empty()) {
    source = MakeBuffer(gpu, bytes, options.dedicated, options.host_visible);
    destination = MakeBuffer(gpu, bytes, options.dedicated, options.host_visible);
  } else {
    std::tie(source, destination) = Replay(gpu, options.replay, bytes);
  }
  std::vector<Buffer> ballast;
  for (int64_t left = options.ballast_mib; left > 0; left -= 256)
    ballast.push_back(MakeBuffer(gpu, VkDeviceSize(std::min<int64_t>(left, 256)) << 20,
                                 options.dedicated, options.host_visible));
  std::vector<Buffer> host_ballast;
  for (int64_t left = options.host_ballast_mib; left > 0; left -= 256)
    host_ballast.push_back(MakeBuffer(gpu, VkDeviceSize(std::min<int64_t>(left, 256)) << 20, false,
                                      false,
                                      options.host_cached ? Place::kHostCached : Place::kHost));
  Buffer readback = MakeBuffer(gpu, 4096, false, false, Place::kHost);

  VkShaderModuleCreateInfo shader_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  shader_info.codeSize = sizeof(vk_copy_spv);
  shader_info.pCode = vk_copy_spv;
  VkShaderModule shader;
  Check(vkCreateShaderModule(gpu.device, &shader_info, nullptr, &shader), "vkCreateShaderModule");
  VkDescriptorSetLayoutBinding bindings[2] = {};
  for (uint32_t i = 0; i < 2; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set_layout_info{
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_layout_info.bindingCount = 2;
  set_layout_info.pBindings = bindings;
  VkDescriptorSetLayout set_layout;
  Check(vkCreateDescriptorSetLayout(gpu.device, &set_layout_info, nullptr, &set_layout),
        "set layout");
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &set_layout;
  layout_info.pushConstantRangeCount = 1;
  layout_info.pPushConstantRanges = &push;
  VkPipelineLayout layout;
  Check(vkCreatePipelineLayout(gpu.device, &layout_info, nullptr, &layout), "pipeline layout");
  VkComputePipelineCreateInfo pipeline_info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline_info.stage.module = shader;
  pipeline_info.stage.pName = "main";
  pipeline_info.layout = layout;
  VkPipeline pipeline;
  Check(vkCreateComputePipelines(gpu.device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &pipeline),
        "vkCreateComputePipelines");
  VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
  VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool_info.maxSets = 1;
  pool_info.poolSizeCount = 1;
  pool_info.pPoolSizes = &pool_size;
  VkDescriptorPool pool;
  Check(vkCreateDescriptorPool(gpu.device, &pool_info, nullptr, &pool), "descriptor pool");
  VkDescriptorSetAllocateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  set_info.descriptorPool = pool;
  set_info.descriptorSetCount = 1;
  set_info.pSetLayouts = &set_layout;
  VkDescriptorSet set;
  Check(vkAllocateDescriptorSets(gpu.device, &set_info, &set), "descriptor set");
  VkDescriptorBufferInfo buffer_infos[2] = {{source.buffer, 0, VK_WHOLE_SIZE},
                                            {destination.buffer, 0, VK_WHOLE_SIZE}};
  VkWriteDescriptorSet writes[2] = {};
  for (uint32_t i = 0; i < 2; ++i) {
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &buffer_infos[i];
  }
  vkUpdateDescriptorSets(gpu.device, 2, writes, 0, nullptr);

  const uint32_t timestamps = uint32_t(4 * options.runs);
  VkQueryPoolCreateInfo query_info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  query_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  query_info.queryCount = timestamps;
  VkQueryPool queries;
  Check(vkCreateQueryPool(gpu.device, &query_info, nullptr, &queries), "query pool");
  VkCommandPoolCreateInfo command_pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  command_pool_info.queueFamilyIndex = gpu.family;
  command_pool_info.flags =
      VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;  // --isolated reuses it
  VkCommandPool command_pool;
  Check(vkCreateCommandPool(gpu.device, &command_pool_info, nullptr, &command_pool),
        "command pool");
  VkCommandBufferAllocateInfo command_info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  command_info.commandPool = command_pool;
  command_info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  command_info.commandBufferCount = 1;
  VkCommandBuffer commands;
  Check(vkAllocateCommandBuffers(gpu.device, &command_info, &commands), "command buffer");

  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  Check(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  Check(vkCreateFence(gpu.device, &fence_info, nullptr, &fence), "vkCreateFence");
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  auto submit_and_wait = [&] {
    Check(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
    Check(vkQueueSubmit(gpu.queue, 1, &submit, fence), "vkQueueSubmit");
    Check(vkWaitForFences(gpu.device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  };
  // What is recorded so far runs alone; recording goes on in a fresh submission after the pause.
  auto isolate = [&] {
    submit_and_wait();
    Check(vkResetFences(gpu.device, 1, &fence), "vkResetFences");
    std::this_thread::sleep_for(std::chrono::microseconds(options.gap_us));
    Check(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
  };
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  auto full_barrier = [&] {
    vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &barrier, 0, nullptr, 0,
                         nullptr);
  };
  vkCmdResetQueryPool(commands, queries, 0, timestamps);
  float one = 1.0f;
  uint32_t one_bits;
  std::memcpy(&one_bits, &one, 4);
  vkCmdFillBuffer(commands, source.buffer, 0, VK_WHOLE_SIZE, one_bits);
  vkCmdFillBuffer(commands, destination.buffer, 0, VK_WHOLE_SIZE, 0);
  for (const Buffer& b : host_ballast) vkCmdFillBuffer(commands, b.buffer, 0, VK_WHOLE_SIZE, 0);
  if (options.touch_ballast)
    for (const Buffer& b : ballast) vkCmdFillBuffer(commands, b.buffer, 0, VK_WHOLE_SIZE, 0);
  full_barrier();
  const uint32_t counts[2] = {uint32_t(bytes / 16), options.workgroups * 256};
  auto bind_copy = [&] {
    vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0,
                            nullptr);
    vkCmdPushConstants(commands, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, counts);
  };
  bind_copy();
  for (int run = 0; run < options.runs; ++run) {
    if (options.isolated) {
      isolate();
      bind_copy();
    }
    vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 2 * run);
    vkCmdDispatch(commands, options.workgroups, 1, 1);
    vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 2 * run + 1);
    full_barrier();
  }
  if (options.isolated) isolate();
  // The shader's result is read back before the timed vkCmdCopyBuffer runs, which copy the
  // destination back over the source (the same values).
  VkBufferCopy head{0, 0, 4096};
  vkCmdCopyBuffer(commands, destination.buffer, readback.buffer, 1, &head);
  full_barrier();
  for (int run = 0; run < options.runs; ++run) {
    const uint32_t q = uint32_t(2 * options.runs + 2 * run);
    VkBufferCopy whole{0, 0, bytes};
    vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, q);
    vkCmdCopyBuffer(commands, destination.buffer, source.buffer, 1, &whole);
    vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, q + 1);
    full_barrier();
  }
  submit_and_wait();

  std::vector<uint64_t> ticks(timestamps);
  Check(vkGetQueryPoolResults(gpu.device, queries, 0, timestamps, ticks.size() * 8, ticks.data(), 8,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  void* mapped = nullptr;
  Check(vkMapMemory(gpu.device, readback.memory, 0, 4096, 0, &mapped), "vkMapMemory");
  bool correct = true;
  for (int i = 0; i < 1024; ++i) correct = correct && static_cast<const float*>(mapped)[i] == 1.0f;
  vkUnmapMemory(gpu.device, readback.memory);

  const double ns_per_tick = gpu.properties.limits.timestampPeriod;
  auto rates = [&](int first) {
    std::vector<double> gb_per_s;
    for (int run = 0; run < options.runs; ++run) {
      double ns = double(ticks[first + 2 * run + 1] - ticks[first + 2 * run]) * ns_per_tick;
      gb_per_s.push_back(2.0 * double(bytes) / ns);
    }
    return gb_per_s;
  };
  std::vector<double> by_shader = rates(0), by_copy = rates(2 * options.runs);
  std::string types;
  for (uint32_t i = 0; i < gpu.memory.memoryTypeCount; ++i) {
    const VkMemoryType& t = gpu.memory.memoryTypes[i];
    char entry[96];
    std::snprintf(entry, sizeof entry, "%s{\"flags\": %u, \"heap\": %u, \"heap_gib\": %.1f}",
                  i ? ", " : "", t.propertyFlags, t.heapIndex,
                  double(gpu.memory.memoryHeaps[t.heapIndex].size) / (1 << 30));
    types += entry;
  }
  std::printf(
      "{\"api\": \"vulkan\", \"device\": \"%s\", \"log2\": %d, \"ballast_mib\": %lld, "
      "\"ballast_touched\": %s, \"host_ballast_mib\": %lld, \"host_cached\": %s, \"robust\": %s, "
      "\"dedicated\": "
      "%s, \"replay\": \"%s\", \"isolated\": %s, \"gap_us\": %d, \"memory_type\": %u, "
      "\"workgroups\": %u, "
      "\"runs\": %d, \"shader_gb_per_s\": %.0f, \"shader_best_gb_per_s\": %.0f, "
      "\"copy_buffer_gb_per_s\": %.0f, \"copy_buffer_best_gb_per_s\": %.0f, \"correct\": %s, "
      "\"memory_types\": [%s]}\n",
      gpu.properties.deviceName, options.log2, (long long)options.ballast_mib,
      options.touch_ballast ? "true" : "false", (long long)options.host_ballast_mib,
      options.host_cached ? "true" : "false", options.robust ? "true" : "false",
      options.dedicated ? "true" : "false", options.replay.c_str(),
      options.isolated ? "true" : "false", options.gap_us, source.type, options.workgroups,
      options.runs, Median(by_shader), *std::max_element(by_shader.begin(), by_shader.end()),
      Median(by_copy), *std::max_element(by_copy.begin(), by_copy.end()),
      correct ? "true" : "false", types.c_str());
  vkDeviceWaitIdle(gpu.device);
  return correct ? 0 : 1;
}
