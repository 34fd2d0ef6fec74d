// Reductions with a fixed accumulation order. Along an axis: sequential in index order. Over the
// whole tensor: the fixed 256-wide tree (tree_sum.h) the WGSL kernel uses too.
#include "kernel/ref/ref.h"
#include "kernel/ref/tree_sum.h"

namespace scellis::kernel::ref {
namespace {

// An i32 sum: exact integer addition modulo 2^32, accumulated modulo 2^64 in uint64 (whose low
// 32 bits are the same), so no order of the additions changes a bit.
template <typename T>
void IntegerSum(const OpArgs<T>& a) {
  const TensorType& in = a.in_type(0);
  const DType dtype = in.dtype;
  const T* x = a.inputs[0];
  auto slot = [&](uint64_t s) { return IntegerSlot<T>(WrapToDType(s, dtype), dtype); };
  const Json& axis_attr = a.node->attrs["axis"];
  if (axis_attr.is_null()) {
    uint64_t s = 0;
    for (int64_t j = 0; j < in.elements(); ++j) s += static_cast<uint64_t>(IntegerOf(x[j], dtype));
    a.output[0] = slot(s);
    return;
  }
  const int axis = axis_attr.get<int>();
  const std::vector<int64_t> sizes = in.sizes();
  int64_t outer = 1, inner = 1, len = sizes[axis];
  for (int i = 0; i < axis; ++i) outer *= sizes[i];
  for (size_t i = axis + 1; i < sizes.size(); ++i) inner *= sizes[i];
  const int64_t outputs = outer * inner;
  a.parallel->For((outputs + kChunk - 1) / kChunk, [&](int64_t c) {
    for (int64_t o = c * kChunk; o < std::min(outputs, (c + 1) * kChunk); ++o) {
      const int64_t base = (o / inner) * len * inner + o % inner;
      uint64_t s = 0;
      for (int64_t j = 0; j < len; ++j)
        s += static_cast<uint64_t>(IntegerOf(x[base + j * inner], dtype));
      a.output[o] = slot(s);
    }
  });
}

template <typename T>
void Reduce(const OpArgs<T>& a, bool mean) {
  const TensorType& in = a.in_type(0);
  if (IsIntegerDType(in.dtype)) return IntegerSum(a);
  // An f16 sum accumulates f16 values (exact in T) in T and rounds once to f16.
  const bool half = a.node->type.dtype == DType::kF16;
  auto Finish = [half](T v) { return half ? RoundToHalf(v) : v; };
  const T* x = a.inputs[0];
  const Json& axis_attr = a.node->attrs["axis"];
  if (axis_attr.is_null()) {
    int64_t n = in.elements();
    T total = TreeSum256<T>(
        n, [x](int64_t j) { return x[j]; }, *a.parallel);
    a.output[0] = Finish(mean ? (n ? total / static_cast<T>(n) : T(NAN)) : total);
    return;
  }
  int axis = axis_attr.get<int>();
  std::vector<int64_t> sizes = in.sizes();
  int64_t outer = 1, inner = 1, len = sizes[axis];
  for (int i = 0; i < axis; ++i) outer *= sizes[i];
  for (size_t i = axis + 1; i < sizes.size(); ++i) inner *= sizes[i];
  int64_t outputs = outer * inner;
  a.parallel->For((outputs + kChunk - 1) / kChunk, [&](int64_t c) {
    for (int64_t o = c * kChunk; o < std::min(outputs, (c + 1) * kChunk); ++o) {
      int64_t base = (o / inner) * len * inner + o % inner;
      T s = T(0);
      for (int64_t j = 0; j < len; ++j) s += x[base + j * inner];
      a.output[o] = Finish(mean ? (len ? s / static_cast<T>(len) : T(NAN)) : s);
    }
  });
}

template <typename T>
void Sum(const OpArgs<T>& a) {
  Reduce(a, false);
}
template <typename T>
void Mean(const OpArgs<T>& a) {
  Reduce(a, true);
}

// Running sums along the axis, each the previous sum plus the next element.
template <typename T>
void Cumsum(const OpArgs<T>& a) {
  const std::vector<int64_t> sizes = a.in_type(0).sizes();
  const int axis = a.node->attrs.at("axis").template get<int>();
  int64_t outer = 1, inner = 1, len = sizes[axis];
  for (int i = 0; i < axis; ++i) outer *= sizes[i];
  for (size_t i = axis + 1; i < sizes.size(); ++i) inner *= sizes[i];
  const int64_t lines = outer * inner;
  const T* x = a.inputs[0];
  a.parallel->For((lines + kChunk - 1) / kChunk, [&](int64_t c) {
    for (int64_t line = c * kChunk; line < std::min(lines, (c + 1) * kChunk); ++line) {
      const int64_t base = (line / inner) * len * inner + line % inner;
      T s = T(0);
      for (int64_t j = 0; j < len; ++j) {
        s += x[base + j * inner];
        a.output[base + j * inner] = s;
      }
    }
  });
}

}  // namespace

void AddReduceOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"sum", {Sum<float>, Sum<double>}});
  t.push_back({"mean", {Mean<float>, Mean<double>}});
  t.push_back({"cumsum", {Cumsum<float>, Cumsum<double>}});
}

}  // namespace scellis::kernel::ref
