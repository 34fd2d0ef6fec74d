// Reductions with a fixed accumulation order. Along an axis: sequential in index order. Over the
// whole tensor: the two-level tree the WGSL kernel uses — lane t of 256 sums elements t, t + 256,
// t + 512, ... in order, then the lanes combine pairwise (for w = 128, 64, ..., 1, lane t < w adds
// lane t + w) — so the GPU can reproduce the reference bit for bit, and the result does not
// depend on the thread count.
#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {
namespace {

inline constexpr int64_t kLanes = 256;
inline constexpr int64_t kLanesPerChunk = 32;

template <typename T>
void Reduce(const OpArgs<T>& a, bool mean) {
  const TensorType& in = a.in_type(0);
  const T* x = a.inputs[0];
  const Json& axis_attr = a.node->attrs["axis"];
  if (axis_attr.is_null()) {
    int64_t n = in.elements();
    std::vector<T> lane(static_cast<size_t>(kLanes), T(0));
    a.parallel->For(kLanes / kLanesPerChunk, [&](int64_t c) {
      T acc[kLanesPerChunk] = {};
      const int64_t first = c * kLanesPerChunk;
      for (int64_t row = 0; row < n; row += kLanes)
        for (int64_t t = 0; t < kLanesPerChunk && row + first + t < n; ++t)
          acc[t] += x[row + first + t];
      std::copy(acc, acc + kLanesPerChunk, lane.begin() + first);
    });
    for (int64_t w = kLanes / 2; w > 0; w /= 2)
      for (int64_t t = 0; t < w; ++t) lane[t] += lane[t + w];
    T total = lane[0];
    a.output[0] = mean ? (n ? total / static_cast<T>(n) : T(NAN)) : total;
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
      a.output[o] = mean ? (len ? s / static_cast<T>(len) : T(NAN)) : s;
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

}  // namespace

void AddReduceOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"sum", {Sum<float>, Sum<double>}});
  t.push_back({"mean", {Mean<float>, Mean<double>}});
}

}  // namespace scellis::kernel::ref
