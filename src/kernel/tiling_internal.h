// Arithmetic the tiling files share: rounding a count up to whole tiles, and the elements a box of
// a binding's layout reaches.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "kernel/tiling.h"

namespace scellis::kernel::tiling_internal {

inline int64_t CeilDiv(int64_t a, int64_t b) {
  return b > 0 ? (a + b - 1) / b : 0;
}

// Where the lowest and one past the highest element a box of `extent` touches lie from the box's
// element (0, 0, 0): a negative stride (a flip, a slice's negative step) reaches below it. {0, 0}:
// none.
inline std::pair<int64_t, int64_t> Reach(const TileStrides& st,
                                         const std::array<int64_t, 3>& extent) {
  int64_t lo = 0, hi = 1;
  for (int a = 0; a < 3; ++a) {
    if (st[a] == 0) continue;
    if (extent[a] == 0) return {0, 0};
    (st[a] < 0 ? lo : hi) += (extent[a] - 1) * st[a];
  }
  return {lo, hi};
}

}  // namespace scellis::kernel::tiling_internal
