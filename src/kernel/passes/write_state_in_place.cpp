#include <algorithm>

#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

// The index in k.inputs of the value output `out` may be written over, or -1: the input the
// output is carried into after the step (a parameter, a moment), read once by k and by no kernel
// after it, no named output, of the output's type.
int ReplaceableInput(const Module& m, size_t at, int out, const std::vector<int>& taken) {
  const webir::Graph& g = m.graph();
  const Kernel& k = m.kernels[at];
  for (const webir::Carry& c : g.carries) {
    if (c.from != out) continue;
    const auto it = std::find(k.inputs.begin(), k.inputs.end(), c.to);
    if (it == k.inputs.end() || std::count(k.inputs.begin(), k.inputs.end(), c.to) != 1) continue;
    const int i = static_cast<int>(it - k.inputs.begin());
    if (std::count(taken.begin(), taken.end(), i)) continue;
    const TensorType &from = g.at(out).type, &to = g.at(c.to).type;
    if (!from.SameShape(to) || from.dtype != to.dtype) continue;
    if (std::count_if(g.carries.begin(), g.carries.end(),
                      [&](const webir::Carry& d) { return d.to == c.to; }) != 1)
      continue;
    bool read_later = false;
    for (size_t j = at + 1; j < m.kernels.size() && !read_later; ++j) {
      const std::vector<int>& ins = m.kernels[j].inputs;
      read_later = std::find(ins.begin(), ins.end(), c.to) != ins.end();
    }
    bool named = false;
    for (const webir::Output& o : g.outputs) named |= o.node == c.to;
    if (!read_later && !named) return i;
  }
  return -1;
}

}  // namespace

Status WriteStateInPlace(Module& m) {
  for (size_t at = 0; at < m.kernels.size(); ++at) {
    Kernel& k = m.kernels[at];
    if (k.kind != KernelKind::kOp || !IsOptimizerOp(m, k.op) || k.hoisted || !k.in_place.empty())
      continue;
    // Every output of the kernel is an optimizer op too (merge-optimizer-outputs' extra outputs).
    const std::vector<int> outs = k.Outputs();
    bool all_optimizer = true;
    for (int o : outs) all_optimizer &= IsOptimizerOp(m, m.graph().at(o).op);
    if (!all_optimizer) continue;
    std::vector<int> in_place;
    bool any = false;
    for (int o : outs) {
      in_place.push_back(ReplaceableInput(m, at, o, in_place));
      any |= in_place.back() >= 0;
    }
    if (any) k.in_place = std::move(in_place);
  }
  return Status::Ok();
}

}  // namespace scellis::kernel
