#include "backend/webgpu/executor.h"

#include <chrono>

namespace scellis::backend::webgpu {

WebGpuExecutor::WebGpuExecutor(std::unique_ptr<Device> device) : device_(std::move(device)) {}

execplan::DeviceLimits PlanLimits(const AdapterInfo& info) {
  execplan::DeviceLimits l;
  l.device = "webgpu adapter \"" + info.device + "\"";
  l.max_buffer_bytes = static_cast<int64_t>(info.limits.max_buffer_size);
  l.max_binding_bytes = static_cast<int64_t>(info.limits.max_storage_buffer_binding_size);
  return l;
}

Result<RunResult> WebGpuExecutor::Run(const execplan::Plan& plan, const Feeds& feeds) {
  if (plan.verdict == execplan::Verdict::kRed)
    return InternalError("webgpu.Run", "asked to run a red plan");
  auto start = std::chrono::steady_clock::now();
  Device& d = *device_;
  const webir::Graph& g = plan.graph();
  const Limits& lim = d.info().limits;
  for (const execplan::Buffer& b : plan.buffers) {
    if (static_cast<uint64_t>(b.bytes) > lim.max_storage_buffer_binding_size) {
      return UserError("binding-cap-exceeded", "",
                       "buffer b" + std::to_string(b.id) + " holds " + execplan::FormatBytes(b.bytes) +
                           ", over this adapter's storage binding cap of " +
                           execplan::FormatBytes(static_cast<int64_t>(lim.max_storage_buffer_binding_size)),
                       "split the tensor, or run on the CPU reference (--backend=cpu)");
    }
  }
  DeviceStats before = d.stats();

  std::vector<BufferId> buffers;
  buffers.reserve(plan.buffers.size());
  for (const execplan::Buffer& b : plan.buffers)
    buffers.push_back(d.CreateBuffer(static_cast<uint64_t>(std::max<int64_t>(b.bytes, 4))));
  auto release = [&] {
    for (BufferId b : buffers) d.ReleaseBuffer(b);
  };

  for (const webir::Node& n : g.nodes) {
    if (n.role != webir::Role::kInput && n.role != webir::Role::kParam) continue;
    auto data = SourceData(n, feeds);
    if (!data.ok()) {
      release();
      return data.status();
    }
    if (data->empty()) continue;
    Status s = d.Write(buffers[plan.buffer_of[n.id]], 0, data->data(), data->size() * sizeof(float));
    if (!s.ok()) {
      release();
      return s;
    }
  }
  for (const execplan::Step& s : plan.steps) {
    const kernel::Kernel& k = plan.module.kernels[s.kernel];
    auto pipeline = d.Pipeline(k.wgsl, k.entry_point);
    if (!pipeline.ok()) {
      release();
      // The engine generated this WGSL: a compile failure is our bug, not the user's.
      Diagnostic e = InternalError("webgpu.Run", "kernel " + k.name + " failed to compile: " +
                                                      pipeline.errors().front().message);
      return e;
    }
    std::vector<Binding> bindings;
    for (int b : s.reads) bindings.push_back({buffers[b], 0, 0});
    bindings.push_back({buffers[s.write], 0, 0});
    d.Dispatch(pipeline.value(), bindings, k.workgroups[0], k.workgroups[1], k.workgroups[2]);
  }
  Status submitted = d.Submit();
  if (!submitted.ok()) {
    release();
    return submitted;
  }
  RunResult r;
  r.backend = "webgpu";
  r.executor = "fused-encoder";
  for (const webir::Output& o : g.outputs) {
    HostTensor t;
    t.type = g.at(o.node).type;
    t.data.resize(static_cast<size_t>(t.type.elements()));
    if (!t.data.empty()) {
      Status s = d.Read(buffers[plan.buffer_of[o.node]], 0, t.data.size() * sizeof(float), t.data.data());
      if (!s.ok()) {
        release();
        return s;
      }
    }
    r.outputs.emplace_back(o.name, std::move(t));
  }
  release();
  const DeviceStats& after = d.stats();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  r.stats = {{"kernels", plan.steps.size()},
             {"dispatches", after.dispatches - before.dispatches},
             {"submits", after.submits - before.submits},
             {"pipelines_compiled", after.pipelines_compiled - before.pipelines_compiled},
             {"pipeline_cache_hits", after.pipeline_cache_hits - before.pipeline_cache_hits},
             {"bytes_uploaded", after.bytes_uploaded - before.bytes_uploaded},
             {"bytes_read", after.bytes_read - before.bytes_read},
             {"wall_ms", ms},
             {"adapter", d.info().device},
             {"memory_allocated_bytes", plan.memory.allocated}};
  return r;
}

}  // namespace scellis::backend::webgpu
