#include <algorithm>
#include <set>

#include "base/sha256.h"
#include "kernel/emit/wgsl/codegen.h"
#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

// 4096 elements per tile when one value is carried (16 KiB, WebGPU's guaranteed workgroup memory),
// fewer when more are; a tile below 64 elements would leave most of a workgroup idle.
constexpr int64_t kMaxTile = 4096;
constexpr int64_t kMinTile = 64;
constexpr int64_t kWorkgroupBytes = 16384;
constexpr size_t kMaxBindings = 8;

bool ThirtyTwoBit(DType t) {
  return t == DType::kF32 || t == DType::kI32 || t == DType::kU32 || t == DType::kBool;
}

// Whether `k` can be a stage: a rank-1 elementwise kernel of 32-bit values in registers and
// buffers, reading its inputs at its element (or a single element everywhere) or at a butterfly
// partner, never shifted, each buffer within the binding cap.
bool Stageable(const Module& m, const Kernel& k) {
  const webir::Graph& g = m.graph();
  if (k.kind != KernelKind::kElementwise || k.hoisted || !k.extra_outputs.empty()) return false;
  const TensorType& out = g.at(k.output).type;
  const int64_t n = out.elements();
  if (out.rank() != 1 || n < 2 || n % 2) return false;
  if (m.binding_cap && static_cast<uint64_t>(n) * 4 > m.binding_cap) return false;
  for (const ExprStep& e : k.expr) {
    // An inlined draw hashes the element's index in the tensor, which a stage does not declare.
    if (e.op == "shift" || e.op == "uniform" || !ThirtyTwoBit(g.at(e.node).type.dtype))
      return false;
    if (e.op == "butterfly" && !g.at(k.inputs[e.operands[0]]).type.SameShape(out)) return false;
  }
  for (int in : k.inputs) {
    const TensorType& t = g.at(in).type;
    if (!ThirtyTwoBit(t.dtype) || (!t.SameShape(out) && t.elements() != 1)) return false;
  }
  return true;
}

// The largest power of two up to `cap` that divides `n`.
int64_t TileFor(int64_t n, int64_t cap) {
  int64_t t = 1;
  while (t * 2 <= cap && n % (t * 2) == 0) t *= 2;
  return t;
}

struct Run {
  size_t begin = 0, end = 0;
  int64_t tile = 0;
};

class Blocker {
 public:
  explicit Blocker(const Module& m) : m_(m) {
    for (const Kernel& k : m.kernels) stageable_.push_back(Stageable(m, k));
  }

  // Runs among kernels [begin, end) whose tile is at most `cap`.
  void Form(size_t begin, size_t end, int64_t cap) {
    size_t a = begin;
    bool reads_partner = false;
    for (size_t j = begin; j < end; ++j) {
      if (!stageable_[j]) {
        Close(a, j, cap, reads_partner);
        a = j + 1;
        reads_partner = false;
        continue;
      }
      bool partner = false;
      if (j > a && !Joins(a, j, cap, partner)) {
        Close(a, j, cap, reads_partner);
        a = j;
        reads_partner = false;
        continue;
      }
      reads_partner |= partner;
    }
    Close(a, end, cap, reads_partner);
  }

  std::vector<Run> runs;

 private:
  int64_t Elements(size_t j) const { return m_.graph().at(m_.kernels[j].output).type.elements(); }
  int64_t TileOf(size_t a, int64_t cap) const { return TileFor(Elements(a), cap); }

  // Whether kernel j can join the run [a, j): the values the run writes it reads at its element,
  // or at a partner inside the tile; `partner` says whether it reads one at a partner.
  bool Joins(size_t a, size_t j, int64_t cap, bool& partner) const {
    const Kernel& k = m_.kernels[j];
    if (Elements(j) != Elements(a)) return false;
    const int64_t tile = TileOf(a, cap);
    for (size_t n = 0; n < k.inputs.size(); ++n) {
      bool written = false;
      for (size_t s = a; s < j; ++s) written |= m_.kernels[s].output == k.inputs[n];
      if (!written) continue;
      for (const ExprStep& e : k.expr) {
        if (e.op != "butterfly" || e.operands[0] != static_cast<int>(n)) continue;
        if (m_.graph().at(e.node).attrs.at("mask").get<int64_t>() >= tile) return false;
        partner = true;
      }
    }
    return true;
  }

  void Close(size_t a, size_t b, int64_t cap, bool reads_partner) {
    // A run that reads no partner in workgroup memory is elementwise kernels that did not fuse
    // (a value read twice): fusing them is another pass's business.
    if (b < a + 2 || !reads_partner) return;
    const int64_t tile = TileOf(a, cap);
    if (tile < kMinTile || Elements(a) / tile > wgsl::kMaxWorkgroupsPerDim) return;
    Kernel probe;
    probe.stages.assign(m_.kernels.begin() + a, m_.kernels.begin() + b);
    const std::vector<int> slot = wgsl::StageSlots(probe);
    const int64_t slots = 1 + *std::max_element(slot.begin(), slot.end());
    if (slots * tile * 4 > kWorkgroupBytes) {
      // A smaller tile holds the slots; the run may split where a partner falls outside it.
      int64_t smaller = tile;
      while (smaller >= kMinTile && slots * smaller * 4 > kWorkgroupBytes) smaller /= 2;
      if (smaller >= kMinTile) Form(a, b, smaller);
      return;
    }
    runs.push_back({a, b, tile});
  }

  const Module& m_;
  std::vector<bool> stageable_;
};

// Kernels [r.begin, r.end) of `m` as one kernel of stages.
Kernel Merge(const Module& m, const Run& r) {
  const webir::Graph& g = m.graph();
  Kernel merged;
  merged.kind = KernelKind::kTiledStages;
  merged.op = "tiled_stages";
  merged.stage_tile = r.tile;
  std::set<int> written;
  for (size_t j = r.begin; j < r.end; ++j) {
    Kernel stage = m.kernels[j];
    stage.sources.clear();
    stage.elementwise_schedule.reset();
    stage.workgroups = {1, 1, 1};
    for (int in : stage.inputs)
      if (!written.count(in) &&
          std::find(merged.inputs.begin(), merged.inputs.end(), in) == merged.inputs.end())
        merged.inputs.push_back(in);
    merged.nodes.insert(merged.nodes.end(), stage.nodes.begin(), stage.nodes.end());
    written.insert(stage.output);
    merged.stages.push_back(std::move(stage));
  }
  // A stage's value leaves the run when a kernel after it or the graph's outputs read it.
  std::set<int> read_after;
  for (size_t j = 0; j < m.kernels.size(); ++j)
    if (j < r.begin || j >= r.end)
      for (int in : m.kernels[j].inputs) read_after.insert(in);
  for (const webir::Output& o : g.outputs) read_after.insert(o.node);
  for (const Kernel& st : merged.stages) {
    if (!read_after.count(st.output)) continue;
    if (merged.output < 0)
      merged.output = st.output;
    else
      merged.extra_outputs.push_back(st.output);
  }
  const std::vector<int> slot = wgsl::StageSlots(merged);
  merged.stage_workgroup_bytes = (1 + *std::max_element(slot.begin(), slot.end())) * r.tile * 4;
  wgsl::Generated gen = wgsl::TiledStages(m, merged);
  EmittedSource& src = merged.Wgsl();
  src.source = std::move(gen.source);
  src.source_hash = Sha256Hex(src.source);
  merged.workgroups = gen.workgroups;
  return merged;
}

}  // namespace

Status BlockButterflyStages(Module& m) {
  // A repeated graph's carries would need the run's values at the loop's end: not handled.
  if (m.graph().repeat > 1 || m.kernels.size() < 2) return Status::Ok();
  const int64_t max_tile = m.stage_tile_override.value_or(kMaxTile);
  Blocker b(m);
  b.Form(0, m.kernels.size(), max_tile);
  if (b.runs.empty()) return Status::Ok();
  std::sort(b.runs.begin(), b.runs.end(),
            [](const Run& x, const Run& y) { return x.begin < y.begin; });
  // A run that would bind more buffers than WebGPU's guaranteed 8 per stage stays unblocked.
  std::vector<Kernel> merged;
  std::vector<Run> runs;
  for (const Run& r : b.runs) {
    Kernel k = Merge(m, r);
    if (k.inputs.size() + k.Outputs().size() > kMaxBindings) continue;
    merged.push_back(std::move(k));
    runs.push_back(r);
  }
  std::vector<Kernel> kernels;
  size_t next = 0;
  for (size_t j = 0; j < runs.size(); ++j) {
    for (; next < runs[j].begin; ++next) kernels.push_back(std::move(m.kernels[next]));
    kernels.push_back(std::move(merged[j]));
    next = runs[j].end;
  }
  for (; next < m.kernels.size(); ++next) kernels.push_back(std::move(m.kernels[next]));
  m.kernels = std::move(kernels);
  NameKernels(m);
  return Status::Ok();
}

}  // namespace scellis::kernel
