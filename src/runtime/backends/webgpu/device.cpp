// Device (device.h): choosing the adapter, opening the device on it, and compiling pipelines;
// buffers, recording and submission are in device_commands.cpp.
#include "runtime/backends/webgpu/device.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "runtime/backends/webgpu/dawn_library.h"
#include "runtime/backends/webgpu/device_impl.h"
#include "runtime/backends/webgpu/vulkan_memory.h"
#include "runtime/backends/webgpu/webgpu_api.h"
#include "runtime/device_profile.h"

namespace scellis::runtime::webgpu {
namespace {

// Feature numbers as this Dawn build (bun-webgpu-linux-x64@0.1.7) reads them. The webgpu.yml that
// webgpu_api.h is generated from has since put `core-features-and-limits` at 0x1 and moved the
// rest up by one; this Dawn numbers them as the 2024-25 headers did (its own error message calls
// 0xA "ShaderF16"). Only 0x1-0x10 agree across those headers; later numbers changed between
// releases, so they are shown by number rather than guessed.
constexpr WGPUFeatureName kDawnShaderF16 = static_cast<WGPUFeatureName>(0x0000000A);
constexpr WGPUFeatureName kDawnTimestampQuery = static_cast<WGPUFeatureName>(0x00000003);

// Dawn's own chained struct for device toggles (dawn/webgpu.h: DawnTogglesDescriptor), not part
// of the standard API description. Timed runs turn off `timestamp_quantization`, which otherwise
// rounds every timestamp to a coarse step (a fingerprinting defence browsers need; a profiler
// of its own GPU does not).
constexpr WGPUSType kDawnTogglesDescriptor = static_cast<WGPUSType>(0x0005000A);
struct DawnTogglesDescriptor {
  WGPUChainedStruct chain;
  size_t enabledToggleCount;
  const char* const* enabledToggles;
  size_t disabledToggleCount;
  const char* const* disabledToggles;
};
// SCELLIS_DAWN_TOGGLES=skip_validation,disable_robustness turns Dawn's own checks off, to measure
// what they cost. Only these are accepted: skip_validation drops the host's validation of
// each command (the engine's commands are validated in every test run, with it on);
// disable_robustness drops the bounds clamps Dawn adds to every storage access (every engine
// kernel guards its own indices; a user kernel's WGSL may not, so neither is on by default);
// disable_resource_suballocation gives every buffer device memory of its own rather than a place
// in Dawn's shared blocks (to measure how the driver's placement of memory moves bandwidth).
Result<std::vector<std::string>> DawnTogglesFromEnvironment() {
  std::vector<std::string> toggles;
  const char* v = std::getenv("SCELLIS_DAWN_TOGGLES");
  if (!v) return toggles;
  std::stringstream names(v);
  for (std::string name; std::getline(names, name, ',');) {
    if (name.empty()) continue;
    if (name != "skip_validation" && name != "disable_robustness" &&
        name != "disable_resource_suballocation") {
      return UserError("dawn-toggle-unknown", "", "SCELLIS_DAWN_TOGGLES names \"" + name + "\"",
                       "the accepted toggles are skip_validation, disable_robustness and "
                       "disable_resource_suballocation");
    }
    toggles.push_back(name);
  }
  return toggles;
}

const char* DawnFeatureName(uint32_t value) {
  static const char* const kNames[] = {nullptr,
                                       "depth-clip-control",
                                       "depth32-float-stencil8",
                                       "timestamp-query",
                                       "texture-compression-bc",
                                       "texture-compression-bc-sliced-3d",
                                       "texture-compression-etc2",
                                       "texture-compression-astc",
                                       "texture-compression-astc-sliced-3d",
                                       "indirect-first-instance",
                                       "shader-f16",
                                       "rg11b10-ufloat-renderable",
                                       "bgra8-unorm-storage",
                                       "float32-filterable",
                                       "float32-blendable",
                                       "clip-distances",
                                       "dual-source-blending"};
  return value < std::size(kNames) ? kNames[value] : nullptr;
}

const char* CodeForErrorType(WGPUErrorType type) {
  switch (type) {
    case WGPUErrorType_Validation:
      return "gpu-validation-error";
    case WGPUErrorType_OutOfMemory:
      return "gpu-out-of-memory";
    case WGPUErrorType_Internal:
      return "gpu-internal-error";
    default:
      return "gpu-error";
  }
}

void OnUncapturedError(WGPUDevice const* /*device*/, WGPUErrorType type, WGPUStringView message,
                       void* userdata1, void* /*userdata2*/) {
  auto* sink = static_cast<ErrorSink*>(userdata1);
  sink->Record(RuntimeError(
      CodeForErrorType(type),
      "Dawn reported a " + OrUnknown(ErrorTypeName(type), type) + " error: " + Str(message)));
}

std::string SourceLine(const std::string& src, uint64_t line) {
  std::istringstream in(src);
  std::string text;
  for (uint64_t i = 0; i < line && std::getline(in, text); ++i) {
  }
  return text;
}

// The adapter's identity as Dawn reports it (vendor, device, backend, type, PCI ids).
Status ReadAdapterInfo(const DawnProcs& p, WGPUAdapter adapter, AdapterInfo* info) {
  // The trailing guard catches a WGPUAdapterInfo declared smaller than Dawn's.
  struct {
    WGPUAdapterInfo info;
    uint64_t guard[8];
  } out{};
  std::fill(std::begin(out.guard), std::end(out.guard), 0x5CE1115A5CE1115Aull);
  if (p.AdapterGetInfo(adapter, &out.info) != WGPUStatus_Success) {
    return RuntimeError("no-webgpu-adapter", "wgpuAdapterGetInfo failed");
  }
  for (uint64_t g : out.guard) {
    if (g != 0x5CE1115A5CE1115Aull) {
      return InternalError("webgpu-abi",
                           "Dawn wrote past WGPUAdapterInfo: webgpu_api.h does not match the "
                           "loaded Dawn");
    }
  }
  const WGPUAdapterInfo& ai = out.info;
  info->vendor = Str(ai.vendor);
  info->architecture = Str(ai.architecture);
  info->device = Str(ai.device);
  info->description = Str(ai.description);
  info->driver = info->description;
  info->backend_api = OrUnknown(BackendTypeName(ai.backendType), ai.backendType);
  info->adapter_type = OrUnknown(AdapterTypeName(ai.adapterType), ai.adapterType);
  info->vendor_id = ai.vendorID;
  info->device_id = ai.deviceID;
  p.AdapterInfoFreeMembers(ai);
  return Status::Ok();
}

// The device profile of an adapter (Device::ProfileKey), known before the device exists.
std::string ProfileKeyOf(const AdapterInfo& i) {
  char ids[32];
  std::snprintf(ids, sizeof ids, "%04x:%04x", i.vendor_id, i.device_id);
  return "webgpu;backend=" + ProfileKeyPart(i.backend_api) + ";vendor=" + ProfileKeyPart(i.vendor) +
         ";arch=" + ProfileKeyPart(i.architecture) + ";device=" + ProfileKeyPart(i.device) +
         ";driver=" + ProfileKeyPart(i.driver) + ";ids=" + ids +
         ";dawn=" + ProfileKeyPart(i.dawn_version);
}

// The memory of a GPU whose buffers are its own (not host memory), asked of Vulkan once per
// process and adapter: each query makes and releases a Vulkan instance, and the NVIDIA driver has
// been seen to fail after some tens of those in one process (DawnLibrary::SharedInstance).
void ReadDeviceMemory(AdapterInfo* info) {
  if (info->backend_api != "vulkan" || info->is_software || info->adapter_type == "integrated-gpu")
    return;
  static std::mutex mu;
  static std::unordered_map<std::string, DeviceMemory> known;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = info->vulkan_loader + ";" + ProfileKeyOf(*info);
  auto it = known.find(key);
  if (it == known.end()) {
    auto vk = ReadVulkanDevice(info->vulkan_loader, info->vendor_id, info->device_id);
    DeviceMemory m;
    if (vk.ok()) m = DeviceMemoryOf(vk->heaps, vk->name);
    if (!m.bytes)
      m.source = "not known: " +
                 (vk.ok() ? "Vulkan reports no device-local heap" : vk.errors().front().message);
    it = known.emplace(key, m).first;
  }
  info->device_memory_bytes = it->second.bytes;
  info->device_memory_source = it->second.source;
}

}  // namespace

bool IsSoftwareAdapter(const AdapterInfo& info, std::string* reason) {
  std::string why;
  if (info.adapter_type == "cpu") {
    why = "its adapter type is cpu";
  } else if (info.backend_api == "null") {
    why = "it is Dawn's Null backend";
  } else {
    const std::string names =
        Lower(info.vendor + " " + info.architecture + " " + info.device + " " + info.description);
    for (const char* soft : {"swiftshader", "llvmpipe", "lavapipe", "softpipe"}) {
      if (names.find(soft) != std::string::npos) {
        why = std::string("its name says ") + soft + " (a software rasterizer)";
        break;
      }
    }
  }
  if (reason) *reason = why;
  return !why.empty();
}

Grid SplitWorkgroups(uint64_t workgroups, uint32_t max_per_dim) {
  Grid g;
  if (workgroups == 0) {
    g.x = 0;
    return g;
  }
  const uint64_t m = std::max<uint32_t>(max_per_dim, 1);
  const uint64_t z = (workgroups + m * m - 1) / (m * m);
  const uint64_t r = (workgroups + z - 1) / z;  // per z-slice
  const uint64_t y = (r + m - 1) / m;
  const uint64_t x = (r + y - 1) / y;
  g.x = static_cast<uint32_t>(x);
  g.y = static_cast<uint32_t>(y);
  g.z = static_cast<uint32_t>(z);
  return g;
}

Device::Device(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Device::~Device() = default;

const AdapterInfo& Device::info() const {
  return impl_->info;
}
const DeviceStats& Device::stats() const {
  return impl_->stats;
}
uint64_t Device::pooled_bytes() const {
  return impl_->pooled_bytes;
}
uint64_t Device::pipelines_compiled() const {
  return impl_->stats.pipelines_compiled;
}
std::vector<std::pair<std::string, std::string>> Device::CompiledSources() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, id] : impl_->pipeline_cache) {
    const size_t nul = key.find('\0');
    out.emplace_back(key.substr(0, nul), key.substr(nul + 1));
  }
  return out;
}
Status Device::health() const {
  return impl_->Sticky();
}

Result<std::unique_ptr<Device>> Device::Open(const OpenOptions& options) {
  const auto open_start = std::chrono::steady_clock::now();
  SCELLIS_ASSIGN_OR_RETURN(const DawnLibrary* lib, DawnLibrary::Load());
  auto impl = std::make_unique<Impl>(lib->procs(), options);
  Impl& m = *impl;
  const DawnProcs& p = lib->procs();
  if (const char* n = std::getenv("SCELLIS_FAULT_ALLOCATION"))
    m.fail_allocation = std::strtoull(n, nullptr, 10);

  m.instance = lib->SharedInstance();
  if (m.instance) p.InstanceAddRef(m.instance);
  if (!m.instance) {
    return RuntimeError("webgpu-instance-failed", "Dawn (" + lib->path() +
                                                      ") could not create an instance with the "
                                                      "timed-wait-any feature");
  }

  // ---- adapter ----
  WGPURequestAdapterOptions ao{};
  ao.featureLevel = WGPUFeatureLevel_Core;
  ao.powerPreference = WGPUPowerPreference_HighPerformance;
  ao.backendType = WGPUBackendType_Undefined;

  // Every adapter Dawn offers for these options, when the build can say: for the count a run
  // reports, and for any choice but Dawn's first.
  struct Offered {
    const DawnProcs& p;
    std::vector<WGPUAdapter> adapters;
    ~Offered() {
      for (WGPUAdapter a : adapters) p.AdapterRelease(a);
    }
  } offered{p, {}};
  // Dawn's first adapter does not depend on the enumeration: when that fails, only a choice of
  // another one does (refused below, with the reason).
  bool enumerated = false;
  std::string cannot_enumerate;
  std::vector<AdapterInfo> offered_info;  // beside offered.adapters
  if (auto listed = lib->EnumerateAdapters(m.instance, ao); listed.ok()) {
    enumerated = true;
    for (WGPUAdapter a : listed.value()) {
      AdapterInfo ai;
      // Dawn lists its Null backend too, which computes nothing: never a choice.
      if (!ReadAdapterInfo(p, a, &ai).ok() || ai.backend_api == "null") {
        p.AdapterRelease(a);
        continue;
      }
      ai.is_software = IsSoftwareAdapter(ai);
      offered.adapters.push_back(a);
      offered_info.push_back(std::move(ai));
    }
  } else {
    cannot_enumerate = listed.status().first().message;
  }
  uint32_t index = 0;
  std::string choice = "default";
  std::string why_index;  // how the index was arrived at, for a refusal
  if (options.adapter) {
    index = *options.adapter;
    choice = "--adapter";
    why_index = "--adapter=" + std::to_string(index);
  } else if (std::optional<uint32_t> local = MpiLocalRank()) {
    choice = "MPI local rank " + std::to_string(*local);
    why_index = "the MPI local rank " + std::to_string(*local);
    // The adapters this run may use (software ones only when allowed), in Dawn's order.
    std::vector<uint32_t> usable;
    for (uint32_t i = 0; i < offered_info.size(); ++i)
      if (!offered_info[i].is_software || options.allow_software_adapter) usable.push_back(i);
    if (enumerated && !usable.empty()) {
      index = usable[*local % usable.size()];
    } else {
      // Without the count every rank of the host would open the same first adapter.
      index = *local;
    }
  }
  if (index != 0 && (!enumerated || index >= offered.adapters.size())) {
    std::string listing;
    for (size_t i = 0; i < offered_info.size(); ++i) {
      const AdapterInfo& a = offered_info[i];
      listing += "\n    " + std::to_string(i) + ": " +
                 (a.device.empty() ? a.description : a.device) + " (" + a.backend_api + ")";
    }
    Diagnostic d = UserError(
        "adapter-not-found", "",
        "there is no WebGPU adapter " + std::to_string(index) + " (asked for by " + why_index +
            "): " +
            (enumerated ? "Dawn offers " + std::to_string(offered.adapters.size()) + " adapter" +
                              (offered.adapters.size() == 1 ? "" : "s") +
                              (offered.adapters.empty() ? "" : ":" + listing)
                        : "only Dawn's first adapter (index 0) can be chosen: " + cannot_enumerate),
        "choose an index below the adapter count (0-based)");
    return d;
  }

  if (index == 0) {
    // Dawn's first adapter, requested exactly as through the standard API.
    auto* ar = new AdapterRequest;
    WGPURequestAdapterCallbackInfo acb{};
    acb.mode = WGPUCallbackMode_WaitAnyOnly;
    acb.callback = [](WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message,
                      void* u1, void*) {
      auto* r = static_cast<AdapterRequest*>(u1);
      r->status = status;
      r->adapter = adapter;
      r->message = Str(message);
    };
    acb.userdata1 = ar;
    if (std::string why = m.Wait(p.InstanceRequestAdapter(m.instance, &ao, acb)); !why.empty()) {
      return RuntimeError("no-webgpu-adapter", "requesting a WebGPU adapter: " + why);
    }
    std::unique_ptr<AdapterRequest> adapter_request(ar);
    m.adapter = ar->adapter;
    if (ar->status != WGPURequestAdapterStatus_Success || !m.adapter) {
      return RuntimeError("no-webgpu-adapter",
                          "Dawn found no WebGPU adapter (" +
                              OrUnknown(RequestAdapterStatusName(ar->status), ar->status) +
                              "): " + ar->message);
    }
  } else {
    m.adapter = offered.adapters[index];
    p.AdapterAddRef(m.adapter);
  }

  AdapterInfo& info = m.info;
  SCELLIS_TRY(ReadAdapterInfo(p, m.adapter, &info));
  info.adapter_index = index;
  info.adapter_count = static_cast<uint32_t>(offered.adapters.size());
  info.adapter_choice = choice;
  info.dawn_version = lib->version();
  info.library_path = lib->path();
  info.vulkan_loader = lib->vulkan_loader();
  if (info.backend_api == "null") {
    std::string tried;
    for (auto& t : lib->vulkan_loader_searched()) tried += "\n    " + t;
    Diagnostic d = RuntimeError(
        "no-webgpu-adapter",
        "Dawn offers only its Null backend (it computes nothing): " +
            (info.vulkan_loader.empty()
                 ? "no Vulkan loader (libvulkan.so.1) could be loaded; tried:" + tried
                 : "the Vulkan loader " + info.vulkan_loader + " found no usable driver"));
    d.help =
        "install a Vulkan loader (Debian: libvulkan1) and the GPU's Vulkan driver; for "
        "SwiftShader set VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json";
    return d;
  }
  info.is_software = IsSoftwareAdapter(info, &info.software_reason);
  ReadDeviceMemory(&info);
  if (info.is_software && !options.allow_software_adapter) {
    std::string name = info.device.empty() ? info.description : info.device;
    return UserError("software-adapter-refused", "",
                     "refusing the WebGPU adapter \"" + name + "\" (" + info.backend_api +
                         "): it is not a GPU, " + info.software_reason,
                     "run on a machine with a GPU and its Vulkan driver; software adapters are "
                     "used only when asked for explicitly (allow_software_adapter)");
  }

  {
    WGPUSupportedFeatures sf{};
    p.AdapterGetFeatures(m.adapter, &sf);
    for (size_t i = 0; i < sf.featureCount; ++i) {
      const char* name = DawnFeatureName(static_cast<uint32_t>(sf.features[i]));
      char buf[32];
      std::snprintf(buf, sizeof buf, "feature-0x%x", static_cast<unsigned>(sf.features[i]));
      info.features.push_back(name ? name : buf);
    }
    p.SupportedFeaturesFreeMembers(sf);
    std::sort(info.features.begin(), info.features.end());
  }

  struct {
    WGPULimits limits;
    uint64_t guard[8];
  } adapter_limits{};
  std::fill(std::begin(adapter_limits.guard), std::end(adapter_limits.guard),
            0x5CE1115A5CE1115Aull);
  if (p.AdapterGetLimits(m.adapter, &adapter_limits.limits) != WGPUStatus_Success) {
    return RuntimeError("device-request-failed", "wgpuAdapterGetLimits failed");
  }
  for (uint64_t g : adapter_limits.guard) {
    if (g != 0x5CE1115A5CE1115Aull) {
      return InternalError("webgpu-abi",
                           "Dawn wrote past WGPULimits: webgpu_api.h does not "
                           "match " +
                               lib->path());
    }
  }

  // ---- device: ask for everything the adapter offers; WebGPU's defaults cap a storage binding
  // at 128 MiB ----
  WGPUDeviceDescriptor dd{};
  dd.requiredLimits = &adapter_limits.limits;
  // f16 storage needs the feature enabled on the device, not only offered by the adapter.
  auto has_feature = [&info](const char* feature) {
    return std::find(info.features.begin(), info.features.end(), feature) != info.features.end();
  };
  std::vector<WGPUFeatureName> required;
  if (has_feature("shader-f16")) required.push_back(kDawnShaderF16);
  const char* const unquantized[] = {"timestamp_quantization"};
  DawnTogglesDescriptor toggles{};
  SCELLIS_ASSIGN_OR_RETURN(info.dawn_toggles, DawnTogglesFromEnvironment());
  std::vector<const char*> enabled;
  for (const std::string& t : info.dawn_toggles) enabled.push_back(t.c_str());
  if (!enabled.empty()) {
    toggles.chain.sType = kDawnTogglesDescriptor;
    toggles.enabledToggleCount = enabled.size();
    toggles.enabledToggles = enabled.data();
    dd.nextInChain = &toggles.chain;
  }
  if (options.gpu_timestamps) {
    if (!has_feature("timestamp-query")) {
      return RuntimeError("timestamp-query-unavailable",
                          "GPU timestamps were asked for, and \"" + info.device +
                              "\" does not offer the timestamp-query feature");
    }
    required.push_back(kDawnTimestampQuery);
    toggles.chain.sType = kDawnTogglesDescriptor;
    toggles.disabledToggleCount = 1;
    toggles.disabledToggles = unquantized;
    dd.nextInChain = &toggles.chain;
  }
  if (!options.kernel_cache) {
    m.kernel_cache_off = "turned off by the caller";
  } else if (KernelCacheDisabledByEnvironment()) {
    m.kernel_cache_off = "turned off by SCELLIS_KERNEL_CACHE";
  } else {
    m.kernel_cache =
        KernelCache::Open(options.kernel_cache_store, ProfileKeyOf(info), &m.kernel_cache_off);
    if (m.kernel_cache) dd.nextInChain = m.kernel_cache->Chain(dd.nextInChain);
  }
  dd.requiredFeatureCount = required.size();
  dd.requiredFeatures = required.data();
  dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  dd.deviceLostCallbackInfo.callback = OnDeviceLost;
  dd.deviceLostCallbackInfo.userdata1 = m.sink.get();
  dd.uncapturedErrorCallbackInfo.callback = OnUncapturedError;
  dd.uncapturedErrorCallbackInfo.userdata1 = m.sink.get();
  auto* dr = new DeviceRequest;
  WGPURequestDeviceCallbackInfo dcb{};
  dcb.mode = WGPUCallbackMode_WaitAnyOnly;
  dcb.callback = [](WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message,
                    void* u1, void*) {
    auto* r = static_cast<DeviceRequest*>(u1);
    r->status = status;
    r->device = device;
    r->message = Str(message);
  };
  dcb.userdata1 = dr;
  if (std::string why = m.Wait(p.AdapterRequestDevice(m.adapter, &dd, dcb)); !why.empty()) {
    return RuntimeError("device-request-failed", "requesting a WebGPU device: " + why);
  }
  std::unique_ptr<DeviceRequest> device_request(dr);
  m.device = dr->device;
  if (dr->status != WGPURequestDeviceStatus_Success || !m.device) {
    return RuntimeError("device-request-failed",
                        "Dawn refused to create a device on \"" + info.device + "\" (" +
                            OrUnknown(RequestDeviceStatusName(dr->status), dr->status) +
                            "): " + dr->message);
  }
  m.queue = p.DeviceGetQueue(m.device);
  if (options.gpu_timestamps) {
    WGPUQuerySetDescriptor qd{};
    qd.type = WGPUQueryType_Timestamp;
    qd.count = 2 * kMaxTimedDispatches;
    m.timestamp_set = p.DeviceCreateQuerySet(m.device, &qd);
    Impl::Buf resolve;
    resolve.size = resolve.alloc = uint64_t{16} * kMaxTimedDispatches;
    resolve.handle =
        m.NewBuffer(resolve.alloc, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc);
    m.timestamp_resolve = BufferId{m.next_buffer_id++};
    m.buffers.emplace(m.timestamp_resolve.value, resolve);
  }
  {
    WGPUSupportedFeatures df{};
    p.DeviceGetFeatures(m.device, &df);
    for (size_t i = 0; i < df.featureCount; ++i)
      info.shader_f16 |= df.features[i] == kDawnShaderF16;
    p.SupportedFeaturesFreeMembers(df);
  }

  WGPULimits dl{};
  if (p.DeviceGetLimits(m.device, &dl) != WGPUStatus_Success) {
    return RuntimeError("device-request-failed", "wgpuDeviceGetLimits failed");
  }
  Limits& l = info.limits;
  l.max_storage_buffer_binding_size = dl.maxStorageBufferBindingSize;
  if (options.max_binding_bytes)
    l.max_storage_buffer_binding_size =
        std::min<uint64_t>(l.max_storage_buffer_binding_size, options.max_binding_bytes);
  l.max_uniform_buffer_binding_size = dl.maxUniformBufferBindingSize;
  l.max_buffer_size = dl.maxBufferSize;
  l.max_compute_workgroup_storage_size = dl.maxComputeWorkgroupStorageSize;
  l.max_compute_invocations_per_workgroup = dl.maxComputeInvocationsPerWorkgroup;
  l.max_compute_workgroup_size_x = dl.maxComputeWorkgroupSizeX;
  l.max_compute_workgroup_size_y = dl.maxComputeWorkgroupSizeY;
  l.max_compute_workgroup_size_z = dl.maxComputeWorkgroupSizeZ;
  l.max_compute_workgroups_per_dimension = dl.maxComputeWorkgroupsPerDimension;
  l.max_storage_buffers_per_shader_stage = dl.maxStorageBuffersPerShaderStage;
  l.max_uniform_buffers_per_shader_stage = dl.maxUniformBuffersPerShaderStage;
  l.max_bind_groups = dl.maxBindGroups;
  l.max_bindings_per_bind_group = dl.maxBindingsPerBindGroup;
  l.min_storage_buffer_offset_alignment = dl.minStorageBufferOffsetAlignment;
  l.min_uniform_buffer_offset_alignment = dl.minUniformBufferOffsetAlignment;

  m.stats.open_ms = MillisecondsSince(open_start);
  return std::unique_ptr<Device>(new Device(std::move(impl)));
}

std::string AdapterLine(const AdapterInfo& info) {
  const std::string name = info.device.empty() ? info.description : info.device;
  std::string line = "adapter " + std::to_string(info.adapter_index + 1) + " of " +
                     (info.adapter_count ? std::to_string(info.adapter_count) : "?") + ": " + name +
                     " (" + info.backend_api + ")";
  if (info.adapter_choice != "default") line += ", by " + info.adapter_choice;
  for (size_t i = 0; i < info.dawn_toggles.size(); ++i)
    line += (i ? "," : "; Dawn toggles on: ") + info.dawn_toggles[i];
  return line;
}

std::optional<uint32_t> MpiLocalRank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    char* end = nullptr;
    unsigned long n = std::strtoul(v, &end, 10);
    if (*end == '\0' && n <= UINT32_MAX) return static_cast<uint32_t>(n);
  }
  return std::nullopt;
}

std::string Device::ProfileKey() const {
  return ProfileKeyOf(impl_->info);
}

KernelCacheStats Device::kernel_cache() const {
  if (impl_->kernel_cache) return impl_->kernel_cache->stats();
  KernelCacheStats off;
  off.off_reason = impl_->kernel_cache_off;
  return off;
}

// ---- pipelines ----

Result<PipelineId> Device::Pipeline(const std::string& wgsl, const std::string& entry_point,
                                    std::vector<WgslMessage>* error_messages) {
  Impl& m = *impl_;
  const DawnProcs& p = m.p;
  SCELLIS_TRY(m.Sticky());
  std::string key = entry_point;
  key += '\0';
  key += wgsl;
  if (auto it = m.pipeline_cache.find(key); it != m.pipeline_cache.end()) {
    m.stats.pipeline_cache_hits++;
    return PipelineId{it->second};
  }
  const auto compile_start = std::chrono::steady_clock::now();

  p.DevicePushErrorScope(m.device, WGPUErrorFilter_Internal);
  p.DevicePushErrorScope(m.device, WGPUErrorFilter_Validation);

  WGPUShaderSourceWGSL source{};
  source.chain.sType = WGPUSType_ShaderSourceWGSL;
  source.code = View(wgsl);
  WGPUShaderModuleDescriptor md{};
  md.nextInChain = &source.chain;
  WGPUShaderModule module = p.DeviceCreateShaderModule(m.device, &md);

  auto* st = new CompileDone;
  WGPUCompilationInfoCallbackInfo ccb{};
  ccb.mode = WGPUCallbackMode_WaitAnyOnly;
  ccb.callback = [](WGPUCompilationInfoRequestStatus status, WGPUCompilationInfo const* ci,
                    void* u1, void*) {
    auto* s = static_cast<CompileDone*>(u1);
    s->status = status;
    if (!ci) return;
    for (size_t i = 0; i < ci->messageCount; ++i) {
      const WGPUCompilationMessage& msg = ci->messages[i];
      s->messages.push_back({msg.type, msg.lineNum, msg.linePos, Str(msg.message)});
    }
  };
  ccb.userdata1 = st;
  std::string why = m.Wait(p.ShaderModuleGetCompilationInfo(module, ccb));
  if (!why.empty()) {
    p.ShaderModuleRelease(module);
    return m.Poison(RuntimeError("gpu-timeout", "compiling WGSL: " + why));
  }
  std::unique_ptr<CompileDone> compiled(st);

  std::string errors;
  for (const auto& msg : compiled->messages) {
    if (msg.type != WGPUCompilationMessageType_Error) continue;
    if (error_messages) error_messages->push_back({msg.line, msg.column, msg.text});
    errors += "\n  " + std::to_string(msg.line) + ":" + std::to_string(msg.column) +
              ": error: " + msg.text;
    if (msg.line > 0) {
      std::string line = SourceLine(wgsl, msg.line);
      errors += "\n    | " + line;
      if (msg.column > 0) errors += "\n    | " + std::string(msg.column - 1, ' ') + "^";
    }
  }

  WGPUComputePipeline pipeline = nullptr;
  if (errors.empty()) {
    WGPUComputePipelineDescriptor pd{};
    pd.layout = nullptr;  // automatic layout
    pd.compute.module = module;
    pd.compute.entryPoint = View(entry_point);
    pipeline = p.DeviceCreateComputePipeline(m.device, &pd);
  }
  p.ShaderModuleRelease(module);
  std::string validation = m.PopScope();
  std::string internal = m.PopScope();

  if (!errors.empty()) {
    if (pipeline) p.ComputePipelineRelease(pipeline);
    return UserError("wgsl-compile-error", "",
                     "WGSL compilation failed (entry point `" + entry_point + "`):" + errors);
  }
  if (!validation.empty() || !internal.empty() || !pipeline) {
    if (pipeline) p.ComputePipelineRelease(pipeline);
    std::string msg = validation.empty() ? internal : validation;
    return UserError(
        "pipeline-creation-failed", "",
        "Dawn refused the compute pipeline for entry point `" + entry_point + "`: " + msg);
  }
  m.stats.pipelines_compiled++;
  m.stats.pipeline_compile_ms += MillisecondsSince(compile_start);
  PipelineId id{m.next_pipeline_id++};
  m.pipelines[id.value].pipeline = pipeline;
  m.pipeline_cache.emplace(std::move(key), id.value);
  return id;
}

}  // namespace scellis::runtime::webgpu
