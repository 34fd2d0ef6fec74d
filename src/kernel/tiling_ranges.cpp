// The elements of each binding a tile touches (TileRange), over a batch's products through their
// broadcast strides (BatchOffset).
#include <algorithm>

#include "kernel/tiling.h"
#include "kernel/tiling_internal.h"

namespace scellis::kernel {
namespace {

using tiling_internal::Reach;

// Whether binding `b`'s products start at non-decreasing elements along the batch: stepping to
// the next product moves one dim forward and every dim inside it back to 0, so each dim's stride
// must cover what the dims inside it take back. A broadcast dim (stride 0) outside one that is not
// fails, as does a copy's batch whose input runs across its output (a permute's outer axes) or
// backwards.
bool BatchMonotone(const TileSpace& s, int b) {
  const std::vector<int64_t>& strides = s.batch_strides[static_cast<size_t>(b)];
  int64_t inside = 0;  // what the dims inside d take back
  for (size_t d = s.batch_dims.size(); d-- > 0;) {
    if (s.batch_dims[d] <= 1) continue;
    if (strides[d] < inside) return false;
    inside += strides[d] * (s.batch_dims[d] - 1);
  }
  return true;
}

// The lowest and highest start of binding `b`'s products [first, first + count).
std::pair<int64_t, int64_t> BatchOffsetRange(const TileSpace& s, int b, int64_t first,
                                             int64_t count) {
  if (count <= 1 || BatchMonotone(s, b))
    return {BatchOffset(s, b, first), BatchOffset(s, b, first + std::max<int64_t>(count, 1) - 1)};
  int64_t lo = BatchOffset(s, b, first), hi = lo;
  for (int64_t i = first + 1; i < first + count; ++i) {
    const int64_t off = BatchOffset(s, b, i);
    lo = std::min(lo, off);
    hi = std::max(hi, off);
  }
  return {lo, hi};
}

}  // namespace

int64_t BatchOffset(const TileSpace& s, int b, int64_t index) {
  int64_t offset = 0;
  for (int d = static_cast<int>(s.batch_dims.size()) - 1; d >= 0; --d) {
    const int64_t size = std::max<int64_t>(s.batch_dims[static_cast<size_t>(d)], 1);
    offset += index % size * s.batch_strides[static_cast<size_t>(b)][static_cast<size_t>(d)];
    index /= size;
  }
  return offset;
}

const TileSpace& SpaceOf(const TileSpace& s, const Tile& t) {
  return t.part >= 0 ? s.parts[static_cast<size_t>(t.part)] : s;
}

std::pair<int64_t, int64_t> TileRange(const TileSpace& whole, int b, const Tile& t) {
  const TileSpace& s = SpaceOf(whole, t);
  const TileStrides& st = s.layouts[static_cast<size_t>(b)];
  const auto [low, high] = Reach(st, {t.rows, t.cols, t.depth});
  if (low == high) return {0, 0};
  const int64_t origin = s.origins.empty() ? 0 : s.origins[static_cast<size_t>(b)];
  const int64_t first = origin + t.row0 * st[0] + t.col0 * st[1] + t.depth0 * st[2];
  if (b == s.reads_back && t.Continues()) return {first - st[2], first + high};
  if (s.batch_dims.empty()) return {first + low, first + high};
  auto [lo, hi] = BatchOffsetRange(s, b, t.batch0, t.batch_count);
  return {first + lo + low, first + hi + high};
}

}  // namespace scellis::kernel
