#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {
namespace {

// out[idx] = in[permuted idx]; transpose is the permutation (1, 0).
template <typename T>
void PermuteWith(const OpArgs<T>& a, const std::vector<int>& perm) {
  std::vector<int64_t> in_strides = RowMajorStrides(a.in_type(0).sizes());
  std::vector<int64_t> out_sizes = a.node->type.sizes();
  int64_t total = a.node->type.elements();
  a.parallel->For((total + kChunk - 1) / kChunk, [&](int64_t c) {
    for (int64_t i = c * kChunk; i < std::min(total, (c + 1) * kChunk); ++i) {
      std::vector<int64_t> idx = Unravel(i, out_sizes);
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * in_strides[perm[d]];
      a.output[i] = a.inputs[0][off];
    }
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

}  // namespace

void AddLayoutOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"transpose", {Transpose<float>, Transpose<double>}});
  t.push_back({"permute", {Permute<float>, Permute<double>}});
  t.push_back({"reshape", {Reshape<float>, Reshape<double>}});
}

}  // namespace scellis::kernel::ref
