// A plan resident on a Dawn device. Feeds for all steps of a run are uploaded first into one
// staging buffer per fed input (the queue writes them before the submission executes), and each
// step binds its own slice of it directly. Carried values ping-pong: after a step, a carried
// output's buffer and its input's buffer swap roles, so no step copies state. Every step's
// dispatches go into one submission; only the per-step history of watched outputs (one small
// copy per step, all into one history buffer) is read back, through one staging map.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <map>

#include "kernel/emit/wgsl/codegen.h"
#include "runtime/backends/webgpu/executor.h"

namespace scellis::runtime::webgpu {
namespace {

uint64_t RoundUp4(uint64_t bytes) {
  return (bytes + 3) / 4 * 4;
}

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

class WebGpuPrepared : public Prepared {
 public:
  WebGpuPrepared(const execplan::Plan& plan, Device& device, const RunOptions& options)
      : Prepared(plan), d_(device), options_(options) {}
  ~WebGpuPrepared() override {
    for (BufferId b : buffers_) d_.ReleaseBuffer(b);
  }

  std::string backend() const override { return "webgpu"; }
  std::string executor() const override { return "fused-encoder"; }

  Status Init(const Feeds& feeds) {
    SCELLIS_TRY(CheckDtypes());
    for (const execplan::Buffer& b : plan_.buffers)
      buffers_.push_back(d_.CreateBuffer(static_cast<uint64_t>(std::max<int64_t>(b.bytes, 4))));
    phys_ = buffers_;
    const webir::Graph& g = plan_.graph();
    fed_ = FedInputs(g);
    for (const webir::Node& n : g.nodes) {
      if (n.role != webir::Role::kInput && n.role != webir::Role::kParam) continue;
      if (IsFed(n.id) || (n.role == webir::Role::kInput && !n.data)) continue;
      SCELLIS_TRY(WriteSource(n, feeds, Phys(n.id), 0));
    }
    for (const execplan::Step& st : plan_.steps) SCELLIS_TRY(PlanTiles(st));
    if (options_.poison_outputs) {
      auto p = d_.Pipeline(PoisonWgsl(), "main");
      if (!p.ok()) {
        return InternalError("webgpu.Prepare", "the poison fill kernel failed to compile: " +
                                                   p.errors().front().message);
      }
      poison_ = p.value();
    }
    return Status::Ok();
  }

  // f16 storage needs the device's shader-f16 feature, and a compiler that accepts `enable f16`
  // (some grant the feature and still refuse it); say so before any kernel compiles.
  Status CheckDtypes() {
    for (const webir::Node& n : plan_.graph().nodes) {
      if (n.type.dtype != DType::kF16 || plan_.buffer_of[n.id] < 0) continue;
      std::string why = "has no shader-f16 feature enabled";
      if (d_.info().shader_f16) {
        auto probe = d_.Pipeline(
            "enable f16;\n"
            "@group(0) @binding(0) var<storage, read_write> out: array<f16>;\n"
            "@compute @workgroup_size(1)\n"
            "fn main() { out[0] = f16(1.0); }\n",
            "main");
        if (probe.ok()) return Status::Ok();
        why = "enables shader-f16 but its WGSL compiler refuses `enable f16`";
      }
      return UserError("shader-f16-unavailable", n.origin,
                       "\"" + FeedName(n) + "\" is f16, and the WebGPU adapter \"" +
                           d_.info().device + "\" " + why,
                       "declare it f32, or run on an adapter with shader-f16 or on the CPU");
    }
    return Status::Ok();
  }

  Status WriteSource(const webir::Node& n, const Feeds& feeds, BufferId target, uint64_t offset) {
    SCELLIS_ASSIGN_OR_RETURN(HostTensor data, SourceData(n, feeds));
    if (data.bytes.empty()) return Status::Ok();
    // A slot of a 2-byte dtype may end mid-word; the device writes whole words.
    if (data.bytes.size() % 4) data.bytes.resize(RoundUp4(data.bytes.size()));
    return d_.Write(target, offset, data.bytes.data(), data.bytes.size());
  }

  // The dispatches of one plan step: the kernel over everything, or — where a buffer it binds is
  // over the adapter's storage-binding cap — an elementwise kernel in tiles that each bind at most
  // the cap. The plan's verdict already refused kernels that cannot be tiled.
  Status PlanTiles(const execplan::Step& st) {
    const kernel::Kernel& k = plan_.module().kernels[st.kernel];
    const uint64_t cap = d_.info().limits.max_storage_buffer_binding_size;
    bool over = static_cast<uint64_t>(plan_.buffers[st.write].bytes) > cap;
    for (int b : st.reads) over |= static_cast<uint64_t>(plan_.buffers[b].bytes) > cap;
    std::vector<Tile> tiles;
    auto compile = [&](const std::string& wgsl) -> Result<PipelineId> {
      auto p = d_.Pipeline(wgsl, k.Wgsl().entry_point);
      if (!p.ok()) {
        return InternalError("webgpu.Prepare", "kernel " + k.name + " failed to compile: " +
                                                   p.errors().front().message);
      }
      return p.value();
    };
    if (!over) {
      SCELLIS_ASSIGN_OR_RETURN(PipelineId p, compile(k.Wgsl().source));
      tiles.push_back({p, 0, -1, k.workgroups});
    } else {
      if (k.kind != kernel::KernelKind::kElementwise)
        return InternalError("webgpu.Prepare",
                             k.name + " binds a buffer over the cap and cannot be tiled");
      const uint64_t align =
          std::max<uint32_t>(d_.info().limits.min_storage_buffer_offset_alignment, 4);
      const int64_t per_tile = static_cast<int64_t>(cap / align * align / 4);
      const int64_t total = plan_.graph().at(k.output).type.elements();
      for (int64_t base = 0; base < total; base += per_tile) {
        int64_t count = std::min(per_tile, total - base);
        kernel::wgsl::Generated g = kernel::wgsl::ElementwiseTile(plan_.module(), k, base, count);
        SCELLIS_ASSIGN_OR_RETURN(PipelineId p, compile(g.source));
        tiles.push_back({p, base, count, g.workgroups});
      }
    }
    tiles_.push_back(std::move(tiles));
    return Status::Ok();
  }

 protected:
  Result<StepsResult> DoRunSteps(const std::vector<Feeds>& feeds,
                                 const std::vector<std::string>& names,
                                 const std::vector<int>& watch) override {
    auto start = std::chrono::steady_clock::now();
    const webir::Graph& g = plan_.graph();
    const size_t steps = feeds.size();
    DeviceStats before = d_.stats();
    std::vector<BufferId> scratch;
    auto release = [&] {
      for (BufferId b : scratch) d_.ReleaseBuffer(b);
    };

    // Inputs that take data this run: fed ones every step; carried ones only on the first run.
    // Fed inputs: one slot per step, each at an offset the adapter can bind.
    struct Slots {
      BufferId staging;
      uint64_t stride;
      uint64_t bytes;
    };
    std::map<int, Slots> fed_slots;
    const uint64_t align =
        std::max<uint32_t>(d_.info().limits.min_storage_buffer_offset_alignment, 4);
    for (const webir::Node& n : g.nodes) {
      if (n.role != webir::Role::kInput || n.data) continue;
      bool fed = IsFed(n.id);
      if (!fed && initialized_) continue;
      uint64_t bytes = std::max<uint64_t>(RoundUp4(n.type.bytes()), 4);
      uint64_t stride = fed ? (bytes + align - 1) / align * align : bytes;
      size_t slices = fed ? steps : 1;
      // A carried input's first value goes straight into its own buffer.
      BufferId target = fed ? d_.CreateBuffer(stride * slices) : Phys(n.id);
      if (fed) scratch.push_back(target);
      for (size_t k = 0; k < slices; ++k) {
        // Each step's feed is written from the caller's memory into its slot: one copy, by the
        // queue (batches are the largest data a training step moves).
        Status s = WriteSource(n, feeds[k], target, k * stride);
        if (!s.ok()) {
          release();
          return s;
        }
      }
      if (fed) fed_slots[n.id] = {target, stride, bytes};
    }

    // Every watched value of every step goes into one history buffer, so one map reads it all:
    // watched output i of step k at history_at[i] + k * slot[i].
    std::vector<uint64_t> slot, history_at;
    uint64_t history_bytes = 0;
    for (int node : watch) {
      slot.push_back(RoundUp4(g.at(node).type.bytes()));
      history_at.push_back(history_bytes);
      history_bytes += slot.back() * steps;
    }
    BufferId history = d_.CreateBuffer(std::max<uint64_t>(history_bytes, 4));
    scratch.push_back(history);

    for (size_t k = 0; k < steps; ++k) {
      for (size_t s = 0; s < plan_.steps.size(); ++s) {
        const execplan::Step& st = plan_.steps[s];
        const kernel::Kernel& kern = plan_.module().kernels[st.kernel];
        const TensorType& out_type = g.at(kern.output).type;
        for (const Tile& t : tiles_[s]) {
          // A tile binds the window [base, base + count) of every operand of the output's shape.
          const bool tiled = t.count >= 0;
          const uint64_t offset = tiled ? static_cast<uint64_t>(t.base) * 4 : 0;
          const uint64_t window =
              tiled ? static_cast<uint64_t>(std::max<int64_t>(t.count, 1)) * 4 : 0;
          std::vector<Binding> bindings;
          for (size_t i = 0; i < st.reads.size(); ++i) {
            bool windowed = tiled && g.at(kern.inputs[i]).type.SameShape(out_type);
            auto fed = fed_slots.find(kern.inputs[i]);
            if (fed != fed_slots.end()) {
              bindings.push_back({fed->second.staging,
                                  k * fed->second.stride + (windowed ? offset : 0),
                                  windowed ? window : fed->second.bytes});
            } else {
              bindings.push_back(
                  {phys_[st.reads[i]], windowed ? offset : 0, windowed ? window : 0});
            }
          }
          bindings.push_back({phys_[st.write], offset, window});
          if (options_.poison_outputs) {
            uint64_t words = tiled ? window / 4 : (d_.BufferSize(phys_[st.write]) + 3) / 4;
            Grid grid = SplitWorkgroups((words + 63) / 64,
                                        d_.info().limits.max_compute_workgroups_per_dimension);
            d_.Dispatch(poison_, {{phys_[st.write], offset, window}}, grid.x, grid.y, grid.z);
          }
          d_.Dispatch(t.pipeline, bindings, t.grid[0], t.grid[1], t.grid[2]);
        }
      }
      for (size_t i = 0; i < watch.size(); ++i) {
        if (slot[i]) d_.Copy(Phys(watch[i]), 0, history, history_at[i] + k * slot[i], slot[i]);
      }
      // The carried outputs become next step's inputs by swapping buffers, not by copying.
      for (const webir::Carry& c : g.carries)
        std::swap(phys_[plan_.buffer_of[c.from]], phys_[plan_.buffer_of[c.to]]);
    }
    // The read submits the recorded steps together with its copy to the staging buffer: one
    // submission and one map for the whole run.
    std::vector<std::byte> all(history_bytes);
    Status done = history_bytes ? d_.Read(history, 0, history_bytes, all.data()) : d_.Submit();
    release();
    if (!done.ok()) return done;
    initialized_ = true;

    StepsResult r;
    for (size_t i = 0; i < watch.size(); ++i) {
      const TensorType& type = g.at(watch[i]).type;
      std::vector<HostTensor> per_step;
      for (size_t k = 0; k < steps; ++k) {
        const std::byte* first = all.data() + history_at[i] + k * slot[i];
        per_step.push_back({type, {first, first + type.bytes()}});
      }
      r.watched.push_back({names[i], std::move(per_step)});
    }
    const DeviceStats& after = d_.stats();
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    r.stats = {{"steps", steps},
               {"dispatches", after.dispatches - before.dispatches},
               {"submissions", after.submits - before.submits},
               {"maps", after.maps - before.maps},
               {"bytes_uploaded", after.bytes_uploaded - before.bytes_uploaded},
               {"readback_bytes", after.bytes_read - before.bytes_read},
               {"wall_ms", ms}};
    return r;
  }

  Result<HostTensor> DoDownload(int node) override {
    // After a step a carried output's value lives in its input's buffer (they swapped).
    for (const webir::Carry& c : plan_.graph().carries)
      if (c.from == node) node = c.to;
    HostTensor t = HostTensor::Zeros(plan_.graph().at(node).type);
    if (!t.bytes.empty()) SCELLIS_TRY(d_.Read(Phys(node), 0, t.bytes.size(), t.bytes.data()));
    return t;
  }

  Status DoUpload(int node, const HostTensor& value) override {
    if (!value.bytes.empty()) {
      std::vector<std::byte> padded = value.bytes;
      padded.resize(RoundUp4(padded.size()));
      SCELLIS_TRY(d_.Write(Phys(node), 0, padded.data(), padded.size()));
    }
    initialized_ |= IsCarried(plan_.graph(), node);
    return Status::Ok();
  }

 private:
  bool IsFed(int node) const { return std::find(fed_.begin(), fed_.end(), node) != fed_.end(); }
  // The buffer holding `node` now (carried values move between their two buffers each step).
  BufferId Phys(int node) const { return phys_[plan_.buffer_of[node]]; }

  Device& d_;
  std::vector<BufferId> buffers_;  // owned, one per plan buffer
  std::vector<BufferId> phys_;     // plan buffer -> the device buffer holding it now
  struct Tile {
    PipelineId pipeline;
    int64_t base = 0;
    int64_t count = -1;  // -1: the whole kernel, untiled
    std::array<uint32_t, 3> grid;
  };
  std::vector<std::vector<Tile>> tiles_;  // per plan step
  std::vector<int> fed_;
  RunOptions options_;
  PipelineId poison_;
  bool initialized_ = false;
};

}  // namespace

Result<std::unique_ptr<Prepared>> PrepareOn(Device& device, const execplan::Plan& plan,
                                            const Feeds& feeds, const RunOptions& options) {
  auto p = std::make_unique<WebGpuPrepared>(plan, device, options);
  SCELLIS_TRY(p->Init(feeds));
  return std::unique_ptr<Prepared>(std::move(p));
}

}  // namespace scellis::runtime::webgpu
