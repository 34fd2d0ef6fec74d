// schedule-sum: an f32 sum or mean in the prod and fast tiers runs wide (SumSchedule): a grid of
// chunks sized from the element count, each workgroup loading its chunk as vec4, then a second
// dispatch over the chunks' partial sums. The debug tier keeps the one-workgroup 256-lane tree
// (and along an axis one invocation per output), the CPU reference's order to the bit; prod asks
// only for a fixed order within the op's tolerance class, and this one fills a large GPU where
// the 256 lanes' chains of dependent additions, or a few invocations each walking a long axis,
// leave it nearly idle. A sum along an axis runs wide row by row when each output's line is
// contiguous (nothing after the axis) and long (kWideAxisMinLength), and column by column when
// there are elements after the axis, few outputs (kMaxWideColumnOutputs) and a long axis
// (kWideColumnMinLength). A sum whose input is over
// the binding cap is left alone: its tiles keep the 256 lanes' order (kernel/tiling.h).
#include "kernel/passes/passes.h"

namespace scellis::kernel {

std::optional<SumSchedule> ChooseSumSchedule(const Module& m, const Kernel& k) {
  if (m.header().tier == policy::Tier::kDebug) return std::nullopt;
  if (k.kind != KernelKind::kOp || (k.op != "sum" && k.op != "mean")) return std::nullopt;
  if (k.inputs.size() != 1 || !k.extra_outputs.empty() || !k.literals.empty()) return std::nullopt;
  const webir::Node& node = m.graph().at(k.output);
  const TensorType& in = m.graph().at(k.inputs[0]).type;
  if (node.type.dtype != DType::kF32 || in.dtype != DType::kF32 || in.elements() == 0)
    return std::nullopt;
  if (m.binding_cap != 0 && static_cast<uint64_t>(in.bytes()) > m.binding_cap) return std::nullopt;
  const int64_t chunk = m.sum_chunk_override.value_or(0);
  if (node.attrs["axis"].is_null()) return SumSchedule::For(in.elements(), 1, chunk);
  const std::vector<int64_t> sizes = in.sizes();
  const int axis = node.attrs["axis"].get<int>();
  int64_t inner = 1;
  for (size_t i = axis + 1; i < sizes.size(); ++i) inner *= sizes[i];
  const int64_t len = sizes[axis], rows = in.elements() / len;
  const int64_t outer = rows / std::max<int64_t>(inner, 1);
  if (inner > 1) {
    // Columns: where there are too few outputs for one invocation per output to fill a GPU.
    if (len < kWideColumnMinLength || outer * inner > kMaxWideColumnOutputs) return std::nullopt;
    return SumSchedule::ForColumns(len, outer, inner);
  }
  // One workgroup per row finishes, and the first dispatch's grid is chunks x rows: both within
  // one grid dimension's limit.
  if (len < kWideAxisMinLength || rows > kMaxWideRows) return std::nullopt;
  return SumSchedule::For(len, rows, chunk);
}

bool SumRunsWide(const Module& m, const Kernel& k) {
  return ChooseSumSchedule(m, k).has_value();
}

Status ScheduleSum(Module& m) {
  for (Kernel& k : m.kernels) k.sum_schedule = ChooseSumSchedule(m, k);
  return Status::Ok();
}

}  // namespace scellis::kernel
