#include <algorithm>

#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

// Whether `k` is a column sum: a plain f32 `sum` over axis 0 of a rank-2 value.
bool IsColumnSum(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kOp || k.op != "sum" || !k.extra_outputs.empty() ||
      k.inputs.size() != 1)
    return false;
  const webir::Node& n = m.graph().at(k.output);
  const TensorType& in = m.graph().at(k.inputs[0]).type;
  const Json& axis = n.attrs["axis"];
  return axis.is_number_integer() && axis.get<int>() == 0 && in.rank() == 2 &&
         in.dtype == DType::kF32 && n.type.dtype == DType::kF32;
}

// Kernels whose emitter can add the column sums of their last output after writing it: the loss
// kernel that writes the loss's gradient (merge-loss-gradient), all in one workgroup.
bool SumsColumnsOfLastOutput(const Kernel& k) {
  return k.kind == KernelKind::kOp && k.op == "cross_entropy" && k.extra_outputs.size() == 1;
}

}  // namespace

Status MergeBiasGradient(Module& m) {
  std::vector<bool> removed(m.kernels.size(), false);
  for (size_t s = 0; s < m.kernels.size(); ++s) {
    if (!IsColumnSum(m, m.kernels[s])) continue;
    const int value = m.kernels[s].inputs[0];
    for (size_t p = 0; p < s; ++p) {
      Kernel& producer = m.kernels[p];
      if (removed[p] || producer.Outputs().back() != value || !SumsColumnsOfLastOutput(producer) ||
          producer.hoisted != m.kernels[s].hoisted)
        continue;
      // The sum reads only `value`, written by then: its result is ready earlier than before,
      // and nothing between reads it.
      producer.extra_outputs.push_back(m.kernels[s].output);
      producer.nodes.push_back(m.kernels[s].output);
      removed[s] = true;
      break;
    }
  }
  std::vector<Kernel> kernels;
  for (size_t i = 0; i < m.kernels.size(); ++i)
    if (!removed[i]) kernels.push_back(std::move(m.kernels[i]));
  m.kernels = std::move(kernels);
  NameKernels(m);
  return Status::Ok();
}

}  // namespace scellis::kernel
