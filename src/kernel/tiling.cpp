#include "kernel/tiling.h"

#include <algorithm>
#include <tuple>

namespace scellis::kernel {
namespace {

// A tensor of `sizes` walked along `axis`: rows are the elements before it, columns those after it
// (each row's values along the axis lie `cols` apart), depth the axis itself.
void AlongAxis(TileSpace& s, const std::vector<int64_t>& sizes, int axis) {
  s.rows = s.cols = 1;
  for (int i = 0; i < axis; ++i) s.rows *= sizes[i];
  for (size_t i = axis + 1; i < sizes.size(); ++i) s.cols *= sizes[i];
  s.depth = sizes[axis];
}

bool AllF32(const Module& m, const Kernel& k) {
  if (m.graph().at(k.output).type.dtype != DType::kF32) return false;
  for (int in : k.inputs)
    if (m.graph().at(in).type.dtype != DType::kF32) return false;
  return true;
}

// The loss kernel merged with its gradient (merge-loss-gradient): cross_entropy reading the
// logits, the labels and the upstream gradient, writing the loss and the gradient (and nothing
// more: merged with a bias gradient's column sum, which adds over every row, it does not tile).
bool IsLossWithGradient(const Module& m, const Kernel& k) {
  return k.op == "cross_entropy" && k.inputs.size() == 3 && k.extra_outputs.size() == 1 &&
         m.graph().at(k.extra_outputs[0]).type.dtype == DType::kF32;
}

// The most tiles a layout copy is cut into: PlanTiles gives none beyond.
constexpr size_t kMaxCopyTiles = size_t{1} << 16;

int64_t CeilDiv(int64_t a, int64_t b) {
  return b > 0 ? (a + b - 1) / b : 0;
}

// Where the lowest and one past the highest element a box of `extent` touches lie from the box's
// element (0, 0, 0): a negative stride (a flip, a slice's negative step) reaches below it. {0, 0}:
// none.
std::pair<int64_t, int64_t> Reach(const TileStrides& st, const std::array<int64_t, 3>& extent) {
  int64_t lo = 0, hi = 1;
  for (int a = 0; a < 3; ++a) {
    if (st[a] == 0) continue;
    if (extent[a] == 0) return {0, 0};
    (st[a] < 0 ? lo : hi) += (extent[a] - 1) * st[a];
  }
  return {lo, hi};
}

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

int64_t BatchOffset(const TileSpace& s, int b, int64_t index) {
  int64_t offset = 0;
  for (int d = static_cast<int>(s.batch_dims.size()) - 1; d >= 0; --d) {
    const int64_t size = std::max<int64_t>(s.batch_dims[static_cast<size_t>(d)], 1);
    offset += index % size * s.batch_strides[static_cast<size_t>(b)][static_cast<size_t>(d)];
    index /= size;
  }
  return offset;
}

bool TilesPerElement(const Kernel& k) {
  return k.kind == KernelKind::kElementwise ||
         (k.kind == KernelKind::kOp && (k.op == "uniform" || k.op == "dropout"));
}

std::optional<TileSpace> TileSpaceOf(const Module& m, const Kernel& k) {
  // A matmul with an epilogue (more than two inputs) or a kernel with several outputs is never
  // tiled (the passes that make them leave kernels over the binding cap alone), except the loss
  // kernel merged with its gradient: its tiles of whole rows write their rows of the gradient.
  if (std::optional<TileSpace> copy = CopyTileSpace(m, k)) return copy;
  if (std::optional<TileSpace> join = JoinTileSpace(m, k)) return join;
  if (std::optional<TileSpace> pad = PadTileSpace(m, k)) return pad;
  if (std::optional<TileSpace> scatter = ScatterTileSpace(m, k)) return scatter;
  if (k.kind != KernelKind::kOp || !AllF32(m, k)) return std::nullopt;
  if (!k.extra_outputs.empty() && !IsLossWithGradient(m, k)) return std::nullopt;
  const webir::Node& node = m.graph().at(k.output);
  TileSpace s;
  if (k.op == "matmul" && k.matmul_schedule && k.inputs.size() == 2) {
    const MatmulShape sh = MatmulShapeOf(m, k);
    if (sh.batches <= 0) return std::nullopt;
    s.kind = TileSpace::Kind::kMatmul;
    s.rows = sh.m;
    s.cols = sh.n;
    s.depth = sh.k;
    s.layouts = {sh.trans_a ? TileStrides{1, 0, sh.m} : TileStrides{sh.k, 0, 1},
                 sh.trans_b ? TileStrides{0, sh.k, 1} : TileStrides{0, 1, sh.n},
                 TileStrides{sh.n, 1, 0}};
    if (sh.batches > 1) {
      const webir::Node& op = m.graph().at(k.OpNode());
      const std::vector<int64_t> out = op.type.sizes();
      s.batches = sh.batches;
      s.batch_dims.assign(out.begin(), out.end() - 2);
      // Per binding, the broadcast strides of its batch dims, in elements of its matrices.
      auto strides = [&](std::vector<int64_t> sizes, int64_t matrix) {
        std::vector<int64_t> st = BroadcastStrides({sizes.begin(), sizes.end() - 2}, s.batch_dims);
        for (int64_t& v : st) v *= matrix;
        return st;
      };
      s.batch_strides = {strides(m.graph().at(op.args[0]).type.sizes(), sh.m * sh.k),
                         strides(m.graph().at(op.args[1]).type.sizes(), sh.k * sh.n),
                         strides(out, sh.m * sh.n)};
    }
    return s;
  }
  if ((k.op == "sum" || k.op == "mean") && k.inputs.size() == 1) {
    const TensorType& in = m.graph().at(k.inputs[0]).type;
    if (node.attrs["axis"].is_null()) {
      s.kind = TileSpace::Kind::kWholeSum;
      s.depth = in.elements();
      s.layouts = {TileStrides{0, 0, 1}, TileStrides{0, 0, 0}};
      s.depth_granule = 256;
      s.scratch_elements = 256;
      return s;
    }
    AlongAxis(s, in.sizes(), node.attrs["axis"].get<int>());
    s.kind = TileSpace::Kind::kAxisSum;
    s.layouts = {TileStrides{s.depth * s.cols, 1, s.cols}, TileStrides{s.cols, 1, 0}};
    return s;
  }
  if (k.op == "cumsum" && k.inputs.size() == 1) {
    AlongAxis(s, m.graph().at(k.inputs[0]).type.sizes(), node.attrs.at("axis").get<int>());
    s.kind = TileSpace::Kind::kCumsum;
    const TileStrides layout{s.depth * s.cols, 1, s.cols};
    s.layouts = {layout, layout};
    s.reads_back = 1;
    return s;
  }
  if (k.op == "cross_entropy" && (k.inputs.size() == 2 || IsLossWithGradient(m, k))) {
    // Rows as the whole-tensor sum's elements: the tree's lane t adds the losses of rows
    // t, t + 256, ..., so tiles of multiples of 256 whole rows hand the lanes on. Merged with its
    // gradient, it also reads the upstream gradient (bound whole) and writes the tile's rows of
    // the gradient, laid out as the logits.
    const TensorType& in = m.graph().at(k.inputs[0]).type;
    s.kind = TileSpace::Kind::kCrossEntropy;
    s.cols = in.dims[1].size;
    s.depth = in.dims[0].size;
    s.cols_split = false;
    const TileStrides rows{0, 1, s.cols}, labels{0, 0, 1}, whole{0, 0, 0};
    s.layouts = {rows, labels, whole};
    if (k.inputs.size() == 3) s.layouts.insert(s.layouts.end(), {whole, rows});
    s.depth_granule = 256;
    s.scratch_elements = 256;
    return s;
  }
  if (k.op == "cross_entropy_grad" && k.inputs.size() == 3) {
    // Tiles of whole rows, each row's gradient its own (its maximum and sum of exp): logits,
    // labels, the upstream gradient (bound whole), the gradient.
    const TensorType& in = m.graph().at(k.inputs[0]).type;
    s.kind = TileSpace::Kind::kCrossEntropyGrad;
    s.rows = in.dims[0].size;
    s.cols = in.dims[1].size;
    s.cols_split = false;
    s.depth_splits = false;
    s.layouts = {TileStrides{s.cols, 1, 0}, TileStrides{1, 0, 0}, TileStrides{0, 0, 0},
                 TileStrides{s.cols, 1, 0}};
    return s;
  }
  if ((k.op == "softmax" || k.op == "log_softmax") && k.inputs.size() == 1) {
    const TensorType& in = m.graph().at(k.inputs[0]).type;
    const int64_t n = in.dims.back().size;
    s.kind = TileSpace::Kind::kSoftmax;
    s.depth = n;
    s.rows = n ? in.elements() / n : 0;
    // Tiles take whole rows where one fits (PlanTiles cuts a row over the cap along itself).
    s.depth_splits = false;
    s.layouts = {TileStrides{n, 0, 1}, TileStrides{n, 0, 1}};
    return s;
  }
  return std::nullopt;
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
