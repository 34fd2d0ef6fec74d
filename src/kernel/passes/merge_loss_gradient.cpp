#include <algorithm>

#include "kernel/passes/passes.h"
#include "kernel/tiling.h"

namespace scellis::kernel {
namespace {

bool Plain(const Kernel& k, const char* op) {
  return k.kind == KernelKind::kOp && k.op == op && k.extra_outputs.empty() && !k.HasEpilogue();
}

// The merged kernel of the loss at kernel i and its gradient, if there is one to merge: true when
// it merged (and the module has one kernel less).
bool MergeOne(Module& m, size_t i) {
  const webir::Graph& g = m.graph();
  if (!Plain(m.kernels[i], "cross_entropy")) return false;
  const webir::Node& loss = g.at(m.kernels[i].output);
  for (size_t j = 0; j < m.kernels.size(); ++j) {
    const Kernel& grad = m.kernels[j];
    if (!Plain(grad, "cross_entropy_grad") || grad.hoisted != m.kernels[i].hoisted) continue;
    const webir::Node& gn = g.at(grad.output);
    if (gn.args.size() != 3 || gn.args[0] != loss.args[0] || gn.args[1] != loss.args[1] ||
        grad.inputs != gn.args)
      continue;
    // Over the cap, the merged kernel runs in tiles of whole rows (kernel::PlanTiles), so it
    // merges only where those tiles fit.
    std::vector<int> bound = grad.inputs;
    bound.push_back(grad.output);
    const bool over = m.OverBindingCap(bound);
    // The merged kernel runs where the later of the two ran, when everything both read is
    // written; nothing in between may read what the earlier one wrote.
    const size_t earlier = std::min(i, j), later = std::max(i, j);
    const int early_value = m.kernels[earlier].output;
    bool read_between = false;
    for (size_t b = earlier + 1; b < later; ++b)
      read_between = read_between || std::count(m.kernels[b].inputs.begin(),
                                                m.kernels[b].inputs.end(), early_value);
    if (read_between) continue;
    Kernel merged = m.kernels[i];
    merged.inputs = grad.inputs;  // the logits and targets both read, then the upstream gradient
    merged.extra_outputs = {grad.output};
    merged.nodes.push_back(grad.output);
    // Its tiles take multiples of 256 rows (the loss's tree lanes); the gradient alone takes any
    // number, so where 256 rows do not fit under the cap the two stay apart.
    if (over && !PlanTiles(m, merged, m.binding_cap)) continue;
    m.kernels[later] = std::move(merged);
    m.kernels.erase(m.kernels.begin() + static_cast<std::ptrdiff_t>(earlier));
    return true;
  }
  return false;
}

}  // namespace

Status MergeLossGradient(Module& m) {
  for (size_t i = 0; i < m.kernels.size(); ++i)
    if (MergeOne(m, i)) i = static_cast<size_t>(-1);  // start over: the kernels moved
  NameKernels(m);
  return Status::Ok();
}

}  // namespace scellis::kernel
