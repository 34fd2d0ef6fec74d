#include <algorithm>

#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

// An optimizer's update of one parameter is split by output: the new parameter, then each new
// moment, every op over the same arguments (param, grad, state..., t). The kernel of the first
// writes the others as its extra outputs, in this order.
struct Split {
  const char* primary;
  std::vector<const char*> others;
};
const Split kSplits[] = {
    {"adam_update", {"adam_m", "adam_v"}},
    {"momentum_update", {"momentum_velocity"}},
};

const Split* SplitOf(const Kernel& k) {
  if (k.kind != KernelKind::kOp || !k.extra_outputs.empty()) return nullptr;
  for (const Split& s : kSplits)
    if (k.op == s.primary) return &s;
  return nullptr;
}

}  // namespace

Status MergeOptimizerOutputs(Module& m) {
  const webir::Graph& g = m.graph();
  std::vector<bool> merged(m.kernels.size(), false);
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const Split* split = SplitOf(m.kernels[i]);
    if (!split || merged[i]) continue;
    const webir::Node& primary = g.at(m.kernels[i].output);
    // The partner of each other op: its kernel over the same arguments with the same settings.
    std::vector<size_t> partners;
    for (const char* op : split->others) {
      for (size_t j = 0; j < m.kernels.size(); ++j) {
        const Kernel& k = m.kernels[j];
        const webir::Node& n = g.at(k.output);
        if (j == i || merged[j] || k.kind != KernelKind::kOp || k.op != op ||
            !k.extra_outputs.empty() || k.inputs != m.kernels[i].inputs || n.args != primary.args ||
            n.attrs != primary.attrs || k.hoisted != m.kernels[i].hoisted)
          continue;
        partners.push_back(j);
        break;
      }
    }
    if (partners.size() != split->others.size()) continue;
    // The merged kernel takes the place of the first of them: each reads only the shared
    // arguments, so they are all written by then.
    size_t first = i;
    for (size_t j : partners) first = std::min(first, j);
    Kernel k = m.kernels[i];
    for (size_t j : partners) {
      k.extra_outputs.push_back(m.kernels[j].output);
      k.nodes.push_back(m.kernels[j].output);
      merged[j] = true;
    }
    merged[i] = true;
    m.kernels[first] = std::move(k);
    merged[first] = false;
  }
  EraseKernels(m, merged);
  return Status::Ok();
}

}  // namespace scellis::kernel
