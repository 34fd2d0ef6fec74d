#include <algorithm>
#include <set>

#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

bool F32(const Module& m, int node) {
  return m.graph().at(node).type.dtype == DType::kF32;
}

// An optimizer kernel that can run inside the matmul computing its gradients: every output
// written over its input (so the fused kernel stores nothing of its own), f32 throughout.
bool UpdatesInPlace(const Module& m, const Kernel& u) {
  if (u.kind != KernelKind::kOp || !IsOptimizerOp(m, u.op) || u.hoisted || !u.literals.empty() ||
      !u.expr.empty() || u.in_place.size() != u.Outputs().size())
    return false;
  for (size_t j = 0; j < u.in_place.size(); ++j)
    if (u.InPlaceOf(j) < 0 || !IsOptimizerOp(m, m.graph().at(u.Outputs()[j]).op)) return false;
  return std::all_of(u.inputs.begin(), u.inputs.end(), [&](int in) { return F32(m, in); });
}

// Each parameter's gradient (its update's second argument), in part order.
std::vector<int> GradientsOf(const Module& m, const Kernel& u) {
  std::vector<int> gradients;
  const std::vector<int> outs = u.Outputs();
  for (const std::vector<size_t>& part : OptimizerParts(m, u))
    gradients.push_back(m.graph().at(outs[part.front()]).args.at(1));
  return gradients;
}

// A plain rank-2 f32 matmul whose outputs — its product, and the column sums of B it may add — are
// exactly `gradients`.
bool ComputesExactly(const Module& m, const Kernel& p, const std::vector<int>& gradients) {
  if (p.kind != KernelKind::kOp || p.op != "matmul" || p.HasEpilogue() || p.UpdatesParameters() ||
      p.hoisted || !p.literals.empty() || p.inputs.size() != 2 || !F32(m, p.inputs[0]) ||
      !F32(m, p.inputs[1]) || m.graph().at(p.output).type.rank() != 2)
    return false;
  const std::vector<int> outs = p.Outputs();
  for (int o : outs)
    if (!F32(m, o)) return false;
  return std::set<int>(outs.begin(), outs.end()) ==
             std::set<int>(gradients.begin(), gradients.end()) &&
         outs.size() == gradients.size();
}

// The matmul kernel `p` computing the gradients of optimizer kernel `u`, as one kernel: the
// matmul's inputs, then the update's but the gradients; the update's outputs, each over its input.
Kernel Fuse(const Module& m, const Kernel& p, const Kernel& u) {
  Kernel f = p;
  f.update_product = p.output;
  f.update_column_sums = p.extra_outputs.empty() ? -1 : p.extra_outputs[0];
  const std::vector<int> gradients = GradientsOf(m, u);
  std::vector<int> position(u.inputs.size(), -1);
  for (size_t i = 0; i < u.inputs.size(); ++i) {
    if (std::count(gradients.begin(), gradients.end(), u.inputs[i])) continue;
    auto it = std::find(f.inputs.begin(), f.inputs.end(), u.inputs[i]);
    if (it == f.inputs.end()) it = f.inputs.insert(f.inputs.end(), u.inputs[i]);
    position[i] = static_cast<int>(it - f.inputs.begin());
  }
  f.transposed.resize(f.inputs.size(), false);
  f.output = u.output;
  f.extra_outputs = u.extra_outputs;
  f.in_place.clear();
  for (size_t j = 0; j < u.in_place.size(); ++j) f.in_place.push_back(position[u.in_place[j]]);
  f.uniform_inputs.assign(f.inputs.size(), false);
  for (size_t i = 0; i < u.inputs.size(); ++i)
    if (u.UniformInput(i)) f.uniform_inputs[position[i]] = true;
  f.nodes.insert(f.nodes.end(), u.nodes.begin(), u.nodes.end());
  return f;
}

}  // namespace

Status FuseOptimizerIntoGradient(Module& m) {
  const webir::Graph& g = m.graph();
  std::set<int> named;
  for (const webir::Output& o : g.outputs) named.insert(o.node);
  std::vector<int> readers(g.nodes.size(), 0), producer(g.nodes.size(), -1);
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const Kernel& k = m.kernels[i];
    for (int in : std::set<int>(k.inputs.begin(), k.inputs.end())) ++readers[in];
    for (int o : k.Outputs()) producer[o] = static_cast<int>(i);
  }
  std::vector<bool> removed(m.kernels.size(), false);
  for (size_t j = 0; j < m.kernels.size(); ++j) {
    const Kernel& u = m.kernels[j];
    if (!UpdatesInPlace(m, u)) continue;
    const std::vector<int> gradients = GradientsOf(m, u);
    const int p = producer[gradients.front()];
    if (p < 0 || removed[p] || !ComputesExactly(m, m.kernels[p], gradients)) continue;
    const Kernel& mm = m.kernels[p];
    // The gradients get no buffer: the update must be their only reader.
    bool private_gradients = true;
    for (int x : gradients) private_gradients &= readers[x] == 1 && !named.count(x);
    if (!private_gradients) continue;
    // The fused kernel runs where the update ran, so the matmul's operands must hold the same
    // values there: no kernel in between, and no output of the update itself (its workgroups
    // would race with the matmul's loads), writes over them.
    std::set<int> overwritten;
    for (size_t b = p + 1; b <= j; ++b)
      for (size_t o = 0; o < m.kernels[b].Outputs().size(); ++o)
        if (m.kernels[b].InPlaceOf(o) >= 0)
          overwritten.insert(m.kernels[b].inputs[m.kernels[b].InPlaceOf(o)]);
    if (overwritten.count(mm.inputs[0]) || overwritten.count(mm.inputs[1])) continue;
    std::vector<int> bound = mm.inputs;
    bound.insert(bound.end(), u.inputs.begin(), u.inputs.end());
    bound.push_back(mm.output);
    if (m.OverBindingCap(bound)) continue;  // a matmul in tiles takes no update
    Kernel fused = Fuse(m, mm, u);
    if (fused.StorageBindings() > kMaxStorageBindings) continue;
    m.kernels[j] = std::move(fused);
    removed[p] = true;
  }
  EraseKernels(m, removed);
  return Status::Ok();
}

}  // namespace scellis::kernel
