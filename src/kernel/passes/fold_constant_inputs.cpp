#include <algorithm>
#include <cmath>
#include <set>

#include "kernel/passes/passes.h"
#include "ops/op_table.h"

namespace scellis::kernel {
namespace {

// The value of kernel `k` when it is a constant an op may take as a literal: a kernel of one
// `full` step reading nothing, of one finite f32 element.
std::optional<double> ConstantValue(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kElementwise || !k.inputs.empty() || k.expr.size() != 1 ||
      k.expr[0].op != "full" || !k.extra_outputs.empty())
    return std::nullopt;
  const TensorType& t = m.graph().at(k.output).type;
  if (t.dtype != DType::kF32 || t.elements() != 1 || !std::isfinite(k.expr[0].value))
    return std::nullopt;
  return k.expr[0].value;
}

// Ops whose kernels read a trailing single-element argument at index 0 through the shared
// bindings (wgsl::Bindings), so that a literal can stand where its buffer was: the losses, whose
// last argument is the upstream gradient (the autodiff seed, a constant 1).
bool TakesLiterals(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kOp || k.HasEpilogue()) return false;
  const ops::OpSpec* spec = m.graph().ops->Find(k.op);
  return spec && !spec->user && spec->kind == ops::OpKind::kLoss;
}

}  // namespace

Status FoldConstantInputs(Module& m) {
  const webir::Graph& g = m.graph();
  std::set<int> outputs;
  for (const webir::Output& o : g.outputs) outputs.insert(o.node);
  std::vector<std::optional<double>> constant(g.nodes.size());
  for (const Kernel& k : m.kernels)
    if (!outputs.count(k.output)) constant[k.output] = ConstantValue(m, k);
  for (Kernel& k : m.kernels) {
    if (!TakesLiterals(m, k)) continue;
    // Trailing inputs only: every other input keeps its binding and its name in<i>.
    while (!k.inputs.empty() && constant[k.inputs.back()] &&
           std::count(k.inputs.begin(), k.inputs.end(), k.inputs.back()) == 1 &&
           !(k.transposed.size() >= k.inputs.size() && k.transposed[k.inputs.size() - 1])) {
      k.literals.insert(k.literals.begin(), {k.inputs.back(), *constant[k.inputs.back()]});
      k.inputs.pop_back();
    }
  }
  // A constant no kernel reads any more is computed by none.
  std::set<int> read;
  for (const Kernel& k : m.kernels) read.insert(k.inputs.begin(), k.inputs.end());
  std::vector<Kernel> kept;
  for (Kernel& k : m.kernels)
    if (!constant[k.output] || read.count(k.output)) kept.push_back(std::move(k));
  m.kernels = std::move(kept);
  NameKernels(m);
  return Status::Ok();
}

}  // namespace scellis::kernel
