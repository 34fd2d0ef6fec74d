#include <algorithm>
#include <vector>

#include "kernel/passes/passes.h"

namespace scellis::kernel {

Status HoistLoopInvariants(Module& m) {
  const webir::Graph& g = m.graph();
  for (Kernel& k : m.kernels) k.hoisted = false;
  if (g.repeat <= 1) return Status::Ok();
  // A value varies between iterations when it is a carried input or a kernel computes it from
  // one that varies. Kernels are in dependency order, so one walk settles every value.
  std::vector<bool> varies(g.nodes.size(), false);
  for (const webir::Carry& c : g.carries) varies[c.to] = true;
  // A carry's source must be rewritten every iteration: the executors swap its buffer with its
  // input's after each one.
  std::vector<bool> carried_out(g.nodes.size(), false);
  for (const webir::Carry& c : g.carries) carried_out[c.from] = true;
  for (Kernel& k : m.kernels) {
    const std::vector<int> outputs = k.Outputs();
    const bool variant = std::any_of(outputs.begin(), outputs.end(),
                                     [&](int o) { return static_cast<bool>(carried_out[o]); }) ||
                         std::any_of(k.inputs.begin(), k.inputs.end(),
                                     [&](int in) { return static_cast<bool>(varies[in]); });
    for (int o : outputs) varies[o] = variant;
    k.hoisted = !variant;
  }
  // Hoisted kernels read only sources and other hoisted kernels, so moving them ahead of the
  // body (keeping their order) keeps every kernel after what it reads.
  std::stable_partition(m.kernels.begin(), m.kernels.end(),
                        [](const Kernel& k) { return k.hoisted; });
  NameKernels(m);
  return Status::Ok();
}

}  // namespace scellis::kernel
