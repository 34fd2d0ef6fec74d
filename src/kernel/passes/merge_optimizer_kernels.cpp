#include <algorithm>

#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

// A kernel that may join others: one optimizer update per output (merge-optimizer-outputs'
// kernels), f32 throughout, nothing folded in.
bool Mergeable(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kOp || !IsOptimizerOp(m, k.op) || !k.literals.empty() ||
      !k.expr.empty())
    return false;
  for (int o : k.Outputs())
    if (!IsOptimizerOp(m, m.graph().at(o).op) || m.graph().at(o).type.dtype != DType::kF32)
      return false;
  for (int in : k.inputs)
    if (m.graph().at(in).type.dtype != DType::kF32) return false;
  return true;
}

// `a` followed by `b` as one kernel: b's inputs after a's (one binding for an input both read),
// b's outputs after a's, each still over the input it replaced. A single f32 element every part
// reads (the step) is bound as a uniform.
Kernel Joined(const Module& m, const Kernel& a, const Kernel& b) {
  Kernel k = a;
  const size_t a_outputs = a.Outputs().size();
  if (k.in_place.empty()) k.in_place.assign(a_outputs, -1);
  std::vector<int> position;  // of each of b's inputs in k's
  for (int in : b.inputs) {
    auto it = std::find(k.inputs.begin(), k.inputs.end(), in);
    if (it == k.inputs.end()) {
      k.inputs.push_back(in);
      it = k.inputs.end() - 1;
    }
    position.push_back(static_cast<int>(it - k.inputs.begin()));
  }
  const std::vector<int> b_outputs = b.Outputs();
  for (size_t j = 0; j < b_outputs.size(); ++j) {
    k.extra_outputs.push_back(b_outputs[j]);
    k.nodes.push_back(b_outputs[j]);
    k.in_place.push_back(b.InPlaceOf(j) >= 0 ? position[b.InPlaceOf(j)] : -1);
  }
  k.uniform_inputs.assign(k.inputs.size(), false);
  const std::vector<std::vector<size_t>> parts = OptimizerParts(m, k);
  const std::vector<int> outs = k.Outputs();
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const TensorType& t = m.graph().at(k.inputs[i]).type;
    bool every_part = t.elements() == 1;
    for (const std::vector<size_t>& part : parts) {
      const std::vector<int>& args = m.graph().at(outs[part.front()]).args;
      every_part &= std::find(args.begin(), args.end(), k.inputs[i]) != args.end();
    }
    k.uniform_inputs[i] = every_part && std::count(k.in_place.begin(), k.in_place.end(), i) == 0;
  }
  if (std::count(k.in_place.begin(), k.in_place.end(), -1) ==
      static_cast<std::ptrdiff_t>(k.in_place.size()))
    k.in_place.clear();
  return k;
}

}  // namespace

Status MergeOptimizerKernels(Module& m) {
  std::vector<Kernel> kernels;
  for (Kernel& k : m.kernels) {
    if (!kernels.empty()) {
      Kernel& last = kernels.back();
      if (Mergeable(m, last)) {
        bool reads_last = false;
        for (int o : last.Outputs())
          reads_last |= std::find(k.inputs.begin(), k.inputs.end(), o) != k.inputs.end();
        if (Mergeable(m, k) && k.op == last.op && k.hoisted == last.hoisted && !reads_last) {
          Kernel joined = Joined(m, last, k);
          if (joined.StorageBindings() <= kMaxStorageBindings && !BindsOverCap(m, joined)) {
            last = std::move(joined);
            continue;
          }
        }
      }
    }
    kernels.push_back(std::move(k));
  }
  m.kernels = std::move(kernels);
  NameKernels(m);
  return Status::Ok();
}

}  // namespace scellis::kernel
