// The WebGPU device layer: one Dawn device, its buffers and compute pipelines, and the recording
// of dispatches into command buffers. The engine's executor drives it; nothing above this layer
// touches the WebGPU C API.
//
// Model
//   * Buffers are untyped byte ranges, all with usage storage | copy-src | copy-dst, sizes
//     rounded up to 4 bytes. Released buffers go back to a pool keyed by size, so a plan that
//     runs again reuses its allocations. A buffer's contents are unspecified when it comes from
//     CreateBuffer (a reused buffer keeps old data): Write, Clear or dispatch before reading.
//   * Kernels are WGSL compute shaders. Every binding is `@group(0) @binding(i)` with i in
//     0..n-1, in the order of the `bindings` passed to Dispatch, and every binding is a storage
//     buffer: parameter blocks are declared `var<storage, read>` too, never `var<uniform>`, so
//     one kind of buffer serves everything and the uniform-size limits never apply. Pipelines use
//     the automatic layout, so a kernel must use every binding it declares (an unused binding is
//     not in the layout and binding it is a validation error).
//   * Dispatch, Copy and Clear only record. Submit puts everything recorded since the last
//     submit into one command encoder, dispatches back to back in one compute pass (WebGPU makes
//     each dispatch's writes visible to the next dispatch in the same pass), one queue
//     submission, then waits for the GPU to finish. Write and Read keep program order: work
//     recorded before them is submitted first.
//   * Errors. A WGSL error is a user diagnostic from Pipeline(). Everything Dawn reports after
//     work began (device lost, uncaptured validation / out-of-memory / internal errors, a failed
//     map, a timeout) poisons the device: the call that notices returns a RuntimeError and every
//     later Submit, Read, Write and Pipeline returns the same error. There is no recovery short of
//     opening a new Device; the session above decides what to tell the user.
//   * Not thread-safe: one thread drives a Device (Dawn's callbacks are handled internally).
//
// Codes of the runtime errors: device-lost, gpu-validation-error, gpu-out-of-memory,
// gpu-internal-error, map-failed, submit-failed, gpu-timeout.
//
// Example
//
//   auto dev = Device::Open({.allow_software_adapter = false});
//   if (!dev.ok()) return dev.status();            // e.g. software-adapter-refused, dawn-not-found
//   Device& d = **dev;
//   BufferId x = d.CreateBuffer(n * sizeof(float));
//   SCELLIS_TRY(d.Write(x, 0, host.data(), n * sizeof(float)));
//   SCELLIS_ASSIGN_OR_RETURN(PipelineId p, d.Pipeline(R"(
//       @group(0) @binding(0) var<storage, read_write> x : array<f32>;
//       @compute @workgroup_size(64)
//       fn main(@builtin(global_invocation_id) id : vec3<u32>) {
//         if (id.x < arrayLength(&x)) { x[id.x] = 2.0 * x[id.x]; }
//       })", "main"));
//   d.Dispatch(p, {{x}}, (n + 63) / 64);
//   SCELLIS_TRY(d.Submit());
//   SCELLIS_TRY(d.Read(x, 0, n * sizeof(float), host.data()));
//   d.ReleaseBuffer(x);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "runtime/backends/webgpu/kernel_cache.h"
#include "runtime/user_wgsl.h"

namespace scellis::runtime::webgpu {

// Opaque handles; 0 is "none". Ids are never reused within one Device.
struct BufferId {
  uint32_t value = 0;
  bool valid() const { return value != 0; }
  friend bool operator==(BufferId, BufferId) = default;
};
struct PipelineId {
  uint32_t value = 0;
  bool valid() const { return value != 0; }
  friend bool operator==(PipelineId, PipelineId) = default;
};
// A read-back started by StartRead and not yet finished.
struct ReadTicket {
  uint32_t value = 0;
  bool valid() const { return value != 0; }
};

// One storage binding: bytes [offset, offset + size) of `buffer`; size 0 means "to the end of the
// allocation" (the size rounded up to 4). `offset` must be a multiple of
// limits.min_storage_buffer_offset_alignment (256 on most devices) and `size` a multiple of 4.
struct Binding {
  BufferId buffer;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// The limits the device was created with (the adapter's own, not WebGPU's small defaults).
struct Limits {
  uint64_t max_storage_buffer_binding_size = 0;
  uint64_t max_uniform_buffer_binding_size = 0;
  uint64_t max_buffer_size = 0;
  uint32_t max_compute_workgroup_storage_size = 0;
  uint32_t max_compute_invocations_per_workgroup = 0;
  uint32_t max_compute_workgroup_size_x = 0;
  uint32_t max_compute_workgroup_size_y = 0;
  uint32_t max_compute_workgroup_size_z = 0;
  uint32_t max_compute_workgroups_per_dimension = 0;
  uint32_t max_storage_buffers_per_shader_stage = 0;
  uint32_t max_uniform_buffers_per_shader_stage = 0;
  uint32_t max_bind_groups = 0;
  uint32_t max_bindings_per_bind_group = 0;
  uint32_t min_storage_buffer_offset_alignment = 0;
  uint32_t min_uniform_buffer_offset_alignment = 0;
};

struct AdapterInfo {
  std::string vendor;  // as Dawn reports them; may be empty
  std::string architecture;
  std::string device;
  std::string description;
  std::string backend_api;   // "vulkan", "metal", "d3d12", ...
  std::string adapter_type;  // "discrete-gpu", "integrated-gpu", "cpu", "unknown"
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  bool is_software = false;     // see IsSoftwareAdapter
  std::string software_reason;  // why is_software is true, "" otherwise
  std::string driver;           // the driver description (Dawn's `description`)
  std::string dawn_version;     // e.g. "bun-webgpu-linux-x64@0.1.7"; see DawnLibrary::version()
  std::string library_path;     // the libwebgpu_wrapper.so that was loaded
  std::string vulkan_loader;    // the libvulkan.so.1 Dawn runs on
  Limits limits;
  // The GPU's own memory (vulkan_memory.h), for a plan's budget and its memory-over-device check;
  // 0 where it is not known (see device_memory_source) or where the buffers live in host memory
  // (a software or integrated adapter).
  int64_t device_memory_bytes = 0;
  std::string device_memory_source;
  // Adapter features: WebGPU names ("shader-f16", "timestamp-query", ...) for the standard ones
  // whose number this Dawn build is known to use, "feature-0x5001a" style for the others (Dawn's
  // own extensions among them). Sorted.
  std::vector<std::string> features;
  // The device itself has shader-f16 enabled (an adapter may list it and still not grant it).
  bool shader_f16 = false;
  // Which of the adapters Dawn offers this is (0-based, in Dawn's order), of how many (0 when
  // this Dawn build cannot enumerate them), and what chose it: "default", "--adapter",
  // "MPI local rank N".
  uint32_t adapter_index = 0;
  uint32_t adapter_count = 0;
  std::string adapter_choice = "default";
  // Dawn toggles enabled from SCELLIS_DAWN_TOGGLES (only those DawnTogglesFromEnvironment
  // accepts), for measuring what Dawn's own checks cost; empty by default.
  std::vector<std::string> dawn_toggles;
};

// "adapter 2 of 2: NVIDIA H200 (vulkan)": the line a run prints about its device.
std::string AdapterLine(const AdapterInfo& info);

// The local rank of this process in an MPI job on its host (OMPI_COMM_WORLD_LOCAL_RANK, or
// MPICH's MPI_LOCALRANKID), when it runs under one.
std::optional<uint32_t> MpiLocalRank();

// True when the adapter is a software rasterizer rather than a GPU: adapter type "cpu", the Null
// backend, or SwiftShader / llvmpipe / lavapipe / softpipe in vendor, architecture, device or
// description. `reason` (when non-null) receives one sentence saying which.
bool IsSoftwareAdapter(const AdapterInfo& info, std::string* reason = nullptr);

struct OpenOptions {
  // Software adapters (SwiftShader, lavapipe) are not a GPU. Open refuses them with
  // `software-adapter-refused` unless this is set; tests set it.
  bool allow_software_adapter = false;
  // Upper bound on any single wait for the GPU (adapter/device request, submit, map).
  uint32_t timeout_ms = 120000;
  // When non-zero, the device reports (and Scellis plans against) a storage binding cap of at most
  // this many bytes. WebGPU never lets a device ask for less than its 128 MiB default, so this is
  // how tests exercise the tiling of tensors over the cap with small tensors.
  uint64_t max_binding_bytes = 0;
  // Which of the adapters Dawn offers (0-based, in Dawn's order: discrete GPUs first; its Null
  // backend, which computes nothing, is not counted). Unset: under an MPI job the process's local
  // rank modulo the count of adapters it may use (software ones only when allowed), so each rank
  // of a host opens its own GPU; otherwise Dawn's first adapter. An index Dawn does not offer is
  // `adapter-not-found` (listing those it does), never another adapter.
  std::optional<uint32_t> adapter = std::nullopt;
  // Profiling: time every dispatch on the GPU (TakeGpuTimes). Needs the adapter's
  // `timestamp-query` (else `timestamp-query-unavailable`); turns off Dawn's quantization of
  // timestamps, and records each dispatch in a compute pass of its own whose beginning and end
  // write the pair, so a timed run is not quite the untimed one: use it to see where time goes,
  // never for the headline figures.
  bool gpu_timestamps = false;
  // The persistent kernel cache (kernel_cache.h): Dawn's compiled shaders and pipeline caches,
  // kept in the store, so a later run on the same device profile skips compiling them. On unless
  // this is false or the environment says SCELLIS_KERNEL_CACHE=off.
  bool kernel_cache = true;
  // The store that holds it; "" for the default ($SCELLIS_STORE, else under $HOME).
  std::string kernel_cache_store;
};

// One dispatch as the GPU's timestamps saw it, in nanoseconds on the device's clock.
struct GpuInterval {
  uint64_t begin_ns = 0, end_ns = 0;
};

// Test hooks. Each makes Dawn itself fail, so the real error path is what gets tested:
//   kFailNextSubmit  the next queue submission (of recorded work, by Submit, Read or Write)
//                    carries a copy from a destroyed buffer, which
//                    Dawn rejects as a validation error -> gpu-validation-error;
//   kFailNextMap     the next Read maps its staging buffer at a misaligned offset, which Dawn
//                    rejects -> map-failed;
//   kLoseDevice      wgpuDeviceDestroy now; Dawn reports the loss -> device-lost.
// (Dawn's wgpuDeviceForceLoss is not part of the standard API description, so it is not used.)
//   kFailNextAllocation  the next CreateBuffer fails as an allocation Dawn cannot satisfy fails:
//                    the device records the out-of-memory error Dawn would report (the standard
//                    API has no way to make Dawn itself fail one) -> gpu-out-of-memory, and every
//                    later submission carries it, as after a real one.
// $SCELLIS_FAULT_ALLOCATION=N injects kFailNextAllocation into the Nth buffer a device creates
// (counted from 1, pooled ones included), so a whole command can be tested against it.
enum class Fault { kFailNextSubmit, kFailNextMap, kLoseDevice, kFailNextAllocation };

// What a Write stages at once: Dawn holds a write's bytes in a mapped buffer of their size until
// the GPU has copied them, so a larger write goes in pieces (a 1 GiB parameter would otherwise
// hold 1 GiB of mapped memory beside the buffer itself).
inline constexpr uint64_t kUploadPieceBytes = uint64_t{64} << 20;
// The largest read-back staging buffer kept for the next read of its size. A step's own reads (a
// loss, the watched values) are small and come back every run; a large read is mostly one final
// output, and keeping its staging would hold that much mapped memory for the device's life.
inline constexpr uint64_t kMaxKeptStagingBytes = uint64_t{16} << 20;

struct DeviceStats {
  uint64_t dispatches = 0;          // recorded dispatches that were submitted
  uint64_t copies = 0;              // buffer-to-buffer copies recorded (Copy)
  uint64_t submits = 0;             // queue submissions (Submit, and the ones Read/Write make)
  uint64_t writes = 0;              // Write calls: each a copy the GPU runs behind a barrier
  uint64_t bytes_uploaded = 0;      // through Write
  uint64_t bytes_read = 0;          // through Read
  uint64_t maps = 0;                // staging-buffer maps (one per Read)
  uint64_t waits = 0;               // waits for the queue's work (Submit; a large Write's pieces)
  uint64_t buffers_allocated = 0;   // real allocations
  uint64_t buffers_reused = 0;      // CreateBuffer served from the pool
  uint64_t pipelines_compiled = 0;  // shader modules + pipelines actually built
  uint64_t pipeline_cache_hits = 0;
  double open_ms = 0;              // Device::Open: instance, adapter and device
  double pipeline_compile_ms = 0;  // Pipeline() calls that built something (cache hits excluded)
};

// Workgroup counts for `workgroups` workgroups when one dimension holds at most `max_per_dim`:
// x first, then y, then z; x * y * z >= workgroups (a kernel guards its tail). A kernel with
// workgroup size w linearizes global_invocation_id as `id.x + id.y * (x * w) + id.z * (x * y * w)`
// (pass the strides in its parameter block; see the 2-D test in device_test.cpp).
struct Grid {
  uint32_t x = 1, y = 1, z = 1;
};
Grid SplitWorkgroups(uint64_t workgroups, uint32_t max_per_dim);

class Device {
 public:
  // Loads Dawn, takes the adapter options.adapter names (Dawn's high-performance choice by
  // default) and requests a device with the adapter's limits.
  // Errors: dawn-not-found (user: install it), adapter-not-found (no adapter of that index),
  // no-webgpu-adapter (also when Dawn offers only its Null backend, which computes nothing: never
  // accepted, software allowed or not), software-adapter-refused (its message is the reason,
  // suitable for a fallback record), device-request-failed.
  static Result<std::unique_ptr<Device>> Open(const OpenOptions& options = {});

  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const AdapterInfo& info() const;

  // Stable identity of this device for scoping receipts: backend, vendor, architecture, device,
  // driver, PCI ids and Dawn build, e.g.
  // "webgpu;backend=vulkan;vendor=google;arch=swiftshader;device=...;driver=...;ids=1ae0:c0de;
  // dawn=bun-webgpu-linux-x64@0.1.7".
  std::string ProfileKey() const;

  // ---- buffers ----
  // A buffer of at least `bytes` bytes (rounded up to 4), from the pool when one of that size is
  // free. Never fails here: an allocation Dawn refuses poisons the device (gpu-out-of-memory or
  // gpu-validation-error from the next Submit/Read).
  BufferId CreateBuffer(uint64_t bytes);
  // Returns the buffer to the pool. The id is dead afterwards.
  void ReleaseBuffer(BufferId id);
  // The size asked for at creation; 0 for an unknown id.
  uint64_t BufferSize(BufferId id) const;
  // Frees every pooled buffer (those not currently handed out) and the idle read-back staging
  // buffers.
  void TrimPool();
  uint64_t pooled_bytes() const;
  // The idle read-back staging buffers' bytes: only those of at most kMaxKeptStagingBytes are
  // kept for the next read of their size.
  uint64_t kept_staging_bytes() const;

  // Host -> buffer. `offset` must be a multiple of 4; `bytes` too unless the range ends at the
  // buffer's end. Queued in order after everything recorded before it. A write over
  // kUploadPieceBytes goes in pieces of that size, each waited for before the next.
  Status Write(BufferId id, uint64_t offset, const void* src, uint64_t bytes);
  // Buffer -> host, any offset and size within the buffer. Submits what was recorded before, then
  // copies through a staging buffer and waits (at most timeout_ms): StartRead and FinishRead.
  Status Read(BufferId id, uint64_t offset, uint64_t bytes, void* dst);
  // A read-back in two halves, so the host records and sends more work while the GPU finishes
  // what comes before the read: StartRead records the range's copy into a staging buffer of its
  // own, submits everything recorded and asks for the staging buffer's map, without waiting;
  // FinishRead waits for that map (at most timeout_ms) and copies the bytes to `dst`. Any number
  // may be in flight, finished in any order, each ticket once; every one started must be
  // finished (its staging buffer comes back to a pool then). Errors as Read's; a ticket that is
  // unknown or already finished is an internal error.
  Result<ReadTicket> StartRead(BufferId id, uint64_t offset, uint64_t bytes);
  Status FinishRead(ReadTicket ticket, void* dst);

  // ---- pipelines ----
  // Compiles `wgsl` and builds a compute pipeline for `entry_point`, or returns the cached one
  // (keyed by source and entry point; a second call compiles nothing). A WGSL error gives the
  // user diagnostic `wgsl-compile-error` carrying the compiler's messages with line:column; a
  // pipeline Dawn refuses otherwise gives `pipeline-creation-failed`. With `errors`, a WGSL
  // error's messages are also handed back one by one (for runtime/user_wgsl.h).
  Result<PipelineId> Pipeline(const std::string& wgsl, const std::string& entry_point,
                              std::vector<WgslMessage>* errors = nullptr);
  uint64_t pipelines_compiled() const;
  // Every (entry point, WGSL source) this device built a pipeline for, in no particular order: what
  // a test compares with the device program the backend ran.
  std::vector<std::pair<std::string, std::string>> CompiledSources() const;

  // ---- recording ----
  // Records a dispatch of x * y * z workgroups with `bindings` bound to @group(0) @binding(0..n-1).
  // A bad id or a count over the limit is reported by the next Submit (and the recording since the
  // last Submit is dropped); a binding Dawn rejects (misaligned offset, range past the end) is a
  // gpu-validation-error that poisons the device.
  void Dispatch(PipelineId pipeline, const std::vector<Binding>& bindings, uint32_t x,
                uint32_t y = 1, uint32_t z = 1);
  // Records a buffer-to-buffer copy; offsets and size multiples of 4.
  void Copy(BufferId src, uint64_t src_offset, BufferId dst, uint64_t dst_offset, uint64_t bytes);
  // Records zero-filling bytes [offset, offset + bytes); multiples of 4 (bytes 0: to the end).
  void Clear(BufferId id, uint64_t offset = 0, uint64_t bytes = 0);
  // Submits everything recorded since the last Submit as one command buffer and waits for the
  // GPU (at most timeout_ms) — for the work of earlier Sends too, even when nothing new was
  // recorded. Returns the device's error if it is poisoned.
  Status Submit();
  // Submits everything recorded since the last Submit as one command buffer without waiting, so
  // the GPU runs it while the host records more. Returns the device's error if it is poisoned.
  Status Send();

  // ---- profiling (OpenOptions::gpu_timestamps) ----
  // The intervals of the dispatches submitted since the last call, in recording order (at most
  // kMaxTimedDispatches of them; later ones run untimed). Submits what was recorded and reads
  // the timestamps back. Empty when the device was opened without timestamps.
  static constexpr uint32_t kMaxTimedDispatches = 2048;
  Result<std::vector<GpuInterval>> TakeGpuTimes();
  bool gpu_timestamps() const;

  // ---- faults and stats ----
  void InjectFault(Fault fault);
  // The error that poisoned the device, if any.
  Status health() const;
  const DeviceStats& stats() const;
  // The persistent kernel cache's counters (kernel_cache.h); `enabled` false when it is off.
  KernelCacheStats kernel_cache() const;

 private:
  struct Impl;
  explicit Device(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace scellis::runtime::webgpu
