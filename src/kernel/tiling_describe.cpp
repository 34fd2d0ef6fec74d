// What a tiling's tiles take, in words (Tiling::Describe): what `scellis plan` prints for a tiled
// kernel.
#include "kernel/tiling.h"
#include "kernel/tiling_internal.h"

namespace scellis::kernel {
namespace {

using tiling_internal::CeilDiv;

// What a copy's tiles take: " of 1 x 24 x 10 of the output's 1 x 100 x 40 ...", or of a batch of
// boxes, whole boxes per tile or each box in several.
std::string CopyDescribed(const Tiling& t) {
  const TileSpace& s = t.space;
  auto box = [](int64_t r, int64_t c, int64_t d) {
    return std::to_string(r) + " x " + std::to_string(c) + " x " + std::to_string(d);
  };
  const std::string merged = " (its axes merged where they move together";
  const std::string tile = box(t.tile_rows, t.tile_cols, t.tile_depth);
  if (s.batches <= 1)
    return " of " + tile + " of the output's " + box(s.rows, s.cols, s.depth) + merged +
           "), each moving its box of elements";
  const std::string boxes = std::to_string(s.batches) + " boxes of " +
                            box(s.rows, s.cols, s.depth) + merged +
                            ", the outer ones beyond three a batch of boxes)";
  if (t.tile_rows == s.rows && t.tile_cols == s.cols && t.tile_depth == s.depth)
    return " of " + std::to_string(t.tile_batches) + " of the output's " + boxes +
           ", each moving its boxes' elements";
  return ": each of the output's " + boxes + " in " +
         std::to_string(t.tiles.size() / static_cast<size_t>(s.batches)) + " of " + tile;
}

// What a copy in parts does, tile counts per part: ", by input 2 + 0 + 3, each moving ..." (an
// empty input has no tiles), or ": 2 writing the pad value ..., then 3 moving ...".
std::string PartsDescribed(const Tiling& t) {
  const TileSpace& s = t.space;
  std::vector<int64_t> per(s.parts.size(), 0);
  for (const Tile& tile : t.tiles) ++per[static_cast<size_t>(tile.part)];
  const std::string first = std::to_string(per[0]);
  switch (s.parts_are) {
    case TileSpace::Parts::kJoin: {
      // Per input, its part's tiles.
      std::vector<int64_t> by_input(s.parts.front().layouts.size() - 1, 0);
      for (size_t p = 0; p < s.parts.size(); ++p)
        by_input[static_cast<size_t>(s.parts[p].copy_input)] = per[p];
      std::string counts;
      for (int64_t c : by_input) counts += (counts.empty() ? "" : " + ") + std::to_string(c);
      return ", by input " + counts +
             ", each moving a box of one input's elements to its place in the output";
    }
    case TileSpace::Parts::kPad:
      if (per.size() == 1) return ": writing the pad value over the output (the input is empty)";
      return ": " + first + " writing the pad value over the output, then " +
             std::to_string(per[1]) + " moving boxes of the input to its place inside";
    case TileSpace::Parts::kScatter:
      if (per.size() == 1) return ": copying the base to the output (the source is empty)";
      return ": " + first + " copying the base to the output, then " + std::to_string(per[1]) +
             " moving boxes of the source into its strided window";
  }
  return "";
}

}  // namespace

int64_t Tiling::TilesAlong(int axis) const {
  const int64_t full = axis == 0 ? space.rows : axis == 1 ? space.cols : space.depth;
  const int64_t extent = axis == 0 ? tile_rows : axis == 1 ? tile_cols : tile_depth;
  return full ? CeilDiv(full, extent) : 1;
}

std::string Tiling::Describe() const {
  const std::string n = std::to_string(tiles.size()) + (tiles.size() == 1 ? " tile" : " tiles");
  auto along = [&](int axis, int64_t extent, const std::string& what) {
    return std::to_string(TilesAlong(axis)) + " of " + std::to_string(extent) + " " + what;
  };
  const std::string carried = TilesAlong(2) > 1 ? ", each tile along " : "";
  switch (space.kind) {
    case TileSpace::Kind::kMatmul: {
      const std::string box =
          along(0, tile_rows, "rows") + " x " + along(1, tile_cols, "columns") + " x " +
          along(2, tile_depth, "along K") +
          (TilesAlong(2) > 1 ? carried + "K continuing the partial sums of the one before" : "");
      if (space.batches <= 1) return n + ": " + box;
      const std::string products = std::to_string(space.batches) + " products";
      if (tile_batches > 1 ||
          (tile_rows == space.rows && tile_cols == space.cols && tile_depth == space.depth))
        return n + " of " + std::to_string(tile_batches) + " of the batch's " + products +
               ", each whole";
      return n + ": each of the batch's " + products + " in " +
             std::to_string(tiles.size() / static_cast<size_t>(space.batches)) + ": " + box;
    }
    case TileSpace::Kind::kAxisSum:
      return n + ": " + along(0, tile_rows, "outer rows") + " x " +
             along(1, tile_cols, "inner columns") + " x " + along(2, tile_depth, "along the axis") +
             (TilesAlong(2) > 1 ? carried + "the axis continuing the partial sums of the one before"
                                : "");
    case TileSpace::Kind::kWholeSum:
      return n + " of " + std::to_string(tile_depth) +
             " elements, the 256 lanes' partial sums carried from tile to tile";
    case TileSpace::Kind::kSoftmax:
      if (passes == 3)
        return n + ": each of " + std::to_string(TilesAlong(0)) + " blocks of " +
               std::to_string(tile_rows) + " rows in 3 passes (the maximum, the sum of exp, the " +
               "writes) of " + along(2, tile_depth, "along the row") +
               ", each carrying the row's partial results";
      return n + " of " + std::to_string(tile_rows) + " rows";
    case TileSpace::Kind::kCrossEntropy:
      return n + " of " + std::to_string(tile_depth) +
             " rows, the 256 lanes' partial sums of row losses carried from tile to tile" +
             (space.layouts.size() > 3 ? ", each tile writing its rows of the gradient" : "");
    case TileSpace::Kind::kCrossEntropyGrad:
      return n + " of " + std::to_string(tile_rows) + " rows";
    case TileSpace::Kind::kCopy:
      if (!space.parts.empty()) return n + PartsDescribed(*this);
      return n + CopyDescribed(*this);
    case TileSpace::Kind::kCumsum:
      return n + ": " + along(0, tile_rows, "outer rows") + " x " +
             along(1, tile_cols, "inner columns") + " x " + along(2, tile_depth, "along the axis") +
             (TilesAlong(2) > 1
                  ? carried + "the axis continuing the running sums the one before stored"
                  : "");
  }
  return n;
}

}  // namespace scellis::kernel
