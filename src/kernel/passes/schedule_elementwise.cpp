// schedule-elementwise: how each fused elementwise kernel covers its output, chosen from its
// inputs' layout alone, so the plan says which kernel runs (and prints it) and the emitter only
// follows it. A wide kernel moves four elements per load and store (16 bytes, the width at which a
// GPU's memory system moves data at its rate) and several of those per invocation, over a grid
// sized to the work; a kernel it cannot take stays one element per invocation.
#include "kernel/passes/passes.h"

namespace scellis::kernel {

namespace {

// Storage of 32-bit elements: f32, i32, u32 and bool (a u32 of 0 or 1); f16 is packed two to a
// word and stays scalar.
bool HasWordElements(DType t) {
  return t == DType::kF32 || t == DType::kI32 || t == DType::kU32 || t == DType::kBool;
}

}  // namespace

bool ElementwiseVectorisable(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kElementwise) return false;
  const TensorType& out = m.graph().at(k.output).type;
  if (!HasWordElements(out.dtype) || out.elements() == 0 || out.elements() % 4 != 0) return false;
  // A wide kernel evaluates its expression on loaded values alone; an indexed step needs each
  // element's index, which only the one-element kernel computes.
  for (const ExprStep& step : k.expr)
    if (IsIndexedStep(step.op)) return false;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    if (!HasWordElements(m.graph().at(k.inputs[i]).type.dtype)) return false;
    // A vector of four consecutive outputs reads one element broadcast to all four, or four
    // consecutive elements that no period boundary splits.
    const std::optional<int64_t> period = ReadPeriod(m, k, static_cast<int>(i));
    if (!period || (*period != 1 && *period % 4 != 0)) return false;
  }
  return true;
}

ElementwiseSchedule ChooseElementwiseSchedule(const Module& m, const Kernel& k) {
  ElementwiseSchedule s;
  if (!ElementwiseVectorisable(m, k)) return s;
  s.width = 4;
  s.workgroup_size = 256;
  s.per_invocation = 4;
  if (const auto& forced = m.elementwise_schedule_override) {
    s.workgroup_size = forced->workgroup_size;
    s.per_invocation = forced->per_invocation;
  }
  return s;
}

Status ScheduleElementwise(Module& m) {
  for (Kernel& k : m.kernels)
    if (k.kind == KernelKind::kElementwise)
      k.elementwise_schedule = ChooseElementwiseSchedule(m, k);
  return Status::Ok();
}

}  // namespace scellis::kernel
