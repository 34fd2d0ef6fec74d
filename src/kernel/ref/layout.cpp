#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {
namespace {

// out[idx] = in[permuted idx]; transpose is the permutation (1, 0).
template <typename T>
void PermuteWith(const OpArgs<T>& a, const std::vector<int>& perm) {
  std::vector<int64_t> in_strides = RowMajorStrides(a.in_type(0).sizes());
  std::vector<int64_t> out_sizes = a.node->type.sizes();
  SetEachOutput(a, [&](int64_t i) {
    std::vector<int64_t> idx = Unravel(i, out_sizes);
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * in_strides[perm[d]];
    return a.inputs[0][off];
  });
}

template <typename T>
void Transpose(const OpArgs<T>& a) {
  PermuteWith(a, {1, 0});
}

template <typename T>
void Permute(const OpArgs<T>& a) {
  std::vector<int> perm;
  for (const Json& d : a.node->attrs["dims"]) perm.push_back(d.get<int>());
  PermuteWith(a, perm);
}

template <typename T>
void Reshape(const OpArgs<T>& a) {
  std::copy(a.inputs[0], a.inputs[0] + a.node->type.elements(), a.output);
}

// A strided view: output index idx reads input index start + idx * step on every axis (slice
// with its normalized bounds; flip is start n - 1, step -1 on its axes).
struct View {
  std::vector<int64_t> start, step;
};

View SliceView(const webir::Node& node) {
  View v;
  for (const Json& s : node.attrs["starts"]) v.start.push_back(s.get<int64_t>());
  for (const Json& s : node.attrs["steps"]) v.step.push_back(s.get<int64_t>());
  return v;
}

View FlipView(const webir::Node& node, const std::vector<int64_t>& sizes) {
  View v{std::vector<int64_t>(sizes.size(), 0), std::vector<int64_t>(sizes.size(), 1)};
  for (const Json& a : node.attrs["axes"]) {
    size_t axis = a.get<size_t>();
    v.start[axis] = sizes[axis] - 1;
    v.step[axis] = -1;
  }
  return v;
}

template <typename T>
void CopyView(const OpArgs<T>& a, const View& v) {
  std::vector<int64_t> in_strides = RowMajorStrides(a.in_type(0).sizes());
  std::vector<int64_t> out_sizes = a.node->type.sizes();
  SetEachOutput(a, [&](int64_t i) {
    std::vector<int64_t> idx = Unravel(i, out_sizes);
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      off += (v.start[d] + idx[d] * v.step[d]) * in_strides[d];
    return a.inputs[0][off];
  });
}

template <typename T>
void Slice(const OpArgs<T>& a) {
  CopyView(a, SliceView(*a.node));
}

template <typename T>
void Flip(const OpArgs<T>& a) {
  CopyView(a, FlipView(*a.node, a.node->type.sizes()));
}

// out = a, except where the index lies in the slice: there the matching element of src.
template <typename T>
void SliceScatter(const OpArgs<T>& a) {
  const View v = SliceView(*a.node);
  std::vector<int64_t> src_sizes = a.in_type(1).sizes();
  std::vector<int64_t> src_strides = RowMajorStrides(src_sizes);
  std::vector<int64_t> out_sizes = a.node->type.sizes();
  SetEachOutput(a, [&](int64_t i) {
    std::vector<int64_t> idx = Unravel(i, out_sizes);
    int64_t off = 0;
    bool inside = true;
    for (size_t d = 0; d < idx.size() && inside; ++d) {
      int64_t r = idx[d] - v.start[d];
      int64_t q = r / v.step[d];
      inside = r % v.step[d] == 0 && q >= 0 && q < src_sizes[d];
      off += q * src_strides[d];
    }
    return inside ? a.inputs[1][off] : a.inputs[0][i];
  });
}

// out = a where the coordinate falls inside a's place on every axis, else the value (rounded to
// f32 once, as the WGSL literal is; a's dtype holds it, checked by the shape rule).
template <typename T>
void Pad(const OpArgs<T>& a) {
  std::vector<int64_t> in_sizes = a.in_type(0).sizes();
  std::vector<int64_t> in_strides = RowMajorStrides(in_sizes);
  std::vector<int64_t> before;
  for (const Json& p : a.node->attrs["pads"]) before.push_back(p[0].get<int64_t>());
  const double given = a.node->attrs["value"];
  const DType dtype = a.node->type.dtype;
  const T value = IsIntegerDType(dtype) ? IntegerSlot<T>(static_cast<int64_t>(given), dtype)
                                        : static_cast<T>(static_cast<float>(given));
  std::vector<int64_t> out_sizes = a.node->type.sizes();
  SetEachOutput(a, [&](int64_t i) {
    std::vector<int64_t> idx = Unravel(i, out_sizes);
    int64_t off = 0;
    bool inside = true;
    for (size_t d = 0; d < idx.size() && inside; ++d) {
      int64_t x = idx[d] - before[d];
      inside = x >= 0 && x < in_sizes[d];
      off += x * in_strides[d];
    }
    return inside ? a.inputs[0][off] : value;
  });
}

// concat and stack: the output as [outer, along, inner] around the axis; entry k fills the run
// [offset_k, offset_k + length_k) of `along`, its elements in its own row-major order (length_k
// is the entry's size on the axis for concat, 1 for stack, whose entries lack the axis).
template <typename T>
void JoinList(const OpArgs<T>& a) {
  const webir::Node& node = *a.node;
  const std::vector<int64_t> sizes = node.type.sizes();
  const size_t axis = node.attrs["axis"].get<size_t>();
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= sizes[d];
  for (size_t d = axis + 1; d < sizes.size(); ++d) inner *= sizes[d];
  const int64_t along = sizes[axis];
  // The entry holding each position of the axis, and that position's index within the entry.
  std::vector<size_t> entry_of(along);
  std::vector<int64_t> local(along), length(a.inputs.size());
  const bool stack = node.op == "stack";
  for (size_t k = 0, at = 0; k < a.inputs.size(); ++k) {
    length[k] = stack ? 1 : a.in_type(k).sizes()[axis];
    for (int64_t j = 0; j < length[k]; ++j, ++at) {
      entry_of[at] = k;
      local[at] = j;
    }
  }
  SetEachOutput(a, [&](int64_t i) {
    const int64_t x = i % inner, c = (i / inner) % along, o = i / inner / along;
    const size_t k = entry_of[c];
    return a.inputs[k][(o * length[k] + local[c]) * inner + x];
  });
}

}  // namespace

void AddLayoutOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"transpose", {Transpose<float>, Transpose<double>}});
  t.push_back({"permute", {Permute<float>, Permute<double>}});
  t.push_back({"reshape", {Reshape<float>, Reshape<double>}});
  t.push_back({"slice", {Slice<float>, Slice<double>}});
  t.push_back({"slice_scatter", {SliceScatter<float>, SliceScatter<double>}});
  t.push_back({"flip", {Flip<float>, Flip<double>}});
  t.push_back({"pad", {Pad<float>, Pad<double>}});
  t.push_back({"concat", {JoinList<float>, JoinList<double>}});
  t.push_back({"stack", {JoinList<float>, JoinList<double>}});
}

}  // namespace scellis::kernel::ref
