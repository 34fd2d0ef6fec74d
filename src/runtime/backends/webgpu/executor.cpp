#include "runtime/backends/webgpu/executor.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace scellis::runtime::webgpu {

WebGpuExecutor::WebGpuExecutor(std::unique_ptr<Device> device) : device_(std::move(device)) {}

// The adapter's buffer limits, and the host's memory for the copies staged through it. A
// software or integrated adapter keeps its buffers in host memory, so they count there too; a
// discrete GPU's are judged against its own memory, as Vulkan reports it (vulkan_memory.h), or
// only against maxBufferSize where that is not known.
execplan::DeviceLimits PlanLimits(const AdapterInfo& info) {
  execplan::DeviceLimits l =
      execplan::HostMemoryLimits("webgpu", "webgpu adapter \"" + info.device + "\"");
  l.buffers_in_host_memory = info.is_software || info.adapter_type == "integrated-gpu";
  if (!l.buffers_in_host_memory) {
    l.device_memory_bytes = info.device_memory_bytes;
    l.device_memory_source = info.device_memory_source;
  }
  l.max_buffer_bytes = static_cast<int64_t>(
      std::min<uint64_t>(info.limits.max_buffer_size, std::numeric_limits<int64_t>::max()));
  l.max_binding_bytes = static_cast<int64_t>(std::min<uint64_t>(
      info.limits.max_storage_buffer_binding_size, std::numeric_limits<int64_t>::max()));
  l.max_workgroup_storage_bytes = info.limits.max_compute_workgroup_storage_size;
  l.max_storage_buffers_per_kernel = info.limits.max_storage_buffers_per_shader_stage;
  return l;
}

ProgramLimits ProgramLimitsOf(const AdapterInfo& info) {
  ProgramLimits l;
  l.max_storage_buffer_binding_size = info.limits.max_storage_buffer_binding_size;
  l.min_storage_buffer_offset_alignment = info.limits.min_storage_buffer_offset_alignment;
  l.max_compute_workgroups_per_dimension = info.limits.max_compute_workgroups_per_dimension;
  return l;
}

DeviceProfile ProfileOf(const Device& device) {
  const AdapterInfo& i = device.info();
  DeviceProfile p;
  p.key = device.ProfileKey();
  p.vendor = i.vendor;
  p.architecture = i.architecture;
  p.device = i.device;
  p.driver = i.driver;
  p.backend_api = i.backend_api;
  p.dawn_version = i.dawn_version;
  p.adapter_type = i.adapter_type;
  p.is_software = i.is_software;
  p.adapter = AdapterLine(i);
  p.adapter_index = static_cast<int>(i.adapter_index);
  p.adapter_count = static_cast<int>(i.adapter_count);
  return p;
}

DeviceProfile WebGpuExecutor::profile() const {
  return ProfileOf(*device_);
}

execplan::DeviceLimits WebGpuExecutor::limits() const {
  return PlanLimits(device_->info());
}

Result<std::unique_ptr<Prepared>> WebGpuExecutor::DoPrepare(const execplan::Plan& plan,
                                                            const Feeds& feeds,
                                                            const RunOptions& options) {
  return PrepareOn(*device_, plan, feeds, options);
}

namespace {

// What the persistent kernel cache did between two snapshots of its counters.
Json KernelCacheJson(const KernelCacheStats& before, const KernelCacheStats& after) {
  if (!after.enabled) return {{"enabled", false}, {"off_reason", after.off_reason}};
  std::vector<std::string> refused(after.refused.begin() + before.refused.size(),
                                   after.refused.end());
  return {{"enabled", true},
          {"store", after.store_root},
          {"hits", after.hits - before.hits},
          {"misses", after.misses - before.misses},
          {"stores", after.stores - before.stores},
          {"refused", refused}};
}

}  // namespace

// A one-shot run is a session of one step whose watched values are every named output.
Result<RunResult> WebGpuExecutor::DoRun(const execplan::Plan& plan, const Feeds& feeds,
                                        const RunOptions& options) {
  auto start = std::chrono::steady_clock::now();
  DeviceStats before = device_->stats();
  const KernelCacheStats cache_before = device_->kernel_cache();
  SCELLIS_ASSIGN_OR_RETURN(std::unique_ptr<Prepared> prepared, DoPrepare(plan, feeds, options));
  std::vector<std::string> names;
  for (const webir::Output& o : plan.graph().outputs) names.push_back(o.name);
  SCELLIS_ASSIGN_OR_RETURN(StepsResult steps, prepared->RunSteps({feeds}, names));
  RunResult r;
  r.backend = "webgpu";
  r.executor = prepared->executor();
  prepared.reset();  // returns the buffers to the pool before the stats are read
  for (auto& [name, values] : steps.watched)
    r.outputs.emplace_back(name, std::move(values.front()));
  const DeviceStats& after = device_->stats();
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  r.stats = {{"kernels", plan.steps.size()},
             {"dispatches", after.dispatches - before.dispatches},
             {"iterations_per_dispatch", steps.stats.value("iterations_per_dispatch", 1)},
             {"submissions", after.submits - before.submits},
             {"maps", after.maps - before.maps},
             {"pipelines_compiled", after.pipelines_compiled - before.pipelines_compiled},
             {"pipeline_cache_hits", after.pipeline_cache_hits - before.pipeline_cache_hits},
             {"bytes_uploaded", after.bytes_uploaded - before.bytes_uploaded},
             {"readback_bytes", after.bytes_read - before.bytes_read},
             {"wall_ms", ms},
             {"adapter", device_->info().device},
             {"memory_allocated_bytes", plan.memory.allocated},
             {"device_open_ms", after.open_ms},
             {"pipeline_compile_ms", after.pipeline_compile_ms - before.pipeline_compile_ms},
             {"kernel_cache", KernelCacheJson(cache_before, device_->kernel_cache())}};
  // The host's part of the run and, when the device times dispatches, the GPU's times.
  for (const auto& [key, value] : steps.stats.items())
    if (key.rfind("host_", 0) == 0 || key == "gpu_timestamps" || key == "left_out_dispatches")
      r.stats[key] = value;
  return r;
}

}  // namespace scellis::runtime::webgpu
