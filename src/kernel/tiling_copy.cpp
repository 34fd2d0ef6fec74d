// The tile space of a layout copy (transpose, permute, slice, flip, a reshape that is a kernel):
// output element (x_0, ..., x_n) reads input element origin + sum x_d * in_stride_d, so both
// operands are affine in the output's coordinates (a flip's or a negative step's stride is
// negative: the box's first element is the highest of its input window). Axes that move together in
// both (an axis whose stride is the next one's times its size, in input and output alike) merge,
// and the inner three merged axes are the box, any outer ones a batch of such boxes (a permute
// whose axes do not merge into three); a tile, a sub-box of one box or several whole boxes of the
// batch, binds the window of each operand it spans, and moves its elements as the untiled kernel
// does: the same bits. A concat or stack is such a copy of each input into its sub-box of the
// output, a box per input; a constant pad writes its value over the whole output, then moves its
// input inside as such a copy; a slice_scatter copies its base over the whole output, then moves
// its source into the slice's window.
#include "kernel/tiling.h"

namespace scellis::kernel {
namespace {

// A layout op's output axes: their sizes, and per axis the input's stride (elements one step
// along the output axis moves in the input) and the input element output element 0 reads.
struct AffineCopy {
  std::vector<int64_t> sizes, in_strides;
  int64_t in_origin = 0;
};

std::vector<int64_t> IntsOf(const Json& list) {
  std::vector<int64_t> v;
  for (const Json& e : list) v.push_back(e.get<int64_t>());
  return v;
}

std::optional<AffineCopy> AffineCopyOf(const Module& m, const Kernel& k) {
  const webir::Node& node = m.graph().at(k.output);
  const std::vector<int64_t> in_sizes = m.graph().at(k.inputs[0]).type.sizes();
  const std::vector<int64_t> in_strides = RowMajorStrides(in_sizes);
  AffineCopy c;
  c.sizes = node.type.sizes();
  if (k.op == "reshape") {
    // The same elements in the same order: one axis of all of them.
    c.sizes = {node.type.elements()};
    c.in_strides = {1};
    return c;
  }
  if (k.op == "transpose" || k.op == "permute") {
    std::vector<int64_t> perm = {1, 0};
    if (k.op == "permute") perm = IntsOf(node.attrs["dims"]);
    if (perm.size() != c.sizes.size() || in_sizes.size() != c.sizes.size()) return std::nullopt;
    for (int64_t p : perm) c.in_strides.push_back(in_strides[static_cast<size_t>(p)]);
    return c;
  }
  if (k.op == "slice") {
    const std::vector<int64_t> start = IntsOf(node.attrs["starts"]),
                               step = IntsOf(node.attrs["steps"]);
    if (start.size() != c.sizes.size() || step.size() != c.sizes.size()) return std::nullopt;
    for (size_t d = 0; d < c.sizes.size(); ++d) {
      if (step[d] == 0) return std::nullopt;
      c.in_strides.push_back(step[d] * in_strides[d]);
      c.in_origin += start[d] * in_strides[d];
    }
    return c;
  }
  if (k.op == "flip") {
    // Output coordinate x of a flipped axis of size n reads input coordinate n - 1 - x.
    if (in_sizes.size() != c.sizes.size()) return std::nullopt;
    c.in_strides = in_strides;
    for (const Json& a : node.attrs["axes"]) {
      const size_t axis = a.get<size_t>();
      if (axis >= c.sizes.size() || c.in_strides[axis] < 0) return std::nullopt;
      c.in_origin += (c.sizes[axis] - 1) * in_strides[axis];
      c.in_strides[axis] = -in_strides[axis];
    }
    return c;
  }
  return std::nullopt;
}

// The box of a copy whose output axes of `sizes` lie at `out_strides` from `out_origin` and read
// the input at `in_strides` from `in_origin`: axes that move together in both merged, the inner
// three the box, any outer ones a batch of boxes (a box per element of the batch, each moved by
// the batch axes' strides); nullopt when nothing is copied.
std::optional<TileSpace> MergedBox(const std::vector<int64_t>& sizes,
                                   const std::vector<int64_t>& in_strides,
                                   const std::vector<int64_t>& out_strides, int64_t in_origin,
                                   int64_t out_origin) {
  // Merged axes, outermost first: size, the output's stride, the input's.
  std::vector<std::array<int64_t, 3>> axes;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (sizes[d] == 0) return std::nullopt;  // nothing to copy: bound whole
    const std::array<int64_t, 3> axis = {sizes[d], out_strides[d], in_strides[d]};
    if (!axes.empty() && axes.back()[1] == axis[0] * axis[1] &&
        axes.back()[2] == axis[0] * axis[2]) {
      axes.back() = {axes.back()[0] * axis[0], axis[1], axis[2]};
      continue;
    }
    axes.push_back(axis);
  }
  TileSpace s;
  s.batch_strides.resize(2);
  while (axes.size() > 3) {
    const std::array<int64_t, 3>& batch = axes.front();
    s.batches *= batch[0];
    s.batch_dims.push_back(batch[0]);
    s.batch_strides[0].push_back(batch[2]);
    s.batch_strides[1].push_back(batch[1]);
    axes.erase(axes.begin());
  }
  if (s.batch_dims.empty()) s.batch_strides.clear();
  while (axes.size() < 3) axes.insert(axes.begin(), std::array<int64_t, 3>{1, 0, 0});
  s.kind = TileSpace::Kind::kCopy;
  s.rows = axes[0][0];
  s.cols = axes[1][0];
  s.depth = axes[2][0];
  s.layouts = {TileStrides{axes[0][2], axes[1][2], axes[2][2]},
               TileStrides{axes[0][1], axes[1][1], axes[2][1]}};
  s.origins = {in_origin, out_origin};
  return s;
}

// Windows are counted in 4-byte elements: f32, i32, u32 and bool (stored as u32).
bool FourByteCopy(const Module& m, const Kernel& k) {
  const DType t = m.graph().at(k.output).type.dtype;
  if (StorageBytes(1, t) != 4) return false;
  for (int in : k.inputs)
    if (m.graph().at(in).type.dtype != t) return false;
  return true;
}

// `box` (binding the input it moves, then the output) as the part of a copy of `inputs` inputs
// that moves input `p`: every other input one element, which its tiles do not read.
TileSpace PartOf(const TileSpace& box, size_t inputs, int p) {
  TileSpace part = box;
  part.layouts.assign(inputs + 1, TileStrides{0, 0, 0});
  part.origins.assign(inputs + 1, 0);
  part.layouts[static_cast<size_t>(p)] = box.layouts[0];
  part.origins[static_cast<size_t>(p)] = box.origins[0];
  part.layouts[inputs] = box.layouts[1];
  part.origins[inputs] = box.origins[1];
  part.copy_input = p;
  if (!box.batch_dims.empty()) {
    part.batch_strides.assign(inputs + 1, std::vector<int64_t>(box.batch_dims.size(), 0));
    part.batch_strides[static_cast<size_t>(p)] = box.batch_strides[0];
    part.batch_strides[inputs] = box.batch_strides[1];
  }
  return part;
}

}  // namespace

std::optional<TileSpace> CopyTileSpace(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kOp || k.inputs.size() != 1 || !k.extra_outputs.empty() ||
      !FourByteCopy(m, k))
    return std::nullopt;
  std::optional<AffineCopy> c = AffineCopyOf(m, k);
  if (!c) return std::nullopt;
  return MergedBox(c->sizes, c->in_strides, RowMajorStrides(c->sizes), c->in_origin, 0);
}

std::optional<TileSpace> JoinTileSpace(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kOp || (k.op != "concat" && k.op != "stack") || k.inputs.empty() ||
      !k.extra_outputs.empty() || !FourByteCopy(m, k))
    return std::nullopt;
  // The output as [outer, along, inner] around the joined axis; input p as [outer, length, inner]
  // (a stacked input's length is 1), at `offset` along the axis.
  const webir::Node& node = m.graph().at(k.output);
  const std::vector<int64_t> sizes = node.type.sizes();
  const size_t axis = node.attrs["axis"].get<size_t>();
  if (axis >= sizes.size() || node.type.elements() == 0) return std::nullopt;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= sizes[d];
  for (size_t d = axis + 1; d < sizes.size(); ++d) inner *= sizes[d];
  const int64_t along = sizes[axis];
  const size_t n = k.inputs.size();
  TileSpace s;
  s.kind = TileSpace::Kind::kCopy;
  s.rows = outer;
  s.cols = along;
  s.depth = inner;
  s.layouts.assign(n + 1, TileStrides{0, 0, 0});
  int64_t offset = 0;
  for (size_t p = 0; p < n; ++p) {
    const int64_t length = k.op == "stack" ? 1 : m.graph().at(k.inputs[p]).type.sizes().at(axis);
    // An input empty along the axis (the output is not, so only there) holds no run.
    if (length == 0) continue;
    std::optional<TileSpace> box = MergedBox({outer, length, inner}, {length * inner, inner, 1},
                                             {along * inner, inner, 1}, 0, offset * inner);
    if (!box) return std::nullopt;
    offset += length;
    s.parts.push_back(PartOf(*box, n, static_cast<int>(p)));
  }
  return s;
}

std::optional<TileSpace> PadTileSpace(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kOp || k.op != "pad" || k.inputs.size() != 1 ||
      !k.extra_outputs.empty() || !FourByteCopy(m, k))
    return std::nullopt;
  const webir::Node& node = m.graph().at(k.output);
  const std::vector<int64_t> sizes = node.type.sizes(),
                             in_sizes = m.graph().at(k.inputs[0]).type.sizes();
  const std::vector<int64_t> out_strides = RowMajorStrides(sizes);
  if (in_sizes.size() != sizes.size() || node.attrs["pads"].size() != sizes.size())
    return std::nullopt;
  std::optional<TileSpace> fill =
      MergedBox({node.type.elements()}, {0}, {1}, 0, 0);  // reads nothing
  if (!fill) return std::nullopt;                         // an empty output
  fill->copy_input = -1;
  TileSpace s = *fill;
  s.parts_are = TileSpace::Parts::kPad;
  s.parts = {*fill};
  if (m.graph().at(k.inputs[0]).type.elements() == 0) return s;  // only the value to write
  // Input element x lands at output element x + before on every axis.
  int64_t inside = 0;
  for (size_t d = 0; d < sizes.size(); ++d)
    inside += node.attrs["pads"][d][0].get<int64_t>() * out_strides[d];
  std::optional<TileSpace> copy =
      MergedBox(in_sizes, RowMajorStrides(in_sizes), out_strides, 0, inside);
  if (!copy) return std::nullopt;
  s.parts.push_back(*copy);
  return s;
}

std::optional<TileSpace> ScatterTileSpace(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kOp || k.op != "slice_scatter" || k.inputs.size() != 2 ||
      !k.extra_outputs.empty() || !FourByteCopy(m, k))
    return std::nullopt;
  const webir::Node& node = m.graph().at(k.output);
  const std::vector<int64_t> sizes = node.type.sizes(),
                             src_sizes = m.graph().at(k.inputs[1]).type.sizes();
  const std::vector<int64_t> start = IntsOf(node.attrs["starts"]),
                             step = IntsOf(node.attrs["steps"]);
  if (src_sizes.size() != sizes.size() || start.size() != sizes.size() ||
      step.size() != sizes.size())
    return std::nullopt;
  // The base, element for element; a base element in the window is overwritten by the second
  // part, as the untiled kernel writes the source's there.
  std::optional<TileSpace> base = MergedBox({node.type.elements()}, {1}, {1}, 0, 0);
  if (!base) return std::nullopt;  // an empty output
  TileSpace s = PartOf(*base, 2, 0);
  s.parts_are = TileSpace::Parts::kScatter;
  s.parts = {s};
  if (m.graph().at(k.inputs[1]).type.elements() == 0) return s;  // the window holds nothing
  // Source element y lands at output coordinate start + y * step on every axis.
  const std::vector<int64_t> out_strides = RowMajorStrides(sizes);
  std::vector<int64_t> window_strides;
  int64_t window_origin = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (step[d] == 0) return std::nullopt;
    window_strides.push_back(step[d] * out_strides[d]);
    window_origin += start[d] * out_strides[d];
  }
  std::optional<TileSpace> window =
      MergedBox(src_sizes, RowMajorStrides(src_sizes), window_strides, 0, window_origin);
  if (!window) return std::nullopt;
  s.parts.push_back(PartOf(*window, 2, 1));
  return s;
}

}  // namespace scellis::kernel
