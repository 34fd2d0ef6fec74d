#include "backend/webgpu/executor.h"

#include <chrono>
#include <cstdio>

namespace scellis::backend::webgpu {

WebGpuExecutor::WebGpuExecutor(std::unique_ptr<Device> device) : device_(std::move(device)) {}

execplan::DeviceLimits PlanLimits(const AdapterInfo& info) {
  execplan::DeviceLimits l;
  l.device = "webgpu adapter \"" + info.device + "\"";
  l.max_buffer_bytes = static_cast<int64_t>(info.limits.max_buffer_size);
  l.max_binding_bytes = static_cast<int64_t>(info.limits.max_storage_buffer_binding_size);
  return l;
}

namespace {

// Fills a whole buffer with kPoisonBits. Written as u32 so no float path can quiet or canonicalize
// the NaN; the grid may be folded into y and z like any large dispatch.
std::string PoisonWgsl() {
  char bits[16];
  std::snprintf(bits, sizeof bits, "0x%08xu", kPoisonBits);
  return std::string(
             "@group(0) @binding(0) var<storage, read_write> out: array<u32>;\n"
             "@compute @workgroup_size(64)\n"
             "fn main(@builtin(global_invocation_id) gid: vec3<u32>,\n"
             "        @builtin(num_workgroups) groups: vec3<u32>) {\n"
             "  let i = gid.x + (gid.y + gid.z * groups.y) * groups.x * 64u;\n"
             "  if (i < arrayLength(&out)) { out[i] = ") +
         bits + "; }\n}\n";
}

}  // namespace

Result<RunResult> WebGpuExecutor::Run(const execplan::Plan& plan, const Feeds& feeds) {
  return Run(plan, feeds, RunOptions{});
}

Result<RunResult> WebGpuExecutor::Run(const execplan::Plan& plan, const Feeds& feeds,
                                      const RunOptions& options) {
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
  PipelineId poison;
  if (options.poison_outputs) {
    auto p = d.Pipeline(PoisonWgsl(), "main");
    if (!p.ok()) {
      release();
      return InternalError("webgpu.Run", "the poison fill kernel failed to compile: " +
                                             p.errors().front().message);
    }
    poison = p.value();
  }
  for (const execplan::Step& s : plan.steps) {
    const kernel::Kernel& k = plan.module.kernels[s.kernel];
    if (options.poison_outputs) {
      uint64_t words = (d.BufferSize(buffers[s.write]) + 3) / 4;
      Grid grid = SplitWorkgroups((words + 63) / 64, lim.max_compute_workgroups_per_dimension);
      d.Dispatch(poison, {{buffers[s.write], 0, 0}}, grid.x, grid.y, grid.z);
    }
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
