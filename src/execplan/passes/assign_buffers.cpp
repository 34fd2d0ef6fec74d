#include <algorithm>
#include <array>

#include "execplan/passes/passes.h"

namespace scellis::execplan {
namespace {

class Assigner {
 public:
  explicit Assigner(Plan& p) : p_(p), g_(p.graph()) {}

  Status Run() {
    if (p_.lifetimes.size() != g_.nodes.size() || p_.class_of.size() != g_.nodes.size())
      return InternalError("execplan.AssignBuffers", "needs liveness and memory classes first");
    std::vector<bool> is_output(g_.nodes.size(), false);
    for (const webir::Output& o : g_.outputs) is_output[o.node] = true;
    p_.buffers.clear();
    p_.buffer_of.assign(g_.nodes.size(), -1);
    p_.memory.by_class = {};
    p_.memory.at_peak = {};
    p_.memory.peak_step = -1;
    p_.memory.allocated = p_.memory.largest_tensor = 0;

    for (const webir::Node& n : g_.nodes)
      if (p_.lifetimes[n.id].stored && p_.lifetimes[n.id].written < 0)
        Assign(n.id, /*pinned=*/true);
    // Live bytes in all and by class; the peak keeps its breakdown by class.
    int64_t live = 0;
    std::array<int64_t, kMemClasses> live_by_class{};
    auto add_live = [&](int node, int64_t sign) {
      live += sign * Bytes(node);
      live_by_class[static_cast<int>(p_.class_of[node])] += sign * Bytes(node);
    };
    for (const webir::Node& n : g_.nodes)
      if (p_.buffer_of[n.id] >= 0) add_live(n.id, +1);
    p_.memory.peak_live = live;
    p_.memory.at_peak = live_by_class;

    for (Step& step : p_.steps) {
      const kernel::Kernel& k = p_.module().kernels[step.kernel];
      // Every output gets its buffer while the inputs still hold theirs, so no output of a
      // kernel shares a buffer with one of its inputs (a kernel of several outputs reads all of
      // an element's inputs before writing, but other elements' outputs must not land on them).
      // An output written over an input (Kernel::in_place) takes the input's buffer: no new
      // bytes are live.
      const std::vector<int> outs = k.Outputs();
      for (size_t j = 0; j < outs.size(); ++j) {
        if (const int over = k.InPlaceOf(j); over >= 0) {
          const int b = p_.buffer_of[k.inputs[over]];
          p_.buffer_of[outs[j]] = b;
          p_.buffers[b].values.push_back(outs[j]);
          continue;
        }
        Assign(outs[j], Pinned(outs[j], is_output));
        add_live(outs[j], +1);
      }
      if (live > p_.memory.peak_live) {
        p_.memory.peak_live = live;
        p_.memory.at_peak = live_by_class;
        p_.memory.peak_step = step.kernel;
      }

      step.reads.clear();
      for (int in : k.inputs) step.reads.push_back(p_.buffer_of[in]);
      step.write = p_.buffer_of[k.output];
      step.extra_writes.clear();
      for (int out : k.extra_outputs) step.extra_writes.push_back(p_.buffer_of[out]);

      // Values whose last reader just ran free their buffers for later steps (once each, even
      // when the kernel reads the value twice, as matmul(a, a) does).
      for (size_t i = 0; i < k.inputs.size(); ++i) {
        int in = k.inputs[i];
        if (p_.lifetimes[in].last_read != step.kernel) continue;
        if (std::find(k.inputs.begin(), k.inputs.begin() + i, in) != k.inputs.begin() + i) continue;
        const Buffer& b = p_.buffers[p_.buffer_of[in]];
        if (b.pinned) continue;
        add_live(in, -1);
        free_.push_back(b.id);
      }
      for (int out : outs) {
        if (p_.buffers[p_.buffer_of[out]].pinned) continue;
        if (p_.lifetimes[out].last_read < 0 && !Pinned(out, is_output)) {
          add_live(out, -1);  // written but never read: free at once
          free_.push_back(p_.buffer_of[out]);
        }
      }
    }

    AddTileScratch();
    MemoryPlan& mem = p_.memory;
    for (const Buffer& b : p_.buffers) {
      int64_t& cls = mem.by_class[static_cast<int>(b.cls)];
      cls = SaturatingAdd(cls, b.bytes);
      mem.allocated = SaturatingAdd(mem.allocated, b.bytes);
      mem.largest_tensor = std::max(mem.largest_tensor, b.bytes);
    }
    // The dataset lives for the whole run: where buffers are host memory it is a class of the
    // budget, live at every step; elsewhere it is host memory beside the device's.
    const int64_t dataset = p_.dataset_bytes;
    if (DatasetInBudget(p_)) {
      const int c = static_cast<int>(MemClass::kDataset);
      mem.by_class[c] = dataset;
      mem.at_peak[c] = dataset;
      mem.allocated = SaturatingAdd(mem.allocated, dataset);
      mem.peak_live = SaturatingAdd(mem.peak_live, dataset);
    }
    AddFedStaging();
    // The host holds every source before its upload and every named output after its download.
    mem.host_staging = p_.caller_host_bytes;
    if (p_.dataset && !DatasetInBudget(p_))
      mem.host_staging = SaturatingAdd(mem.host_staging, dataset);
    for (const webir::Node& n : g_.nodes)
      if (n.role == webir::Role::kInput || n.role == webir::Role::kParam)
        mem.host_staging = SaturatingAdd(mem.host_staging, Bytes(n.id));
    for (const webir::Output& o : g_.outputs)
      mem.host_staging = SaturatingAdd(mem.host_staging, Bytes(o.node));
    AddWatchedHistory();
    return Status::Ok();
  }

 private:
  // A WebGPU session writes each step's fed inputs into slots of staging buffers of its own (one
  // per fed input and run, a slot per step at a 256-byte offset) and keeps them until the run is
  // finished: with runs in flight, PlanOptions::staged_steps slots per fed input, live for the
  // whole run. The CPU reference reads its feeds where they are.
  void AddFedStaging() {
    MemoryPlan& mem = p_.memory;
    mem.fed_staging = 0;
    if (p_.limits.backend != "webgpu" || p_.staged_steps <= 0) return;
    for (int fed : webir::FedInputs(g_)) {
      const int64_t slot = (std::max<int64_t>(Bytes(fed), 4) + 255) / 256 * 256;
      mem.fed_staging = SaturatingAdd(mem.fed_staging, SaturatingMul(slot, p_.staged_steps));
    }
    const int c = static_cast<int>(MemClass::kInputs);
    mem.by_class[c] = SaturatingAdd(mem.by_class[c], mem.fed_staging);
    mem.at_peak[c] = SaturatingAdd(mem.at_peak[c], mem.fed_staging);
    mem.allocated = SaturatingAdd(mem.allocated, mem.fed_staging);
    mem.peak_live = SaturatingAdd(mem.peak_live, mem.fed_staging);
  }

  // The watched outputs' values of every step (PlanOptions::watched): on a WebGPU device each run
  // holds a history buffer and a read-back buffer of the same size for the staged steps, each
  // value's slot in them its bytes rounded up to 256, since the kernel that computes a value may
  // write it into its slot itself, which must start where a buffer can be bound; the host keeps
  // the steps its caller keeps, each value's bytes rounded up to 4 (on a GPU at least the steps in
  // flight, whose read-back it holds, with the slots' padding).
  void AddWatchedHistory() {
    MemoryPlan& mem = p_.memory;
    mem.watched_history = mem.watched_history_host = 0;
    int64_t per_step = 0, per_step_slots = 0;
    for (const webir::Output& o : g_.outputs) {
      if (std::find(p_.watched.begin(), p_.watched.end(), o.name) == p_.watched.end()) continue;
      per_step = SaturatingAdd(per_step, (Bytes(o.node) + 3) / 4 * 4);
      per_step_slots = SaturatingAdd(per_step_slots, (Bytes(o.node) + 255) / 256 * 256);
    }
    if (per_step == 0) return;
    mem.watched_history_host = SaturatingMul(per_step, WatchedStepsKept(p_));
    if (p_.limits.backend == "webgpu" && p_.staged_steps > 0) {
      mem.watched_history = SaturatingMul(SaturatingMul(per_step_slots, p_.staged_steps), 2);
      const int c = static_cast<int>(MemClass::kWorking);
      mem.by_class[c] = SaturatingAdd(mem.by_class[c], mem.watched_history);
      mem.at_peak[c] = SaturatingAdd(mem.at_peak[c], mem.watched_history);
      mem.allocated = SaturatingAdd(mem.allocated, mem.watched_history);
      mem.peak_live = SaturatingAdd(mem.peak_live, mem.watched_history);
      mem.watched_history_host = SaturatingAdd(
          mem.watched_history_host, SaturatingMul(per_step_slots - per_step, p_.staged_steps));
    }
    mem.host_staging = SaturatingAdd(mem.host_staging, mem.watched_history_host);
  }

  // The scratch the tiles of kernels over the binding cap hand partial results on in (a
  // whole-tensor sum's 256 lanes, kernel::TileSpace::scratch_elements), and wide sums their
  // chunks' partial sums in (kernel::SumSchedule): one working buffer as
  // large as the largest any step needs, pinned, so it is live at every step and the peak grows by
  // its size.
  void AddTileScratch() {
    int64_t bytes = 0;
    for (const Step& s : p_.steps) bytes = std::max(bytes, StepScratchBytes(p_, s));
    if (bytes == 0) return;
    Buffer b;
    b.id = static_cast<int>(p_.buffers.size());
    b.bytes = bytes;
    b.cls = MemClass::kWorking;
    b.pinned = true;
    b.tile_scratch = true;
    p_.buffers.push_back(b);
    p_.memory.peak_live = SaturatingAdd(p_.memory.peak_live, bytes);
    int64_t& working = p_.memory.at_peak[static_cast<int>(MemClass::kWorking)];
    working = SaturatingAdd(working, bytes);
  }

  int64_t Bytes(int node) const { return g_.at(node).type.bytes(); }
  bool Pinned(int node, const std::vector<bool>& is_output) const {
    return is_output[node] || p_.class_of[node] == MemClass::kOptimizerState;
  }

  void Assign(int node, bool pinned) {
    const int64_t bytes = Bytes(node);
    const MemClass cls = p_.class_of[node];
    if (!pinned) {
      // Best fit among free buffers of the same class.
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        const Buffer& b = p_.buffers[*it];
        if (b.cls != cls || b.bytes < bytes) continue;
        if (best == free_.end() || b.bytes < p_.buffers[*best].bytes) best = it;
      }
      if (best != free_.end()) {
        int id = *best;
        free_.erase(best);
        p_.buffers[id].values.push_back(node);
        p_.buffer_of[node] = id;
        return;
      }
    }
    Buffer b;
    b.id = static_cast<int>(p_.buffers.size());
    b.bytes = bytes;
    b.cls = cls;
    b.pinned = pinned;
    b.values = {node};
    p_.buffer_of[node] = b.id;
    p_.buffers.push_back(b);
  }

  Plan& p_;
  const webir::Graph& g_;
  std::vector<int> free_;
};

}  // namespace

Status AssignBuffers(Plan& p) {
  return Assigner(p).Run();
}

}  // namespace scellis::execplan
