#include <algorithm>
#include <set>

#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

// K steps an output element of a product stage adds at most. Each element is one lane's loop,
// which the driver's compiler does not unroll, so each step's loads wait on the step before. On an
// H200 the stage added 0.5, 1.0 and 1.7 us to the loss's dispatch at K = 10, 16 and 32 (the
// gradient back through w2 of 10, 16 and 32 classes), against 7.3-7.6 us for the product's own
// dispatch; longer K was not measured, so it keeps its tiled dispatch, whose workgroups stage K in
// workgroup memory.
constexpr int64_t kMaxStageK = 32;
// Workgroups one grid dimension holds (the row blocks and the loss's).
constexpr int64_t kMaxWorkgroups = 65535;

bool F32(const Module& m, int node) {
  return m.graph().at(node).type.dtype == DType::kF32;
}

// The loss merged with its gradient (merge-loss-gradient) and nothing else: its loss over rank-2
// logits and its gradient as their own op's kernels would compute them.
bool IsMergedLoss(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kOp || k.op != "cross_entropy" || k.extra_outputs.size() != 1 ||
      k.HasEpilogue() || !k.in_place.empty() || !k.uniform_inputs.empty() || k.inputs.size() < 2)
    return false;
  const webir::Node& loss = m.graph().at(k.output);
  const webir::Node& grad = m.graph().at(k.extra_outputs[0]);
  return loss.args == std::vector<int>{k.inputs[0], k.inputs[1]} && grad.args.size() == 3 &&
         grad.op == "cross_entropy_grad" && m.graph().at(k.inputs[0]).type.rank() == 2;
}

// The loss's two kernels as they were before merge-loss-gradient: the loss over (logits,
// labels); the gradient over those and its seed (an input, or the literal fold-constant-inputs
// made of it).
std::vector<Kernel> LossStages(const Kernel& merged) {
  Kernel loss;
  loss.kind = KernelKind::kOp;
  loss.op = "cross_entropy";
  loss.name = "s_cross_entropy";
  loss.hoisted = merged.hoisted;
  loss.inputs = {merged.inputs[0], merged.inputs[1]};
  loss.output = merged.output;
  loss.nodes = {merged.output};
  Kernel grad = loss;
  grad.op = "cross_entropy_grad";
  grad.name = "s_cross_entropy_grad";
  grad.inputs = merged.inputs;
  grad.literals = merged.literals;
  grad.output = merged.extra_outputs[0];
  grad.nodes = {grad.output};
  return {loss, grad};
}

// A plain rank-2 f32 product (an epilogue allowed) whose A is `gradient`, untransposed, so that
// its row r reads the gradient's row r alone, and whose K is short enough for one lane's chain.
bool RowProduct(const Module& m, const Kernel& k, int gradient) {
  if (k.kind != KernelKind::kOp || k.op != "matmul" || k.UpdatesParameters() ||
      !k.extra_outputs.empty() || !k.literals.empty() || !k.in_place.empty() || k.inputs.empty() ||
      k.inputs[0] != gradient || (!k.transposed.empty() && k.transposed[0]) ||
      m.graph().at(k.output).type.rank() != 2)
    return false;
  for (size_t i = 1; i < k.inputs.size(); ++i)
    if (!F32(m, k.inputs[i])) return false;
  if (!F32(m, k.output) || !F32(m, k.OpNode())) return false;
  const MatmulShape s = MatmulShapeOf(m, k);
  return s.batches == 1 && s.k <= kMaxStageK;
}

// Whether kernel `k` can move from position `from` to `to` (either direction) past the kernels in
// between: none of them writes what it reads, reads what it writes, or writes over anything.
bool MovesPast(const Module& m, const Kernel& k, size_t from, size_t to) {
  const std::set<int> reads(k.inputs.begin(), k.inputs.end());
  const std::vector<int> outs = k.Outputs();
  const std::set<int> writes(outs.begin(), outs.end());
  for (size_t b = std::min(from, to) + 1; b < std::max(from, to); ++b) {
    const Kernel& o = m.kernels[b];
    for (size_t j = 0; j < o.Outputs().size(); ++j)
      if (reads.count(o.Outputs()[j]) ||
          (o.InPlaceOf(j) >= 0 && reads.count(o.inputs[o.InPlaceOf(j)])))
        return false;
    for (int in : o.inputs)
      if (writes.count(in)) return false;
  }
  return true;
}

// Rows per block: enough that a block's widest product gives every lane an element, and that
// the blocks and the loss's workgroup fit in one grid dimension.
int64_t RowsPerBlock(const Module& m, const std::vector<Kernel>& stages, int64_t rows) {
  int64_t widest = 1;
  for (size_t s = 2; s < stages.size(); ++s)
    widest = std::max(widest, MatmulShapeOf(m, stages[s]).n);
  int64_t per = std::clamp<int64_t>(kWorkgroupLanes / widest, 1, kWorkgroupLanes);
  per = std::max(per, (rows + kMaxWorkgroups - 2) / (kMaxWorkgroups - 1));
  return per;
}

// The stages as one kernel: every value a stage reads that no earlier stage wrote is an input (in
// order of first use), every stage's outputs are its outputs, the stages' literals its literals.
Kernel Combine(const Module& m, const std::vector<Kernel>& stages) {
  Kernel c;
  c.kind = KernelKind::kRowStages;
  c.op = "stages";
  c.hoisted = stages.front().hoisted;
  std::set<int> written;
  std::vector<int> outs;
  for (const Kernel& st : stages) {
    for (int in : st.inputs)
      if (!written.count(in) && std::find(c.inputs.begin(), c.inputs.end(), in) == c.inputs.end())
        c.inputs.push_back(in);
    c.literals.insert(c.literals.end(), st.literals.begin(), st.literals.end());
    c.nodes.insert(c.nodes.end(), st.nodes.begin(), st.nodes.end());
    for (int o : st.Outputs()) {
      written.insert(o);
      outs.push_back(o);
    }
  }
  c.output = outs.front();
  c.extra_outputs.assign(outs.begin() + 1, outs.end());
  c.stages = stages;
  c.stage_tile = RowsPerBlock(m, stages, m.graph().at(stages.front().inputs[0]).type.dims[0].size);
  return c;
}

// The kernel of row stages of the merged loss at `loss`, if a product of its gradient joins it;
// the kernels it took in are flagged in `taken`.
std::optional<Kernel> WithGradientProducts(const Module& m, size_t loss, std::vector<bool>& taken) {
  const Kernel& l = m.kernels[loss];
  const int gradient = l.extra_outputs.front();
  const int64_t rows = m.graph().at(l.inputs[0]).type.dims[0].size;
  std::vector<Kernel> stages = LossStages(l);
  std::vector<size_t> used;
  for (size_t s = loss + 1; s < m.kernels.size(); ++s) {
    const Kernel& k = m.kernels[s];
    if (taken[s] || k.hoisted != l.hoisted || !RowProduct(m, k, gradient) ||
        MatmulShapeOf(m, k).m != rows || !MovesPast(m, k, s, loss))
      continue;
    // Beyond its A, a stage reads nothing the kernel writes: another workgroup may write it.
    bool reads_written = false;
    for (size_t i = 1; i < k.inputs.size(); ++i)
      for (const Kernel& st : stages)
        for (int o : st.Outputs()) reads_written = reads_written || o == k.inputs[i];
    if (reads_written) continue;
    std::vector<Kernel> with = stages;
    with.push_back(k);
    if (Combine(m, with).StorageBindings() > kMaxStorageBindings) continue;
    stages = std::move(with);
    used.push_back(s);
  }
  if (used.empty()) return std::nullopt;
  Kernel combined = Combine(m, stages);
  if (BindsOverCap(m, combined)) return std::nullopt;
  for (size_t u : used) taken[u] = true;
  return combined;
}

}  // namespace

Status FuseGradientProductIntoLoss(Module& m) {
  std::vector<bool> taken(m.kernels.size(), false);
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    if (taken[i] || !IsMergedLoss(m, m.kernels[i])) continue;
    if (std::optional<Kernel> c = WithGradientProducts(m, i, taken)) m.kernels[i] = std::move(*c);
  }
  EraseKernels(m, taken);
  return Status::Ok();
}

}  // namespace scellis::kernel
