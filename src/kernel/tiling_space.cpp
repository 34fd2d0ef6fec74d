// The tile spaces of the kernels that tile (TileSpaceOf): each kernel's box of rows x columns x
// depth and its bindings' layouts in it, and which kernels tile element for element.
#include "kernel/tiling.h"

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

}  // namespace

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

}  // namespace scellis::kernel
