#include <algorithm>
#include <set>

#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

// Products a lane of the one workgroup adds at most (M·N·K / 256): the logits of a 256-wide hidden
// layer into 10 classes at batch 64 take 640, the gradient back through them as many. Each lane's
// additions are a dependent chain, so a product much larger than this is faster as a dispatch of
// its own, whose many workgroups share the chains (the 784-wide first layer takes 50 176).
constexpr int64_t kMaxLaneProducts = 2048;

bool F32(const Module& m, int node) {
  return m.graph().at(node).type.dtype == DType::kF32;
}

bool OverCap(const Module& m, const std::vector<int>& nodes) {
  if (m.binding_cap == 0) return false;
  for (int n : nodes)
    if (static_cast<uint64_t>(m.graph().at(n).type.bytes()) > m.binding_cap) return true;
  return false;
}

// The loss merged with its gradient (merge-loss-gradient): one workgroup already.
bool IsMergedLoss(const Kernel& k) {
  return k.kind == KernelKind::kOp && k.op == "cross_entropy" && !k.extra_outputs.empty() &&
         !k.HasEpilogue() && k.in_place.empty() && k.uniform_inputs.empty();
}

// A plain rank-2 f32 product (an epilogue allowed) small enough for one workgroup: each of its 256
// lanes adds at most kMaxLaneProducts products.
bool SmallProduct(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kOp || k.op != "matmul" || k.UpdatesParameters() ||
      !k.extra_outputs.empty() || !k.literals.empty() || !k.in_place.empty() ||
      m.graph().at(k.output).type.rank() != 2)
    return false;
  for (int in : k.inputs)
    if (!F32(m, in)) return false;
  if (!F32(m, k.output) || !F32(m, k.OpNode())) return false;
  const MatmulShape s = MatmulShapeOf(m, k);
  return s.batches == 1 && s.m * s.n * s.k <= kWorkgroupLanes * kMaxLaneProducts;
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

// The stages as one kernel: every value a stage reads that no earlier stage wrote is an input (in
// order of first use), every stage's outputs are its outputs, the stages' literals its literals.
Kernel Combine(const std::vector<Kernel>& stages) {
  Kernel c;
  c.kind = KernelKind::kWorkgroupStages;
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
  return c;
}

// The kernel of stages around the loss at `loss`, if it takes in at least one product; the
// kernels it took in are flagged in `taken`.
std::optional<Kernel> AroundLoss(const Module& m, size_t loss, std::vector<bool>& taken) {
  const Kernel& l = m.kernels[loss];
  std::vector<Kernel> stages = {l};
  std::vector<size_t> used;
  std::vector<int> bound = l.inputs;
  for (int o : l.Outputs()) bound.push_back(o);
  // Before it: the product that computes its logits.
  for (size_t p = 0; p < loss; ++p) {
    const Kernel& k = m.kernels[p];
    if (taken[p] || k.output != l.inputs[0] || k.hoisted != l.hoisted || !SmallProduct(m, k) ||
        !MovesPast(m, k, p, loss))
      continue;
    std::vector<Kernel> with = stages;
    with.insert(with.begin(), k);
    if (Combine(with).StorageBindings() > kMaxStorageBindings) continue;
    stages = std::move(with);
    used.push_back(p);
    bound.insert(bound.end(), k.inputs.begin(), k.inputs.end());
  }
  // After it: products that read its gradient, each moved up to it.
  const int gradient = l.extra_outputs.front();
  for (size_t s = loss + 1; s < m.kernels.size(); ++s) {
    const Kernel& k = m.kernels[s];
    if (taken[s] || std::find(k.inputs.begin(), k.inputs.end(), gradient) == k.inputs.end() ||
        k.hoisted != l.hoisted || !SmallProduct(m, k) || !MovesPast(m, k, s, loss))
      continue;
    std::vector<Kernel> with = stages;
    with.push_back(k);
    if (Combine(with).StorageBindings() > kMaxStorageBindings) continue;
    stages = std::move(with);
    used.push_back(s);
    bound.insert(bound.end(), k.inputs.begin(), k.inputs.end());
    bound.push_back(k.output);
  }
  if (used.empty() || OverCap(m, bound)) return std::nullopt;
  for (size_t u : used) taken[u] = true;
  return Combine(stages);
}

}  // namespace

Status FuseProductsIntoLoss(Module& m) {
  std::vector<bool> taken(m.kernels.size(), false);
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    if (taken[i] || !IsMergedLoss(m.kernels[i])) continue;
    if (std::optional<Kernel> c = AroundLoss(m, i, taken)) m.kernels[i] = std::move(*c);
  }
  EraseKernels(m, taken);
  return Status::Ok();
}

}  // namespace scellis::kernel
