// Index ops on the CPU reference. Indices are read as integers from their slots (IntegerOf), never
// as values of T, and are in range: the graph and the run check them before any kernel runs.
// index_add and scatter_add add in the order the protocol fixes — a's element first, then the
// matching src elements in increasing index position — which the WGSL twins follow.
#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {
namespace {

int AxisOf(const webir::Node& node) {
  return node.attrs["axis"].get<int>();
}

template <typename T>
int64_t IndexAt(const OpArgs<T>& a, int64_t i) {
  return IntegerOf(a.inputs[1][i], DType::kI32);
}

// out = a's slices along the axis at the listed positions.
template <typename T>
void IndexSelect(const OpArgs<T>& a) {
  const int axis = AxisOf(*a.node);
  const std::vector<int64_t> in_strides = RowMajorStrides(a.in_type(0).sizes());
  const std::vector<int64_t> out_sizes = a.node->type.sizes();
  SetEachOutput(a, [&](int64_t i) {
    std::vector<int64_t> idx = Unravel(i, out_sizes);
    idx[axis] = IndexAt(a, idx[axis]);
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * in_strides[d];
    return a.inputs[0][off];
  });
}

// out[p] = a[p with the axis coordinate index[p]]; the output has index's shape.
template <typename T>
void Gather(const OpArgs<T>& a) {
  const int axis = AxisOf(*a.node);
  const std::vector<int64_t> in_strides = RowMajorStrides(a.in_type(0).sizes());
  const std::vector<int64_t> out_sizes = a.node->type.sizes();
  SetEachOutput(a, [&](int64_t i) {
    std::vector<int64_t> idx = Unravel(i, out_sizes);
    idx[axis] = IndexAt(a, i);
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * in_strides[d];
    return a.inputs[0][off];
  });
}

// acc + term in the operands' dtype: one f32 rounding, or i32 addition modulo 2^32 on the slots'
// integers (IntegerSlot), exact.
template <typename T>
T AddInDType(T acc, T term, DType dtype) {
  if (!IsIntegerDType(dtype)) return acc + term;
  const uint64_t sum =
      static_cast<uint64_t>(IntegerOf(acc, dtype)) + static_cast<uint64_t>(IntegerOf(term, dtype));
  return IntegerSlot<T>(WrapToDType(sum, dtype), dtype);
}

// out[p] = a[p] + src[p with axis k] for every k with index[k] == p's axis coordinate, k rising.
template <typename T>
void IndexAdd(const OpArgs<T>& a) {
  const int axis = AxisOf(*a.node);
  const DType dtype = a.node->type.dtype;
  const std::vector<int64_t> src_strides = RowMajorStrides(a.in_type(2).sizes());
  const std::vector<int64_t> out_sizes = a.node->type.sizes();
  // The positions that add to each slice of the axis, in increasing order.
  std::vector<std::vector<int64_t>> positions(static_cast<size_t>(out_sizes[axis]));
  for (int64_t k = 0; k < a.in_type(1).elements(); ++k)
    positions[static_cast<size_t>(IndexAt(a, k))].push_back(k);
  SetEachOutput(a, [&](int64_t i) {
    std::vector<int64_t> idx = Unravel(i, out_sizes);
    int64_t base = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      if (static_cast<int>(d) != axis) base += idx[d] * src_strides[d];
    T acc = a.inputs[0][i];
    for (int64_t k : positions[static_cast<size_t>(idx[axis])])
      acc = AddInDType(acc, a.inputs[2][base + k * src_strides[axis]], dtype);
    return acc;
  });
}

// out[p] = a[p] + src[q] for every q of index's shape with q = p off the axis and index[q] == p's
// axis coordinate, q's axis coordinate rising.
template <typename T>
void ScatterAdd(const OpArgs<T>& a) {
  const int axis = AxisOf(*a.node);
  const DType dtype = a.node->type.dtype;
  const std::vector<int64_t> index_sizes = a.in_type(1).sizes();
  const std::vector<int64_t> index_strides = RowMajorStrides(index_sizes);
  const std::vector<int64_t> out_sizes = a.node->type.sizes();
  SetEachOutput(a, [&](int64_t i) {
    std::vector<int64_t> idx = Unravel(i, out_sizes);
    T acc = a.inputs[0][i];
    int64_t base = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (static_cast<int>(d) == axis) continue;
      if (idx[d] >= index_sizes[d]) return acc;  // no index position lies over this element
      base += idx[d] * index_strides[d];
    }
    for (int64_t k = 0; k < index_sizes[axis]; ++k) {
      const int64_t q = base + k * index_strides[axis];
      if (IndexAt(a, q) == idx[axis]) acc = AddInDType(acc, a.inputs[2][q], dtype);
    }
    return acc;
  });
}

}  // namespace

void AddIndexOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"index_select", {IndexSelect<float>, IndexSelect<double>}});
  t.push_back({"gather", {Gather<float>, Gather<double>}});
  t.push_back({"index_add", {IndexAdd<float>, IndexAdd<double>}});
  t.push_back({"scatter_add", {ScatterAdd<float>, ScatterAdd<double>}});
}

}  // namespace scellis::kernel::ref
