#include "execplan/passes/passes.h"

namespace scellis::execplan {

Status Liveness(Plan& p) {
  const webir::Graph& g = p.graph();
  p.lifetimes.assign(g.nodes.size(), Lifetime{});
  for (const webir::Node& n : g.nodes)
    if (n.role == webir::Role::kInput || n.role == webir::Role::kParam)
      p.lifetimes[n.id].stored = true;
  for (const Step& s : p.steps) {
    const kernel::Kernel& k = p.module().kernels[s.kernel];
    for (int in : k.inputs) {
      if (!p.lifetimes[in].stored)
        return InternalError("execplan.Liveness",
                             k.name + " reads %" + g.at(in).name + " before any step writes it");
      p.lifetimes[in].last_read = s.kernel;
    }
    for (int out : k.Outputs()) p.lifetimes[out] = {true, s.kernel, -1};
  }
  // A hoisted value is written once, before the loop, and read by the body in every iteration:
  // it lives until the last iteration's last step, so no body value may take its buffer.
  const int hoisted = p.module().HoistedKernels();
  const int last = static_cast<int>(p.steps.size()) - 1;
  for (int s = 0; s < hoisted; ++s) {
    for (int out : p.module().kernels[p.steps[s].kernel].Outputs()) {
      Lifetime& life = p.lifetimes[out];
      if (life.last_read >= hoisted) life.last_read = last;
    }
  }
  return Status::Ok();
}

}  // namespace scellis::execplan
