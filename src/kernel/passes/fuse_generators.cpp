#include <algorithm>
#include <set>

#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

// Whether uniform kernel `u` can be recomputed inside `reader`: the reader is a fused elementwise
// kernel of the uniform's shape (so its element index is the uniform's), not a matmul epilogue,
// and it reads the uniform only at the element's own index (never shifted or through a partner).
bool InlinableInto(const Module& m, const Kernel& u, const Kernel& reader) {
  if (reader.kind != KernelKind::kElementwise || reader.HasEpilogue()) return false;
  const auto at = std::find(reader.inputs.begin(), reader.inputs.end(), u.output);
  if (at == reader.inputs.end()) return false;
  if (!m.graph().at(reader.output).type.SameShape(m.graph().at(u.output).type)) return false;
  return !ReadsShifted(reader, static_cast<int>(at - reader.inputs.begin()));
}

// `reader` with uniform kernel `u`'s value computed as its first step instead of read: the
// uniform's step value becomes an input (if it is not one already) and every later step's
// reference moves down by one.
void Inline(const Kernel& u, Kernel& reader) {
  const int from = static_cast<int>(
      std::find(reader.inputs.begin(), reader.inputs.end(), u.output) - reader.inputs.begin());
  for (ExprStep& e : reader.expr)
    for (int& o : e.operands) o = IsStepRef(o) ? StepRef(StepOf(o) + 1) : o;
  reader.inputs.erase(reader.inputs.begin() + from);
  for (ExprStep& e : reader.expr)
    for (int& o : e.operands)
      if (!IsStepRef(o)) o = o == from ? StepRef(0) : o > from ? o - 1 : o;
  const int step_node = u.inputs.at(0);
  auto at = std::find(reader.inputs.begin(), reader.inputs.end(), step_node);
  if (at == reader.inputs.end()) at = reader.inputs.insert(reader.inputs.end(), step_node);
  ExprStep s;
  s.op = "uniform";
  s.node = u.output;
  s.operands = {static_cast<int>(at - reader.inputs.begin())};
  reader.expr.insert(reader.expr.begin(), std::move(s));
  reader.nodes.insert(reader.nodes.begin(), u.output);
}

}  // namespace

Status FuseGenerators(Module& m) {
  const webir::Graph& g = m.graph();
  std::set<int> outputs;
  for (const webir::Output& o : g.outputs) outputs.insert(o.node);
  std::vector<bool> inlined(m.kernels.size(), false);
  for (size_t ui = 0; ui < m.kernels.size(); ++ui) {
    const Kernel& u = m.kernels[ui];
    if (u.kind != KernelKind::kOp || u.op != "uniform" || outputs.count(u.output) ||
        u.inputs.size() != 1 || g.at(u.inputs[0]).type.elements() != 1 ||
        g.at(u.inputs[0]).type.dtype != DType::kF32)
      continue;
    std::vector<size_t> readers;
    bool all = true;
    for (size_t r = 0; r < m.kernels.size() && all; ++r) {
      const Kernel& k = m.kernels[r];
      if (r == ui || std::find(k.inputs.begin(), k.inputs.end(), u.output) == k.inputs.end())
        continue;
      if (InlinableInto(m, u, k))
        readers.push_back(r);
      else
        all = false;
    }
    // A uniform some kernel must read from a buffer keeps its kernel; one nobody reads is left to
    // the rest of the pipeline.
    if (!all || readers.empty()) continue;
    for (size_t r : readers) Inline(u, m.kernels[r]);
    inlined[ui] = true;
  }
  std::vector<Kernel> kept;
  for (size_t i = 0; i < m.kernels.size(); ++i)
    if (!inlined[i]) kept.push_back(std::move(m.kernels[i]));
  m.kernels = std::move(kept);
  NameKernels(m);
  return Status::Ok();
}

}  // namespace scellis::kernel
