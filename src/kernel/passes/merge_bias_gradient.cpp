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

// The loss kernel that writes the loss's gradient (merge-loss-gradient) can add the column sums
// of that gradient, its last output, after writing it: all its rows are in its one workgroup.
bool LossKernelWriting(const Kernel& k, int value) {
  return k.kind == KernelKind::kOp && k.op == "cross_entropy" && k.extra_outputs.size() == 1 &&
         k.extra_outputs[0] == value;
}

// The most elements a matmul's first workgroup sums beside its share of the product: 1024 loads
// per lane of 256, a few microseconds on a large GPU, less than the dispatch it saves. A larger
// B keeps its own sum kernel, one invocation per column.
constexpr int64_t kMaxColumnSumElements = int64_t{1} << 18;

// A plain rank-2 matmul reading `value` as its B operand, untransposed, can add B's column sums
// beside the product (wgsl linalg: ColumnSumsOfB); not a tiled one (over the binding cap).
bool MatmulReadingB(const Module& m, const Kernel& k, int value) {
  if (k.kind != KernelKind::kOp || k.op != "matmul" || k.HasEpilogue() ||
      !k.extra_outputs.empty() || !k.literals.empty() || k.inputs.size() != 2 ||
      k.inputs[1] != value || (k.transposed.size() > 1 && k.transposed[1]))
    return false;
  const TensorType& out = m.graph().at(k.output).type;
  if (out.rank() != 2 || out.dtype != DType::kF32 ||
      m.graph().at(k.inputs[0]).type.dtype != DType::kF32 ||
      m.graph().at(value).type.elements() > kMaxColumnSumElements)
    return false;
  return !m.OverBindingCap({k.output, k.inputs[0], k.inputs[1]});
}

// The kernel that takes column sum `s` as its next output, or -1: a matmul that reads the summed
// value as B with nothing in between reading the sum (the sum's result is then written where the
// matmul runs), else the loss kernel that writes it. The matmul comes first: it computes the
// weight's gradient beside the bias's, so one optimizer kernel can then take both inside it
// (fuse-optimizer-into-gradient).
int HostOf(const Module& m, const std::vector<bool>& removed, size_t s) {
  const Kernel& sum = m.kernels[s];
  const int value = sum.inputs[0];
  for (size_t p = 0; p < m.kernels.size(); ++p) {
    if (removed[p] || !MatmulReadingB(m, m.kernels[p], value) ||
        m.kernels[p].hoisted != sum.hoisted)
      continue;
    bool read_between = false;
    for (size_t b = s + 1; b < p; ++b)
      read_between = read_between ||
                     std::count(m.kernels[b].inputs.begin(), m.kernels[b].inputs.end(), sum.output);
    if (!read_between) return static_cast<int>(p);
  }
  for (size_t p = 0; p < s; ++p)
    if (!removed[p] && LossKernelWriting(m.kernels[p], value) &&
        m.kernels[p].hoisted == sum.hoisted)
      return static_cast<int>(p);
  return -1;
}

}  // namespace

Status MergeBiasGradient(Module& m) {
  std::vector<bool> removed(m.kernels.size(), false);
  for (size_t s = 0; s < m.kernels.size(); ++s) {
    if (!IsColumnSum(m, m.kernels[s]) || m.OverBindingCap({m.kernels[s].inputs[0]})) continue;
    const int host = HostOf(m, removed, s);
    if (host < 0) continue;
    m.kernels[host].extra_outputs.push_back(m.kernels[s].output);
    m.kernels[host].nodes.push_back(m.kernels[s].output);
    removed[s] = true;
  }
  EraseKernels(m, removed);
  return Status::Ok();
}

}  // namespace scellis::kernel
