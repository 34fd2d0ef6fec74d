// The planners (PlanTiles): the fewest tiles whose every binding's window fits the binding cap, of
// one box, a batch of boxes, a copy in parts, or softmax rows cut along themselves.
#include <algorithm>
#include <tuple>

#include "kernel/tiling.h"
#include "kernel/tiling_internal.h"

namespace scellis::kernel {
namespace {

using tiling_internal::CeilDiv;
using tiling_internal::Reach;

// The most tiles a layout copy is cut into: PlanTiles gives none beyond.
constexpr size_t kMaxCopyTiles = size_t{1} << 16;

// Elements between the lowest and one past the highest element a box of `extent` touches (0:
// none).
int64_t Span(const TileStrides& st, const std::array<int64_t, 3>& extent) {
  auto [lo, hi] = Reach(st, extent);
  return hi - lo;
}

class Planner {
 public:
  Planner(const TileSpace& s, uint64_t cap, uint64_t alignment)
      : s_(s), cap_(cap), slack_(alignment > 4 ? alignment - 4 : 0) {}

  std::optional<Tiling> Plan() const {
    const int64_t full[3] = {s_.rows, s_.cols, s_.depth};
    if (s_.rows <= 0 || s_.cols <= 0 || s_.depth < 0) return std::nullopt;
    std::optional<std::tuple<int64_t, int64_t, int64_t>> best_key;
    std::array<int64_t, 3> best{};
    for (int64_t c : Candidates(1)) {
      for (int64_t d : Candidates(2)) {
        std::array<int64_t, 3> e = {0, c, d};
        e[0] = MaxFit(0, e);
        if (e[0] == 0) continue;
        e[1] = MaxFit(1, e);
        if (s_.depth_splits) e[2] = MaxFit(2, e);
        if (e[1] == 0 || (s_.depth > 0 && e[2] == 0)) continue;
        const int64_t along_depth = s_.depth ? CeilDiv(full[2], e[2]) : 1;
        const int64_t count = CeilDiv(full[0], e[0]) * CeilDiv(full[1], e[1]) * along_depth;
        // Fewest tiles; then fewest passes along depth (each rereads the partial sums); then the
        // tallest tiles.
        auto key = std::make_tuple(count, along_depth, -e[0]);
        if (!best_key || key < *best_key) {
          best_key = key;
          best = e;
        }
      }
    }
    if (!best_key) return std::nullopt;
    Tiling t;
    t.space = s_;
    t.tile_rows = best[0];
    t.tile_cols = best[1];
    t.tile_depth = best[2];
    for (int64_t r = 0; r < s_.rows; r += best[0])
      for (int64_t c = 0; c < s_.cols; c += best[1]) {
        if (s_.depth == 0) {
          t.tiles.push_back(
              {r, std::min(best[0], s_.rows - r), c, std::min(best[1], s_.cols - c), 0, 0});
          continue;
        }
        for (int64_t d = 0; d < s_.depth; d += best[2])
          t.tiles.push_back({r, std::min(best[0], s_.rows - r), c, std::min(best[1], s_.cols - c),
                             d, std::min(best[2], s_.depth - d)});
      }
    return t;
  }

 private:
  int64_t Granule(int axis) const { return axis == 2 ? std::max<int64_t>(s_.depth_granule, 1) : 1; }
  int64_t Full(int axis) const { return axis == 0 ? s_.rows : axis == 1 ? s_.cols : s_.depth; }

  bool Fits(const std::array<int64_t, 3>& e) const {
    for (size_t b = 0; b < s_.layouts.size(); ++b) {
      const TileStrides& st = s_.layouts[b];
      const bool back = static_cast<int>(b) == s_.reads_back && e[2] < s_.depth;
      const int64_t span = Span(st, {e[0], e[1], back ? e[2] + 1 : e[2]});
      if (span > 0 && static_cast<uint64_t>(span) * 4 + slack_ > cap_) return false;
    }
    return true;
  }

  // The largest extent along `axis` (the whole axis, or a multiple of its granule) that fits with
  // the other extents of `e`; 0 when none does.
  int64_t MaxFit(int axis, std::array<int64_t, 3> e) const {
    const int64_t full = Full(axis), g = Granule(axis);
    if (full == 0) return 0;
    e[axis] = full;
    if (Fits(e)) return full;
    if ((axis == 2 && !s_.depth_splits) || (axis == 1 && !s_.cols_split)) return 0;
    int64_t lo = 0, hi = (full - 1) / g;  // multiples of g below the full extent
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      e[axis] = mid * g;
      if (Fits(e))
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo * g;
  }

  // Extents to try along `axis`: the whole axis and its halvings, down to the granule.
  std::vector<int64_t> Candidates(int axis) const {
    const int64_t full = Full(axis), g = Granule(axis);
    if (full == 0) return {0};
    if ((axis == 2 && !s_.depth_splits) || (axis == 1 && !s_.cols_split)) return {full};
    std::vector<int64_t> out = {full};
    for (int64_t v = full; v > g;) {
      v = CeilDiv(CeilDiv(v, 2), g) * g;
      if (v < out.back())
        out.push_back(v);
      else
        break;
    }
    return out;
  }

  const TileSpace& s_;
  uint64_t cap_, slack_;
};

// A batched matmul (or a copy's batch of boxes): the most whole products per tile whose windows
// fit at every tile's place (with broadcast batch dims, or a permute's batch running across the
// output, the windows' extent can differ from place to place); when not even one product fits,
// every product in the rank-2 tiles of one (its windows are the first product's, moved). A copy
// that would need more than kMaxCopyTiles has none.
std::optional<Tiling> PlanBatched(const TileSpace& s, uint64_t cap, uint64_t alignment) {
  if (s.rows <= 0 || s.cols <= 0 || s.depth < 0 || s.batches <= 0) return std::nullopt;
  const uint64_t slack = alignment > 4 ? alignment - 4 : 0;
  auto whole = [&](int64_t b0, int64_t n) {
    return Tile{0, s.rows, 0, s.cols, 0, s.depth, b0, std::min(n, s.batches - b0)};
  };
  auto fits = [&](int64_t n) {
    for (int64_t b0 = 0; b0 < s.batches; b0 += n)
      for (size_t b = 0; b < s.layouts.size(); ++b) {
        auto [first, last] = TileRange(s, static_cast<int>(b), whole(b0, n));
        if (last > first && static_cast<uint64_t>(last - first) * 4 + slack > cap) return false;
      }
    return true;
  };
  int64_t lo = 0, hi = s.batches;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  const bool copy = s.kind == TileSpace::Kind::kCopy;
  if (lo > 0) {
    if (copy && static_cast<size_t>(CeilDiv(s.batches, lo)) > kMaxCopyTiles) return std::nullopt;
    Tiling t;
    t.space = s;
    t.tile_rows = s.rows;
    t.tile_cols = s.cols;
    t.tile_depth = s.depth;
    t.tile_batches = lo;
    for (int64_t b0 = 0; b0 < s.batches; b0 += lo) t.tiles.push_back(whole(b0, lo));
    return t;
  }
  std::optional<Tiling> one = Planner(s, cap, alignment).Plan();
  if (!one || (copy && static_cast<size_t>(s.batches) * one->tiles.size() > kMaxCopyTiles))
    return std::nullopt;
  Tiling t = *one;
  t.tiles.clear();
  for (int64_t b0 = 0; b0 < s.batches; ++b0)
    for (Tile tile : one->tiles) {
      tile.batch0 = b0;
      t.tiles.push_back(tile);
    }
  return t;
}

// One box's fewest tiles, or a batch of them (PlanBatched).
std::optional<Tiling> PlanBox(const TileSpace& s, uint64_t cap, uint64_t alignment) {
  return s.batches > 1 ? PlanBatched(s, cap, alignment) : Planner(s, cap, alignment).Plan();
}

// A copy in parts (a concat's or stack's inputs): each part's fewest tiles, part after part.
std::optional<Tiling> PlanParts(const TileSpace& s, uint64_t cap, uint64_t alignment) {
  Tiling t;
  t.space = s;
  for (size_t p = 0; p < s.parts.size(); ++p) {
    std::optional<Tiling> part = PlanBox(s.parts[p], cap, alignment);
    if (!part) return std::nullopt;
    if (p == 0) {
      t.tile_rows = part->tile_rows;
      t.tile_cols = part->tile_cols;
      t.tile_depth = part->tile_depth;
    }
    for (Tile tile : part->tiles) {
      tile.part = static_cast<int>(p);
      t.tiles.push_back(tile);
    }
  }
  if (t.tiles.size() > kMaxCopyTiles) return std::nullopt;
  return t;
}

}  // namespace

std::optional<Tiling> PlanTiles(const Module& m, const Kernel& k, uint64_t cap,
                                uint64_t alignment) {
  std::optional<TileSpace> s = TileSpaceOf(m, k);
  if (!s) return std::nullopt;
  if (!s->parts.empty()) return PlanParts(*s, cap, alignment);
  std::optional<Tiling> t = PlanBox(*s, cap, alignment);
  // A copy whose input and output run across each other (a permute far from the identity) can
  // need boxes so small that their dispatches would outnumber any sensible step: bound whole
  // instead, which the plan refuses.
  if (t && s->kind == TileSpace::Kind::kCopy && t->tiles.size() > kMaxCopyTiles)
    return std::nullopt;
  if (t || s->kind != TileSpace::Kind::kSoftmax) return t;
  // A softmax row over the cap, cut along itself in three passes over its tiles, each carrying
  // the row's partial results in the scratch (4 f32 per row: maximum, NaN flag, sum): the maximum
  // (exact in any order), then the sum of exp(x - max) in increasing index as the untiled kernel
  // adds it, then the writes — so the tiles give the untiled kernel's bits.
  TileSpace split = *s;
  split.depth_splits = true;
  t = Planner(split, cap, alignment).Plan();
  if (!t) return std::nullopt;
  t->space.scratch_elements = 4 * t->tile_rows;
  t->passes = 3;
  std::vector<Tile> tiles;
  for (size_t first = 0; first < t->tiles.size();) {
    size_t end = first;
    while (end < t->tiles.size() && t->tiles[end].row0 == t->tiles[first].row0) ++end;
    for (int pass = 0; pass < 3; ++pass)
      for (size_t i = first; i < end; ++i) {
        tiles.push_back(t->tiles[i]);
        tiles.back().pass = pass;
      }
    first = end;
  }
  t->tiles = std::move(tiles);
  return t;
}

}  // namespace scellis::kernel
