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
// what they cost. Only these two are accepted: skip_validation drops the host's validation of
// each command (the engine's commands are validated in every test run, with it on);
// disable_robustness drops the bounds clamps Dawn adds to every storage access (every engine
// kernel guards its own indices; a user kernel's WGSL may not, so neither is on by default).
Result<std::vector<std::string>> DawnTogglesFromEnvironment() {
  std::vector<std::string> toggles;
  const char* v = std::getenv("SCELLIS_DAWN_TOGGLES");
  if (!v) return toggles;
  std::stringstream names(v);
  for (std::string name; std::getline(names, name, ',');) {
    if (name.empty()) continue;
    if (name != "skip_validation" && name != "disable_robustness") {
      return UserError("dawn-toggle-unknown", "",
                       "SCELLIS_DAWN_TOGGLES names \"" + name + "\"",
                       "the accepted toggles are skip_validation and disable_robustness");
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

// Uniform too: an optimizer kernel over several parameters binds their shared step as a uniform
// (it does not count against the storage buffers a stage may bind).
constexpr WGPUBufferUsage kStorageUsage = WGPUBufferUsage_Storage | WGPUBufferUsage_Uniform |
                                          WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;

uint64_t RoundUp(uint64_t v, uint64_t m) {
  return (v + m - 1) / m * m;
}

std::string Str(WGPUStringView v) {
  if (!v.data) return "";
  if (v.length == WGPU_STRLEN) return std::string(v.data);
  return std::string(v.data, v.length);
}

WGPUStringView View(const std::string& s) {
  return WGPUStringView{s.data(), s.size()};
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string OrUnknown(const char* name, uint32_t value) {
  if (name) return name;
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%x", value);
  return buf;
}

// Errors Dawn reports from its callbacks, possibly on its own threads. The first one poisons the
// device; later ones add nothing (they are usually consequences of the first).
class ErrorSink {
 public:
  void Record(Diagnostic d) {
    while (!d.message.empty() && std::isspace(static_cast<unsigned char>(d.message.back()))) {
      d.message.pop_back();  // Dawn ends its messages with a newline
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!first_ && !shutting_down_) first_ = std::move(d);
  }
  std::optional<Diagnostic> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_;
  }
  // From here on the device is being torn down by us: its loss is not news.
  void BeginShutdown() {
    std::lock_guard<std::mutex> lock(mu_);
    shutting_down_ = true;
  }

 private:
  mutable std::mutex mu_;
  std::optional<Diagnostic> first_;
  bool shutting_down_ = false;
};

void OnDeviceLost(WGPUDevice const* /*device*/, WGPUDeviceLostReason reason, WGPUStringView message,
                  void* userdata1, void* /*userdata2*/) {
  auto* sink = static_cast<ErrorSink*>(userdata1);
  sink->Record(RuntimeError("device-lost", "the WebGPU device was lost (reason: " +
                                               OrUnknown(DeviceLostReasonName(reason), reason) +
                                               "): " + Str(message)));
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

// Results of the asynchronous calls. They live on the heap: when a wait times out, the callback
// may still fire later, so the state is deliberately leaked rather than left dangling.
struct AdapterRequest {
  WGPURequestAdapterStatus status = WGPURequestAdapterStatus_Force32;
  WGPUAdapter adapter = nullptr;
  std::string message;
};
struct DeviceRequest {
  WGPURequestDeviceStatus status = WGPURequestDeviceStatus_Force32;
  WGPUDevice device = nullptr;
  std::string message;
};
struct WorkDone {
  WGPUQueueWorkDoneStatus status = WGPUQueueWorkDoneStatus_Force32;
  std::string message;
};
struct MapDone {
  WGPUMapAsyncStatus status = WGPUMapAsyncStatus_Force32;
  std::string message;
};
struct ScopeDone {
  WGPUPopErrorScopeStatus status = WGPUPopErrorScopeStatus_Force32;
  WGPUErrorType type = WGPUErrorType_NoError;
  std::string message;
};
struct CompileMessage {
  WGPUCompilationMessageType type;
  uint64_t line, column;
  std::string text;
};
struct CompileDone {
  WGPUCompilationInfoRequestStatus status = WGPUCompilationInfoRequestStatus_Force32;
  std::vector<CompileMessage> messages;
};

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

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
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

struct Device::Impl {
  const DawnProcs& p;
  OpenOptions options;
  std::unique_ptr<ErrorSink> sink = std::make_unique<ErrorSink>();
  // Dawn calls into it until the device is released (in ~Impl, before members are destroyed).
  std::unique_ptr<KernelCache> kernel_cache;
  std::string kernel_cache_off = "not opened";

  WGPUInstance instance = nullptr;
  WGPUAdapter adapter = nullptr;
  WGPUDevice device = nullptr;
  WGPUQueue queue = nullptr;

  AdapterInfo info;
  DeviceStats stats;

  struct Buf {
    WGPUBuffer handle = nullptr;
    uint64_t size = 0;   // asked for
    uint64_t alloc = 0;  // allocated: size rounded up to 4
  };
  std::unordered_map<uint32_t, Buf> buffers;
  uint32_t next_buffer_id = 1;
  std::unordered_map<uint64_t, std::vector<WGPUBuffer>> pool;  // by allocated size
  uint64_t pooled_bytes = 0;
  WGPUBuffer staging = nullptr;  // map-read buffer for Read, grown on demand
  uint64_t staging_size = 0;

  struct Pipe {
    WGPUComputePipeline pipeline = nullptr;
    WGPUBindGroupLayout layout = nullptr;  // group 0 of the automatic layout, fetched lazily
  };
  std::unordered_map<uint32_t, Pipe> pipelines;
  std::unordered_map<std::string, uint32_t> pipeline_cache;  // entry point + '\0' + source
  uint32_t next_pipeline_id = 1;

  // Bind groups by (pipeline, buffer handles, ranges). Buffer handles stay valid while pooled,
  // so entries only go stale when a buffer is really destroyed (TrimPool).
  std::unordered_map<std::string, WGPUBindGroup> bind_groups;

  WGPUCommandEncoder encoder = nullptr;
  WGPUComputePassEncoder pass = nullptr;
  uint64_t recorded_dispatches = 0;
  std::optional<Diagnostic> recording_error;

  // GPU timestamps (OpenOptions::gpu_timestamps): dispatch i writes queries 2i and 2i + 1; every
  // submission resolves the queries written so far into `timestamp_resolve`, which TakeGpuTimes
  // reads like any buffer.
  WGPUQuerySet timestamp_set = nullptr;
  BufferId timestamp_resolve{0};
  uint32_t timed_dispatches = 0;     // since the last TakeGpuTimes
  uint32_t resolved_dispatches = 0;  // of those, resolved by a submission

  bool fail_next_submit = false;
  bool fail_next_map = false;
  bool fail_next_allocation = false;
  uint64_t allocations = 0;      // CreateBuffer calls so far
  uint64_t fail_allocation = 0;  // $SCELLIS_FAULT_ALLOCATION: the call that fails (0: none)

  Impl(const DawnProcs& procs, OpenOptions opts) : p(procs), options(opts) {}

  ~Impl() {
    sink->BeginShutdown();
    if (pass) p.ComputePassEncoderRelease(pass);
    if (encoder) p.CommandEncoderRelease(encoder);
    ClearBindGroups();
    for (auto& [id, pipe] : pipelines) {
      if (pipe.layout) p.BindGroupLayoutRelease(pipe.layout);
      p.ComputePipelineRelease(pipe.pipeline);
    }
    for (auto& [id, b] : buffers) DestroyBuffer(b.handle);
    for (auto& [size, list] : pool) {
      for (WGPUBuffer b : list) DestroyBuffer(b);
    }
    if (staging) DestroyBuffer(staging);
    if (timestamp_set) p.QuerySetRelease(timestamp_set);
    if (queue) p.QueueRelease(queue);
    if (device) p.DeviceRelease(device);
    if (adapter) p.AdapterRelease(adapter);
    if (instance) {
      p.InstanceProcessEvents(instance);
      p.InstanceRelease(instance);
    }
  }

  void DestroyBuffer(WGPUBuffer b) {
    p.BufferDestroy(b);
    p.BufferRelease(b);
  }

  void ClearBindGroups() {
    for (auto& [key, bg] : bind_groups) p.BindGroupRelease(bg);
    bind_groups.clear();
  }

  uint64_t TimeoutNs() const { return uint64_t{options.timeout_ms} * 1000000ull; }

  // Waits for one future. Returns "" when it completed, else why not.
  std::string Wait(WGPUFuture future) {
    WGPUFutureWaitInfo w{future, 0};
    WGPUWaitStatus s = p.InstanceWaitAny(instance, 1, &w, TimeoutNs());
    if (s == WGPUWaitStatus_Success && w.completed) return "";
    if (s == WGPUWaitStatus_TimedOut) {
      return "no answer from the GPU within " + std::to_string(options.timeout_ms) + " ms";
    }
    return std::string("wgpuInstanceWaitAny failed (") + OrUnknown(WaitStatusName(s), s) + ")";
  }

  Status Poison(Diagnostic d) {
    sink->Record(std::move(d));
    return Sticky();
  }

  Status Sticky() const {
    if (auto d = sink->Get()) return *d;
    return Status::Ok();
  }

  Buf* FindBuffer(BufferId id) {
    auto it = buffers.find(id.value);
    return it == buffers.end() ? nullptr : &it->second;
  }

  WGPUBuffer NewBuffer(uint64_t size, WGPUBufferUsage usage) {
    WGPUBufferDescriptor d{};
    d.usage = usage;
    d.size = size;
    return p.DeviceCreateBuffer(device, &d);
  }

  void EnsureEncoder() {
    if (!encoder) encoder = p.DeviceCreateCommandEncoder(device, nullptr);
  }
  void EnsurePass() {
    EnsureEncoder();
    if (!pass) pass = p.CommandEncoderBeginComputePass(encoder, nullptr);
  }
  void EndPass() {
    if (!pass) return;
    p.ComputePassEncoderEnd(pass);
    p.ComputePassEncoderRelease(pass);
    pass = nullptr;
  }

  void DiscardRecording() {
    if (pass) p.ComputePassEncoderRelease(pass);
    if (encoder) p.CommandEncoderRelease(encoder);
    pass = nullptr;
    encoder = nullptr;
    recorded_dispatches = 0;
  }

  // Submits what has been recorded, without waiting. False when there was nothing.
  bool Flush() {
    if (!encoder) return false;
    EndPass();
    if (timed_dispatches > resolved_dispatches) {
      // Resolving always starts at query 0: a resolve's destination offset must be a multiple of
      // 256 bytes, and queries written by earlier submissions resolve to the same values again.
      p.CommandEncoderResolveQuerySet(encoder, timestamp_set, 0, 2 * timed_dispatches,
                                      FindBuffer(timestamp_resolve)->handle, 0);
      resolved_dispatches = timed_dispatches;
    }
    if (fail_next_submit) {
      // A copy from a destroyed buffer: valid to record, rejected by Dawn at submit.
      fail_next_submit = false;
      WGPUBuffer a = NewBuffer(4, WGPUBufferUsage_CopySrc);
      WGPUBuffer b = NewBuffer(4, WGPUBufferUsage_CopyDst);
      p.CommandEncoderCopyBufferToBuffer(encoder, a, 0, b, 0, 4);
      DestroyBuffer(a);
      DestroyBuffer(b);
    }
    WGPUCommandBuffer cb = p.CommandEncoderFinish(encoder, nullptr);
    p.CommandEncoderRelease(encoder);
    encoder = nullptr;
    p.QueueSubmit(queue, 1, &cb);
    p.CommandBufferRelease(cb);
    stats.submits++;
    stats.dispatches += recorded_dispatches;
    recorded_dispatches = 0;
    return true;
  }

  Status WaitIdle() {
    auto* st = new WorkDone;
    WGPUQueueWorkDoneCallbackInfo cb{};
    cb.mode = WGPUCallbackMode_WaitAnyOnly;
    cb.callback = [](WGPUQueueWorkDoneStatus status, WGPUStringView message, void* u1, void*) {
      auto* s = static_cast<WorkDone*>(u1);
      s->status = status;
      s->message = Str(message);
    };
    cb.userdata1 = st;
    std::string why = Wait(p.QueueOnSubmittedWorkDone(queue, cb));
    if (!why.empty()) {  // st is left to the callback that may still come
      return Poison(RuntimeError("gpu-timeout", "waiting for submitted work: " + why));
    }
    std::unique_ptr<WorkDone> done(st);
    p.InstanceProcessEvents(instance);  // deliver errors Dawn queued while the work ran
    SCELLIS_TRY(Sticky());
    if (done->status != WGPUQueueWorkDoneStatus_Success) {
      return Poison(RuntimeError(
          "submit-failed", "submitted work did not complete (" +
                               OrUnknown(QueueWorkDoneStatusName(done->status), done->status) +
                               "): " + done->message));
    }
    return Status::Ok();
  }

  // Pops one error scope and waits for its verdict; "" when it caught nothing.
  std::string PopScope() {
    auto* st = new ScopeDone;
    WGPUPopErrorScopeCallbackInfo cb{};
    cb.mode = WGPUCallbackMode_WaitAnyOnly;
    cb.callback = [](WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message,
                     void* u1, void*) {
      auto* s = static_cast<ScopeDone*>(u1);
      s->status = status;
      s->type = type;
      s->message = Str(message);
    };
    cb.userdata1 = st;
    std::string why = Wait(p.DevicePopErrorScope(device, cb));
    if (!why.empty()) return "popping an error scope: " + why;
    std::unique_ptr<ScopeDone> done(st);
    if (done->status != WGPUPopErrorScopeStatus_Success) {
      return "popping an error scope failed: " + done->message;
    }
    if (done->type == WGPUErrorType_NoError) return "";
    return done->message.empty() ? OrUnknown(ErrorTypeName(done->type), done->type) : done->message;
  }
};

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

// ---- buffers ----

BufferId Device::CreateBuffer(uint64_t bytes) {
  Impl& m = *impl_;
  if (++m.allocations == m.fail_allocation) m.fail_next_allocation = true;
  if (m.fail_next_allocation) {
    m.fail_next_allocation = false;
    m.sink->Record(RuntimeError(
        "gpu-out-of-memory",
        "a buffer of " + std::to_string(bytes) + " bytes could not be allocated (injected fault)"));
  }
  Impl::Buf b;
  b.size = bytes;
  b.alloc = std::max<uint64_t>(4, RoundUp(bytes, 4));
  auto it = m.pool.find(b.alloc);
  if (it != m.pool.end() && !it->second.empty()) {
    b.handle = it->second.back();
    it->second.pop_back();
    m.pooled_bytes -= b.alloc;
    m.stats.buffers_reused++;
  } else {
    b.handle = m.NewBuffer(b.alloc, kStorageUsage);
    m.stats.buffers_allocated++;
  }
  BufferId id{m.next_buffer_id++};
  m.buffers.emplace(id.value, b);
  return id;
}

void Device::ReleaseBuffer(BufferId id) {
  Impl& m = *impl_;
  auto it = m.buffers.find(id.value);
  if (it == m.buffers.end()) return;
  m.pool[it->second.alloc].push_back(it->second.handle);
  m.pooled_bytes += it->second.alloc;
  m.buffers.erase(it);
}

uint64_t Device::BufferSize(BufferId id) const {
  auto* b = impl_->FindBuffer(id);
  return b ? b->size : 0;
}

void Device::TrimPool() {
  Impl& m = *impl_;
  if (m.pool.empty()) return;
  // Bind groups may name pooled buffers; drop them all rather than track which.
  m.ClearBindGroups();
  for (auto& [size, list] : m.pool) {
    for (WGPUBuffer b : list) m.DestroyBuffer(b);
  }
  m.pool.clear();
  m.pooled_bytes = 0;
}

Status Device::Write(BufferId id, uint64_t offset, const void* src, uint64_t bytes) {
  Impl& m = *impl_;
  Impl::Buf* b = m.FindBuffer(id);
  if (!b)
    return InternalError("webgpu-device", "Write to unknown buffer id " + std::to_string(id.value));
  if (offset > b->size || bytes > b->size - offset) {
    return UserError("buffer-out-of-range", "",
                     "write of " + std::to_string(bytes) + " bytes at offset " +
                         std::to_string(offset) + " overruns a buffer of " +
                         std::to_string(b->size) + " bytes");
  }
  const bool ends_at_end = offset + bytes == b->size;
  if (offset % 4 != 0 || (bytes % 4 != 0 && !ends_at_end)) {
    return UserError("unaligned-write", "",
                     "write of " + std::to_string(bytes) + " bytes at offset " +
                         std::to_string(offset) + ": WebGPU writes whole 4-byte words",
                     "write at a multiple of 4 bytes, and a multiple of 4 bytes unless the "
                     "write ends at the end of the buffer");
  }
  SCELLIS_TRY(m.Sticky());
  if (bytes == 0) return Status::Ok();
  m.Flush();  // work recorded before this write must see the old contents
  if (bytes % 4 != 0) {
    std::vector<uint8_t> padded(RoundUp(bytes, 4), 0);
    std::memcpy(padded.data(), src, bytes);
    m.p.QueueWriteBuffer(m.queue, b->handle, offset, padded.data(), padded.size());
  } else {
    m.p.QueueWriteBuffer(m.queue, b->handle, offset, src, bytes);
  }
  m.stats.bytes_uploaded += bytes;
  return m.Sticky();
}

Status Device::Read(BufferId id, uint64_t offset, uint64_t bytes, void* dst) {
  Impl& m = *impl_;
  const DawnProcs& p = m.p;
  Impl::Buf* b = m.FindBuffer(id);
  if (!b)
    return InternalError("webgpu-device",
                         "Read from unknown buffer id " + std::to_string(id.value));
  if (offset > b->size || bytes > b->size - offset) {
    return UserError("buffer-out-of-range", "",
                     "read of " + std::to_string(bytes) + " bytes at offset " +
                         std::to_string(offset) + " overruns a buffer of " +
                         std::to_string(b->size) + " bytes");
  }
  SCELLIS_TRY(m.Sticky());
  if (m.recording_error) return Submit();  // reports the bad recording
  if (bytes == 0) return Status::Ok();

  // Copies and maps move whole words: widen the range to 4-byte bounds (inside the allocation).
  const uint64_t begin = offset / 4 * 4;
  const uint64_t len = RoundUp(offset + bytes, 4) - begin;
  if (m.staging_size < len) {
    if (m.staging) m.DestroyBuffer(m.staging);
    m.staging_size = RoundUp(len, 256);
    m.staging = m.NewBuffer(m.staging_size, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
  }
  m.EnsureEncoder();
  m.EndPass();
  p.CommandEncoderCopyBufferToBuffer(m.encoder, b->handle, begin, m.staging, 0, len);
  m.Flush();

  size_t map_offset = 0;
  if (m.fail_next_map) {
    m.fail_next_map = false;
    map_offset = 4;  // mapAsync wants a multiple of 8: Dawn rejects the map
  }
  // The scope keeps a refused map from also surfacing as an uncaptured error: the map's own
  // status says what happened.
  p.DevicePushErrorScope(m.device, WGPUErrorFilter_Validation);
  auto* st = new MapDone;
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUMapAsyncStatus status, WGPUStringView message, void* u1, void*) {
    auto* s = static_cast<MapDone*>(u1);
    s->status = status;
    s->message = Str(message);
  };
  cb.userdata1 = st;
  WGPUFuture map_future = p.BufferMapAsync(m.staging, WGPUMapMode_Read, map_offset, len, cb);
  m.stats.maps++;
  std::string scope_error = m.PopScope();
  std::string why = m.Wait(map_future);
  if (!why.empty()) {
    return m.Poison(RuntimeError("gpu-timeout", "waiting for a read-back: " + why));
  }
  std::unique_ptr<MapDone> done(st);
  if (done->status != WGPUMapAsyncStatus_Success) {
    std::string msg = done->message;
    if (scope_error.find(msg) != std::string::npos) {
      msg = scope_error;  // the same complaint with Dawn's context lines
    } else if (!scope_error.empty()) {
      msg += (msg.empty() ? "" : "; ") + scope_error;
    }
    return m.Poison(RuntimeError(
        "map-failed", "mapping the read-back buffer failed (" +
                          OrUnknown(MapAsyncStatusName(done->status), done->status) + "): " + msg));
  }
  p.InstanceProcessEvents(m.instance);
  if (Status s = m.Sticky(); !s.ok()) {  // the copy (or earlier work) failed: the data is junk
    p.BufferUnmap(m.staging);
    return s;
  }
  const void* mapped = p.BufferGetConstMappedRange(m.staging, 0, len);
  if (!mapped) {
    p.BufferUnmap(m.staging);
    return m.Poison(RuntimeError("map-failed", "the mapped read-back range is not accessible"));
  }
  std::memcpy(dst, static_cast<const uint8_t*>(mapped) + (offset - begin), bytes);
  p.BufferUnmap(m.staging);
  m.stats.bytes_read += bytes;
  return Status::Ok();
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

// ---- recording ----

void Device::Dispatch(PipelineId pipeline, const std::vector<Binding>& bindings, uint32_t x,
                      uint32_t y, uint32_t z) {
  Impl& m = *impl_;
  const DawnProcs& p = m.p;
  if (m.recording_error) return;
  auto pit = m.pipelines.find(pipeline.value);
  if (pit == m.pipelines.end()) {
    m.recording_error = InternalError(
        "webgpu-device", "Dispatch with unknown pipeline id " + std::to_string(pipeline.value));
    return;
  }
  const uint32_t max = m.info.limits.max_compute_workgroups_per_dimension;
  if (x > max || y > max || z > max) {
    m.recording_error = UserError(
        "dispatch-too-large", "",
        "dispatch of " + std::to_string(x) + " x " + std::to_string(y) + " x " + std::to_string(z) +
            " workgroups exceeds the device's " + std::to_string(max) + " per dimension",
        "spread the workgroups over y and z (see SplitWorkgroups)");
    return;
  }
  Impl::Pipe& pipe = pit->second;

  WGPUBindGroup group = nullptr;
  if (!bindings.empty()) {
    std::vector<WGPUBindGroupEntry> entries(bindings.size());
    std::string key(reinterpret_cast<const char*>(&pipeline.value), sizeof pipeline.value);
    for (size_t i = 0; i < bindings.size(); ++i) {
      const Binding& bd = bindings[i];
      Impl::Buf* b = m.FindBuffer(bd.buffer);
      if (!b) {
        m.recording_error = InternalError("webgpu-device", "Dispatch binds unknown buffer id " +
                                                               std::to_string(bd.buffer.value) +
                                                               " at binding " + std::to_string(i));
        return;
      }
      WGPUBindGroupEntry& e = entries[i];
      e.binding = static_cast<uint32_t>(i);
      e.buffer = b->handle;
      e.offset = bd.offset;
      e.size = bd.size == 0 ? WGPU_WHOLE_SIZE : bd.size;
      key.append(reinterpret_cast<const char*>(&e.buffer), sizeof e.buffer);
      key.append(reinterpret_cast<const char*>(&e.offset), sizeof e.offset);
      key.append(reinterpret_cast<const char*>(&e.size), sizeof e.size);
    }
    auto it = m.bind_groups.find(key);
    if (it != m.bind_groups.end()) {
      group = it->second;
    } else {
      if (!pipe.layout) pipe.layout = p.ComputePipelineGetBindGroupLayout(pipe.pipeline, 0);
      WGPUBindGroupDescriptor bgd{};
      bgd.layout = pipe.layout;
      bgd.entryCount = entries.size();
      bgd.entries = entries.data();
      group = p.DeviceCreateBindGroup(m.device, &bgd);
      if (m.bind_groups.size() >= 4096) m.ClearBindGroups();
      m.bind_groups.emplace(std::move(key), group);
    }
  }
  const bool timed = m.timestamp_set && m.timed_dispatches < kMaxTimedDispatches;
  if (timed) {
    // A pass of its own, whose beginning and end timestamps bracket this one dispatch.
    m.EnsureEncoder();
    m.EndPass();
    WGPUPassTimestampWrites writes{};
    writes.querySet = m.timestamp_set;
    writes.beginningOfPassWriteIndex = 2 * m.timed_dispatches;
    writes.endOfPassWriteIndex = 2 * m.timed_dispatches + 1;
    WGPUComputePassDescriptor pd{};
    pd.timestampWrites = &writes;
    m.pass = p.CommandEncoderBeginComputePass(m.encoder, &pd);
    m.timed_dispatches++;
  }
  m.EnsurePass();
  p.ComputePassEncoderSetPipeline(m.pass, pipe.pipeline);
  if (group) p.ComputePassEncoderSetBindGroup(m.pass, 0, group, 0, nullptr);
  p.ComputePassEncoderDispatchWorkgroups(m.pass, x, y, z);
  m.recorded_dispatches++;
  // A timed pass holds its one dispatch: an untimed one past the cap must not land inside it.
  if (timed) m.EndPass();
}

void Device::Copy(BufferId src, uint64_t src_offset, BufferId dst, uint64_t dst_offset,
                  uint64_t bytes) {
  Impl& m = *impl_;
  if (m.recording_error) return;
  Impl::Buf* s = m.FindBuffer(src);
  Impl::Buf* d = m.FindBuffer(dst);
  if (!s || !d) {
    m.recording_error = InternalError("webgpu-device", "Copy between unknown buffer ids " +
                                                           std::to_string(src.value) + " -> " +
                                                           std::to_string(dst.value));
    return;
  }
  m.EnsureEncoder();
  m.EndPass();
  m.p.CommandEncoderCopyBufferToBuffer(m.encoder, s->handle, src_offset, d->handle, dst_offset,
                                       bytes);
}

void Device::Clear(BufferId id, uint64_t offset, uint64_t bytes) {
  Impl& m = *impl_;
  if (m.recording_error) return;
  Impl::Buf* b = m.FindBuffer(id);
  if (!b) {
    m.recording_error =
        InternalError("webgpu-device", "Clear of unknown buffer id " + std::to_string(id.value));
    return;
  }
  m.EnsureEncoder();
  m.EndPass();
  m.p.CommandEncoderClearBuffer(m.encoder, b->handle, offset, bytes == 0 ? WGPU_WHOLE_SIZE : bytes);
}

Status Device::Submit() {
  Impl& m = *impl_;
  if (Status s = m.Sticky(); !s.ok()) {
    m.DiscardRecording();
    return s;
  }
  if (m.recording_error) {
    Diagnostic d = *m.recording_error;
    m.recording_error.reset();
    m.DiscardRecording();
    return d;
  }
  if (!m.Flush()) {
    m.p.InstanceProcessEvents(m.instance);
    return m.Sticky();
  }
  return m.WaitIdle();
}

Status Device::Send() {
  Impl& m = *impl_;
  if (Status s = m.Sticky(); !s.ok()) {
    m.DiscardRecording();
    return s;
  }
  if (m.recording_error) {
    Diagnostic d = *m.recording_error;
    m.recording_error.reset();
    m.DiscardRecording();
    return d;
  }
  m.Flush();
  return m.Sticky();
}

// ---- profiling ----

bool Device::gpu_timestamps() const {
  return impl_->timestamp_set != nullptr;
}

Result<std::vector<GpuInterval>> Device::TakeGpuTimes() {
  Impl& m = *impl_;
  std::vector<GpuInterval> out;
  if (!m.timestamp_set) return out;
  SCELLIS_TRY(Submit());
  if (m.timed_dispatches == 0) return out;
  std::vector<uint64_t> ticks(2 * size_t{m.timed_dispatches});
  SCELLIS_TRY(Read(m.timestamp_resolve, 0, ticks.size() * sizeof(uint64_t), ticks.data()));
  for (size_t i = 0; i < ticks.size(); i += 2) out.push_back({ticks[i], ticks[i + 1]});
  m.timed_dispatches = m.resolved_dispatches = 0;
  return out;
}

// ---- faults ----

void Device::InjectFault(Fault fault) {
  Impl& m = *impl_;
  switch (fault) {
    case Fault::kFailNextSubmit:
      m.fail_next_submit = true;
      break;
    case Fault::kFailNextMap:
      m.fail_next_map = true;
      break;
    case Fault::kLoseDevice:
      m.p.DeviceDestroy(m.device);
      m.p.InstanceProcessEvents(m.instance);
      break;
    case Fault::kFailNextAllocation:
      m.fail_next_allocation = true;
      break;
  }
}

}  // namespace scellis::runtime::webgpu
