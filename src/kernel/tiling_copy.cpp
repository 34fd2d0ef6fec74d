// The tile space of a layout copy (transpose, permute, slice, flip, a reshape that is a kernel):
// output element (x_0, ..., x_n) reads input element origin + sum x_d * in_stride_d, so both
// operands are affine in the output's coordinates (a flip's or a negative step's stride is
// negative: the box's first element is the highest of its input window). Axes that move together in
// both (an axis whose stride is the next one's times its size, in input and output alike) merge,
// and up to three merged axes are the box; a tile, a sub-box, binds the window of each operand its
// box spans, and moves its elements as the untiled kernel does: the same bits.
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

}  // namespace

std::optional<TileSpace> CopyTileSpace(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kOp || k.inputs.size() != 1 || !k.extra_outputs.empty())
    return std::nullopt;
  // Windows are counted in 4-byte elements: f32, i32, u32 and bool (stored as u32).
  const DType t = m.graph().at(k.output).type.dtype;
  if (StorageBytes(1, t) != 4 || m.graph().at(k.inputs[0]).type.dtype != t) return std::nullopt;
  std::optional<AffineCopy> c = AffineCopyOf(m, k);
  if (!c) return std::nullopt;
  // Merged axes, outermost first: size, the output's stride, the input's.
  const std::vector<int64_t> out_strides = RowMajorStrides(c->sizes);
  std::vector<std::array<int64_t, 3>> axes;
  for (size_t d = 0; d < c->sizes.size(); ++d) {
    if (c->sizes[d] == 1) continue;
    if (c->sizes[d] == 0) return std::nullopt;  // nothing to copy: bound whole
    const std::array<int64_t, 3> axis = {c->sizes[d], out_strides[d], c->in_strides[d]};
    if (!axes.empty() && axes.back()[1] == axis[0] * axis[1] &&
        axes.back()[2] == axis[0] * axis[2]) {
      axes.back() = {axes.back()[0] * axis[0], axis[1], axis[2]};
      continue;
    }
    axes.push_back(axis);
  }
  if (axes.size() > 3) return std::nullopt;
  while (axes.size() < 3) axes.insert(axes.begin(), std::array<int64_t, 3>{1, 0, 0});
  TileSpace s;
  s.kind = TileSpace::Kind::kCopy;
  s.rows = axes[0][0];
  s.cols = axes[1][0];
  s.depth = axes[2][0];
  s.layouts = {TileStrides{axes[0][2], axes[1][2], axes[2][2]},
               TileStrides{axes[0][1], axes[1][1], axes[2][1]}};
  s.origins = {c->in_origin, 0};
  return s;
}

}  // namespace scellis::kernel
