// Tiles for the kernels whose tensors are larger than one storage binding (the device's
// maxStorageBufferBindingSize, "the binding cap"), other than fused elementwise kernels (which tile
// their output elements one for one, see wgsl::ElementwiseTile).
//
// A tileable kernel's work is a box of rows x columns x depth, where depth is the axis it reduces
// along (matmul: M x N x K; an axis sum: outer x inner x the axis; a whole-tensor sum: the elements
// as depth; softmax: its rows x 1 x the row). Every operand is an affine function of the box's
// coordinates (element = row * sr + col * sc + depth * sd), so a tile — a sub-box — reads and
// writes one contiguous range of each operand, which it binds as a window starting at a multiple
// of the offset alignment below that range. A tile cut along depth continues the sums an earlier
// tile left: each output's (or each tree lane's) partial f32 sum is stored where the next tile
// picks it up and keeps adding in increasing depth, so the additions happen in the untiled
// kernel's order and the tiles give its bits (a running sum's tile starts from the sum the tile
// before it stored at the element just before its own). The depth tiles of one rows x columns block
// run one after another, in increasing depth.
//
// A batched matmul repeats its box once per product of the batch, each binding's product i
// starting at its own element (BatchOffset: the output's batch index through the binding's
// broadcast strides). A tile takes several whole products when one fits, else one product cut into
// rows x columns x depth as a rank-2 matmul is. A layout copy whose axes do not merge into three
// is such a batch of boxes, its outer axes the batch dims.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernel/module.h"

namespace scellis::kernel {

// Whether `k` tiles element for element: its output element i depends on element i of each
// operand of the output's shape and on operands bound whole, so a tile of output elements
// [base, base + count) binds those operands' same window. The fused elementwise kernels (where no
// read is shifted; the plan's verdict checks) and the counter-hash generators `uniform` and
// `dropout`, whose hash takes the element's index in the whole tensor.
bool TilesPerElement(const Kernel& k);

// Every window starts at a multiple of 256 bytes: the largest minimum storage-buffer offset
// alignment WebGPU lets a device require, so a plan's tiles suit every device.
inline constexpr uint64_t kTileAlignment = 256;

// Elements (of its dtype) an operand's element (row, col, depth) lies at: row * strides[0] +
// col * strides[1] + depth * strides[2].
using TileStrides = std::array<int64_t, 3>;

// How a kernel's work is cut into tiles: its box, and each binding's layout in it.
struct TileSpace {
  enum class Kind {
    kMatmul,
    kAxisSum,
    kWholeSum,
    kSoftmax,
    kCumsum,
    kCrossEntropy,
    kCrossEntropyGrad,
    kCopy,  // a layout copy: rows x columns x depth are its output's (merged) axes, nothing summed
  };
  Kind kind = Kind::kMatmul;
  int64_t rows = 1, cols = 1, depth = 1;
  // Per binding, in the kernel's binding order: its inputs, then its output, then its extra
  // outputs (the loss kernel merged with its gradient writes the gradient too).
  std::vector<TileStrides> layouts;
  // Per binding, the element the box's element (0, 0, 0) lies at (a slice's start); empty: 0.
  std::vector<int64_t> origins;
  // Depth tiles start at multiples of this (the whole-tensor tree's 256 lanes: lane t sums the
  // elements j with j % 256 == t, so a tile starting at such a multiple gives each lane its own).
  int64_t depth_granule = 1;
  bool depth_splits = true;  // false: every tile takes the whole depth (softmax rows)
  bool cols_split = true;    // false: every tile takes all columns (cross entropy's classes)
  // f32 elements of scratch the tiles carry between them beyond the output (the tree's lanes).
  int64_t scratch_elements = 0;
  // The binding whose window also takes, before a tile along depth that continues, the element
  // one step back along depth (a running sum's output: the sum the tile continues from); -1: none.
  int reads_back = -1;
  // A batched matmul's products (or a copy's boxes): `batches` of them over the output's batch
  // dims `batch_dims`; per binding, the elements one step along each batch dim moves its product
  // (0: broadcast; a copy's may be negative, a flipped or backwards-sliced axis).
  int64_t batches = 1;
  std::vector<int64_t> batch_dims;
  std::vector<std::vector<int64_t>> batch_strides;
  // A copy in parts, one after another: each a box of its own whose layouts bind the input it
  // moves and the output (every other input one element, which the tile does not read); a tile is
  // of one part (Tile::part). Empty: one box. An empty input moves nothing and has no part.
  std::vector<TileSpace> parts;
  enum class Parts {
    kJoin,     // concat, stack: a part per non-empty input, into its sub-box of the output
    kPad,      // the pad value over the whole output, then the input moved inside
    kScatter,  // slice_scatter: the base over the whole output, then the source into its window
  };
  Parts parts_are = Parts::kJoin;
  // Of a copy, the input its box moves (a concat's part: its input); -1: none, the box is written
  // with the pad value (pad's first part, before its second moves the input inside).
  int copy_input = 0;
};

// The tile space of a layout copy — transpose, permute, slice (negative steps too), flip, reshape —
// of a 4-byte dtype: its output axes merged where they move together in input and output, the
// inner three the box, any outer ones a batch of boxes (as a batched matmul's products: batches,
// batch_dims, batch_strides); nullopt otherwise (kernel/tiling_copy.cpp). A negative step or a
// flip gives the input a negative stride: a box's input window reaches below its first element
// (TileRange).
std::optional<TileSpace> CopyTileSpace(const Module& m, const Kernel& k);

// The tile space of a concat or stack of 4-byte elements, in one part per non-empty input (each
// an affine copy into its sub-box of the output, its axes merged as CopyTileSpace merges them);
// nullopt when the output is empty (kernel/tiling_copy.cpp).
std::optional<TileSpace> JoinTileSpace(const Module& m, const Kernel& k);

// The tile space of a constant pad of 4-byte elements, in two parts: the whole output written
// with the value, then the input moved into its place inside (its axes merged as CopyTileSpace
// merges them; an empty input has no second part); nullopt when the output is empty
// (kernel/tiling_copy.cpp).
std::optional<TileSpace> PadTileSpace(const Module& m, const Kernel& k);

// The tile space of a slice_scatter of 4-byte elements, in two parts: the base copied over the
// whole output, then the source moved into its strided window (its axes merged as CopyTileSpace
// merges them; a negative step gives the output a negative stride; an empty source has no second
// part); nullopt when the output is empty (kernel/tiling_copy.cpp).
std::optional<TileSpace> ScatterTileSpace(const Module& m, const Kernel& k);

// Where binding `b`'s product `index` (of the batch, row-major over batch_dims) starts.
int64_t BatchOffset(const TileSpace& s, int b, int64_t index);

// The tile space of `k`, or nullopt when the kernel has no tiles: only f32 matmuls (rank 2 with
// either operand possibly read transposed, or batched, broadcast batch dims included), f32 sums
// and means (whole-tensor or along an axis), f32 softmax and log_softmax, f32 cumsum, f32
// cross_entropy (alone, or merged with its gradient: merge-loss-gradient) and f32
// cross_entropy_grad (whole rows), and the layout copies of CopyTileSpace, JoinTileSpace,
// PadTileSpace and ScatterTileSpace.
std::optional<TileSpace> TileSpaceOf(const Module& m, const Kernel& k);

struct Tile {
  int64_t row0 = 0, rows = 0, col0 = 0, cols = 0, depth0 = 0, depth = 0;
  int64_t batch0 = 0, batch_count = 1;  // the products of the batch it takes
  // Of a softmax row cut along itself, which of the row's three passes over its tiles the tile
  // serves: 0 the maximum (and whether the row is NaN), 1 the sum of exp, 2 the writes.
  int pass = 0;
  int part = -1;  // of a space in parts (TileSpace::parts), the part the tile is of
  // Starts from the partial sums an earlier tile along depth stored (of a space that sums along
  // depth: not a copy's).
  bool Continues() const { return depth0 > 0; }
  // Finishes its outputs: the last tile along depth.
  bool Finishes(const TileSpace& s) const { return depth0 + depth >= s.depth; }
};

// The box tile `t` is of: its part's (TileSpace::parts), or the space's own.
const TileSpace& SpaceOf(const TileSpace& s, const Tile& t);

// Elements [first, last) of binding `b` that tile `t` touches (first == last: none), over all
// the tile's products.
std::pair<int64_t, int64_t> TileRange(const TileSpace& s, int b, const Tile& t);

struct Tiling {
  TileSpace space;
  int64_t tile_rows = 0, tile_cols = 0, tile_depth = 0;  // the full tiles' extent
  int64_t tile_batches = 1;  // products per tile (whole ones when the batch is cut alone)
  int passes = 1;            // 3: softmax rows cut along themselves, each row's tiles thrice
  std::vector<Tile> tiles;   // in dispatch order; along depth, increasing

  int64_t TilesAlong(int axis) const;
  // "12 tiles: 3 of 24 rows x 1 of 64 columns x 4 of 16 along K, each depth tile continuing the
  // partial sums of the one before" — what `scellis plan` prints for the kernel.
  std::string Describe() const;
};

// The fewest tiles of `k` whose every binding's window — the range TileRange gives, widened down
// to a multiple of `alignment` bytes — is at most `cap` bytes; nullopt when the kernel has no tile
// space or not even a single row x column x granule tile fits.
std::optional<Tiling> PlanTiles(const Module& m, const Kernel& k, uint64_t cap,
                                uint64_t alignment = kTileAlignment);

}  // namespace scellis::kernel
