#include <algorithm>
#include <set>

#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

// A gather of whole rows: index_select along axis 0 by a rank-1 index, its own kernel, no output
// of the graph, over 32-bit elements.
bool IsRowGather(const Module& m, const Kernel& k, const std::set<int>& outputs) {
  if (k.kind != KernelKind::kOp || k.op != "index_select" || k.inputs.size() != 2 ||
      !k.extra_outputs.empty() || !k.literals.empty() || outputs.count(k.output))
    return false;
  const webir::Node& n = m.graph().at(k.output);
  const webir::Node& table = m.graph().at(k.inputs[0]);
  return n.attrs["axis"].is_number_integer() && n.attrs["axis"].get<int>() == 0 &&
         m.graph().at(k.inputs[1]).type.rank() == 1 && table.type.rank() >= 1 &&
         DTypeBytes(table.type.dtype) == 4 && !m.OverBindingCap({k.inputs[0]});
}

// The readers whose emitters read every input as `in<i>[element]` and nothing else (the emitted
// source is checked again when the gather is rewritten): matmuls, the loss and its gradient, and
// their row stages.
bool ReadsByElement(const Kernel& k) {
  if (k.kind == KernelKind::kRowStages) return true;
  return k.kind == KernelKind::kOp &&
         (k.op == "matmul" || k.op == "cross_entropy" || k.op == "cross_entropy_grad");
}

// Whether `reader` loads its input `i` four elements at a time: then each row of the table must
// hold a multiple of 4 elements, so that no vector straddles two rows.
bool LoadsAsVec4(const Kernel& reader, size_t i) {
  const std::optional<MatmulSchedule>& s = reader.matmul_schedule;
  return s && ((i == 0 && s->vec4_a) || (i == 1 && s->vec4_b));
}

// `reader` with the value of `gather` read in place: its table bound where the gather's
// value was, its index bound after the inputs (once for every gather by that index), as a uniform
// or as storage.
void Fold(Kernel& reader, const Kernel& gather, bool uniform_index) {
  const size_t read = reader.inputs.size() - RowGatherIndexInputs(reader);
  int index = -1;
  for (const Kernel::RowGather& g : reader.row_gathers)
    if (reader.inputs[g.index] == gather.inputs[1]) index = g.index;
  if (index < 0) {
    index = static_cast<int>(reader.inputs.size());
    reader.inputs.push_back(gather.inputs[1]);
    reader.uniform_inputs.resize(reader.inputs.size(), false);
    reader.uniform_inputs.back() = uniform_index;
  }
  for (size_t i = 0; i < read; ++i) {
    if (reader.inputs[i] != gather.output) continue;
    reader.inputs[i] = gather.inputs[0];
    reader.row_gathers.push_back({gather.output, static_cast<int>(i), index});
  }
}

}  // namespace

Status FoldRowGathers(Module& m) {
  const webir::Graph& g = m.graph();
  std::set<int> outputs;
  for (const webir::Output& o : g.outputs) outputs.insert(o.node);
  std::vector<bool> folded(m.kernels.size(), false);
  std::set<int> unstored;  // the values of gathers folded so far
  for (size_t t = 0; t < m.kernels.size(); ++t) {
    const Kernel& gather = m.kernels[t];
    if (!IsRowGather(m, gather, outputs) || unstored.count(gather.inputs[0]) ||
        unstored.count(gather.inputs[1]))
      continue;
    const int table = gather.inputs[0], index = gather.inputs[1];
    const TensorType& rows = g.at(table).type;
    const int64_t row = rows.elements() / std::max<int64_t>(rows.dims[0].size, 1);
    const bool uniform_index = RowIndexFitsUniform(g.at(index).type.elements());
    std::vector<size_t> readers;
    for (size_t r = t + 1; r < m.kernels.size(); ++r) {
      const Kernel& k = m.kernels[r];
      const size_t read = k.inputs.size() - RowGatherIndexInputs(k);
      if (std::find(k.inputs.begin(), k.inputs.begin() + read, gather.output) !=
          k.inputs.begin() + read)
        readers.push_back(r);
    }
    bool foldable = !readers.empty();
    for (size_t r : readers) {
      const Kernel& k = m.kernels[r];
      for (size_t i = 0; i < k.inputs.size(); ++i)
        if (k.inputs[i] == gather.output) foldable &= !LoadsAsVec4(k, i) || row % 4 == 0;
      const bool new_index =
          std::none_of(k.row_gathers.begin(), k.row_gathers.end(),
                       [&](const Kernel::RowGather& rg) { return k.inputs[rg.index] == index; });
      foldable &=
          ReadsByElement(k) && !BindsOverCap(m, k) &&
          k.StorageBindings() + (new_index && !uniform_index ? 1 : 0) <= kMaxStorageBindings;
    }
    // Reading the table and the index later than the gather did must read the same values: no
    // kernel up to the last reader (the readers included) writes either in place.
    for (size_t r = t + 1; foldable && r <= readers.back(); ++r) {
      const Kernel& k = m.kernels[r];
      for (size_t j = 0; j < k.in_place.size(); ++j)
        if (k.in_place[j] >= 0 &&
            (k.inputs[k.in_place[j]] == table || k.inputs[k.in_place[j]] == index))
          foldable = false;
    }
    if (!foldable) continue;
    for (size_t r : readers) Fold(m.kernels[r], gather, uniform_index);
    folded[t] = true;
    unstored.insert(gather.output);
  }
  EraseKernels(m, folded);
  return Status::Ok();
}

}  // namespace scellis::kernel
