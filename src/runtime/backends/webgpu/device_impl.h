// The state behind a Device (device.h), shared by the files that implement it: device.cpp (opening
// a device, compiling pipelines) and device_commands.cpp (buffers, recording, submission,
// profiling, faults). Not part of the backend's interface.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/backends/webgpu/dawn_library.h"
#include "runtime/backends/webgpu/device.h"
#include "runtime/backends/webgpu/kernel_cache.h"
#include "runtime/backends/webgpu/webgpu_api.h"

namespace scellis::runtime::webgpu {

// Uniform too: an optimizer kernel over several parameters binds their shared step as a uniform
// (it does not count against the storage buffers a stage may bind).
inline constexpr WGPUBufferUsage kStorageUsage = WGPUBufferUsage_Storage | WGPUBufferUsage_Uniform |
                                                 WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;

inline uint64_t RoundUp(uint64_t v, uint64_t m) {
  return (v + m - 1) / m * m;
}

inline std::string Str(WGPUStringView v) {
  if (!v.data) return "";
  if (v.length == WGPU_STRLEN) return std::string(v.data);
  return std::string(v.data, v.length);
}

inline WGPUStringView View(const std::string& s) {
  return WGPUStringView{s.data(), s.size()};
}

inline std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline std::string OrUnknown(const char* name, uint32_t value) {
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

inline void OnDeviceLost(WGPUDevice const* /*device*/, WGPUDeviceLostReason reason,
                         WGPUStringView message, void* userdata1, void* /*userdata2*/) {
  auto* sink = static_cast<ErrorSink*>(userdata1);
  sink->Record(RuntimeError("device-lost", "the WebGPU device was lost (reason: " +
                                               OrUnknown(DeviceLostReasonName(reason), reason) +
                                               "): " + Str(message)));
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

inline double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
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
  // Read-backs in flight (StartRead), and the map-read staging buffers of finished ones, kept
  // by allocated size for the next.
  struct PendingRead {
    WGPUBuffer staging = nullptr;  // null for an empty read
    uint64_t staging_alloc = 0;
    uint64_t skip = 0;   // bytes of the mapped range before the first one asked for
    uint64_t bytes = 0;  // asked for
    uint64_t len = 0;    // mapped: the range widened to whole words
    WGPUFuture future{};
    MapDone* done = nullptr;  // the map callback's; owned here once the map has completed
    std::string scope_error;  // what the error scope around the map request caught
  };
  std::unordered_map<uint32_t, PendingRead> reads;
  uint32_t next_read_id = 1;
  std::unordered_map<uint64_t, std::vector<WGPUBuffer>> read_staging_pool;

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
  // Dispatch's scratch, kept between calls so that recording a step allocates nothing once its
  // bind groups exist.
  std::vector<WGPUBindGroupEntry> bind_entries;
  std::string bind_key;

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
  bool sent_unwaited = false;  // a Send's work may still be running: Submit waits for it
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
    for (auto& [id, r] : reads)
      if (r.staging) DestroyBuffer(r.staging);
    for (auto& [size, list] : read_staging_pool) {
      for (WGPUBuffer b : list) DestroyBuffer(b);
    }
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

  // Whether what was recorded since the last submission may be submitted: not on a poisoned
  // device, nor after a bad recording (whose error is returned once); either way the recording
  // is dropped.
  Status RecordingToSubmit() {
    if (Status s = Sticky(); !s.ok()) {
      DiscardRecording();
      return s;
    }
    if (recording_error) {
      Diagnostic d = *recording_error;
      recording_error.reset();
      DiscardRecording();
      return d;
    }
    return Status::Ok();
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
    stats.waits++;
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

}  // namespace scellis::runtime::webgpu
