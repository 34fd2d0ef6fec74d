// schedule-sum: a whole-tensor f32 sum or mean in the prod and fast tiers runs wide (SumSchedule):
// a grid of chunks sized from the element count, each workgroup loading its chunk as vec4, then a
// second dispatch over the chunks' partial sums. The debug tier keeps the one-workgroup 256-lane
// tree, the CPU reference's order to the bit; prod asks only for a fixed order within the op's
// tolerance class, and this one fills a large GPU where the 256 lanes' chains of dependent
// additions leave it nearly idle. A sum whose input is over the binding cap is left alone: its
// tiles keep the 256 lanes' order (kernel/tiling.h).
#include "kernel/passes/passes.h"

namespace scellis::kernel {

bool SumRunsWide(const Module& m, const Kernel& k) {
  if (m.header().tier == policy::Tier::kDebug) return false;
  if (k.kind != KernelKind::kOp || (k.op != "sum" && k.op != "mean")) return false;
  if (k.inputs.size() != 1 || !k.extra_outputs.empty() || !k.literals.empty()) return false;
  const webir::Node& node = m.graph().at(k.output);
  if (!node.attrs["axis"].is_null() || node.type.dtype != DType::kF32) return false;
  const TensorType& in = m.graph().at(k.inputs[0]).type;
  if (in.dtype != DType::kF32 || in.elements() == 0) return false;
  return m.binding_cap == 0 || static_cast<uint64_t>(in.bytes()) <= m.binding_cap;
}

Status ScheduleSum(Module& m) {
  for (Kernel& k : m.kernels)
    if (SumRunsWide(m, k))
      k.sum_schedule = SumSchedule::For(m.graph().at(k.inputs[0]).type.elements());
  return Status::Ok();
}

}  // namespace scellis::kernel
