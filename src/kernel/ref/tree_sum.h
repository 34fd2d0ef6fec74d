// The fixed 256-wide reduction tree of every whole-tensor reduction, written once for the CPU
// (its WGSL twin is wgsl::TreeReduce256): lane t of 256 sums term(j) for j = t, t + 256, t + 512,
// ... in increasing j, then the lanes combine pairwise (for w = 128, 64, ..., 1, lane t < w adds
// lane t + w). The GPU runs exactly this order, so the two agree bit for bit, and the result does
// not depend on the thread count (threads take whole lanes).
#pragma once

#include <cstdint>
#include <vector>

#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {

inline constexpr int64_t kTreeLanes = 256;

// `term(j)` gives the j-th term as T and may run on any thread.
template <typename T, typename Term>
T TreeSum256(int64_t count, const Term& term, const Parallel& parallel) {
  constexpr int64_t kLanesPerChunk = 32;
  std::vector<T> lane(static_cast<size_t>(kTreeLanes), T(0));
  // A short sum (a batch's losses, say) costs less than waking threads: it runs here.
  const Parallel serial(1);
  (count < kChunk ? serial : parallel).For(kTreeLanes / kLanesPerChunk, [&](int64_t c) {
    // Row by row over the chunk's lanes: each lane still adds its terms in increasing j.
    T acc[kLanesPerChunk] = {};
    const int64_t first = c * kLanesPerChunk;
    for (int64_t row = 0; row < count; row += kTreeLanes)
      for (int64_t t = 0; t < kLanesPerChunk && row + first + t < count; ++t)
        acc[t] += term(row + first + t);
    std::copy(acc, acc + kLanesPerChunk, lane.begin() + first);
  });
  for (int64_t w = kTreeLanes / 2; w > 0; w /= 2)
    for (int64_t t = 0; t < w; ++t) lane[t] += lane[t + w];
  return lane[0];
}

}  // namespace scellis::kernel::ref
