#include <set>

#include "kernel/passes/passes.h"

namespace scellis::kernel {

Status FoldTransposes(Module& m) {
  const webir::Graph& g = m.graph();
  std::set<int> outputs;
  for (const webir::Output& o : g.outputs) outputs.insert(o.node);
  std::vector<std::vector<int>> readers(g.nodes.size());  // kernel indices, per value
  for (size_t i = 0; i < m.kernels.size(); ++i)
    for (int in : m.kernels[i].inputs)
      if (readers[in].empty() || readers[in].back() != static_cast<int>(i))
        readers[in].push_back(static_cast<int>(i));

  // Decided before anything changes: a transpose read by a folded transpose is not folded as well.
  std::vector<bool> folds(m.kernels.size(), false);
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const Kernel& t = m.kernels[i];
    if (t.kind != KernelKind::kOp || t.op != "transpose" || outputs.count(t.output) ||
        readers[t.output].empty())
      continue;
    bool only_matmuls = true;
    for (int r : readers[t.output]) {
      const Kernel& reader = m.kernels[r];
      only_matmuls &= reader.kind == KernelKind::kOp && reader.op == "matmul" &&
                      g.at(reader.output).type.rank() == 2;
    }
    folds[i] = only_matmuls;
  }

  for (size_t i = 0; i < m.kernels.size(); ++i) {
    if (!folds[i]) continue;
    const Kernel& t = m.kernels[i];
    for (int r : readers[t.output]) {
      Kernel& matmul = m.kernels[r];
      matmul.transposed.resize(matmul.inputs.size(), false);
      for (size_t a = 0; a < matmul.inputs.size(); ++a) {
        if (matmul.inputs[a] != t.output) continue;
        matmul.inputs[a] = t.inputs[0];
        matmul.transposed[a] = true;
      }
    }
  }
  EraseKernels(m, folds);
  return Status::Ok();
}

}  // namespace scellis::kernel
