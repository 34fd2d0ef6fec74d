// Matrix products: every output element accumulates along K in increasing order, one rounding per
// multiply and per add (no FMA contraction: the build forbids it).
#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {
namespace {

template <typename T>
void Matmul(const OpArgs<T>& a) {
  const TensorType& ta = a.in_type(0);
  const TensorType& tb = a.in_type(1);
  const TensorType& to = a.node->type;
  int64_t M = ta.dims[ta.rank() - 2].size, K = ta.dims[ta.rank() - 1].size;
  int64_t N = tb.dims[tb.rank() - 1].size;
  std::vector<int64_t> out_sizes = to.sizes();
  std::vector<int64_t> batch(out_sizes.begin(), out_sizes.end() - 2);
  std::vector<int64_t> sizes_a = ta.sizes(), sizes_b = tb.sizes();
  std::vector<int64_t> batch_a(sizes_a.begin(), sizes_a.end() - 2);
  std::vector<int64_t> batch_b(sizes_b.begin(), sizes_b.end() - 2);
  std::vector<int64_t> sa = BroadcastStrides(batch_a, batch), sb = BroadcastStrides(batch_b, batch);
  int64_t batches = 1;
  for (int64_t s : batch) batches *= s;
  // Rows of all batches form the fixed partition.
  int64_t rows = batches * M;
  const int64_t rows_per_chunk = 16;
  a.parallel->For((rows + rows_per_chunk - 1) / rows_per_chunk, [&](int64_t c) {
    std::vector<T> acc(static_cast<size_t>(N));
    for (int64_t r = c * rows_per_chunk; r < std::min(rows, (c + 1) * rows_per_chunk); ++r) {
      int64_t bi = r / M, i = r % M;
      std::vector<int64_t> idx = Unravel(bi, batch);
      int64_t off_a = 0, off_b = 0;
      for (size_t d = 0; d < idx.size(); ++d) {
        off_a += idx[d] * sa[d];
        off_b += idx[d] * sb[d];
      }
      // A folded transpose (rank 2 only) reads its operand with swapped strides.
      const bool ta = a.is_transposed(0), tb = a.is_transposed(1);
      const T* A = a.inputs[0] + off_a * M * K;
      const T* B = a.inputs[1] + off_b * K * N;
      std::fill(acc.begin(), acc.end(), T(0));
      // k-outer loop keeps the order along K increasing for each output element.
      for (int64_t k = 0; k < K; ++k) {
        T av = ta ? A[k * M + i] : A[i * K + k];
        if (tb) {
          for (int64_t j = 0; j < N; ++j) acc[j] += av * B[j * K + k];
        } else {
          const T* Brow = B + k * N;
          for (int64_t j = 0; j < N; ++j) acc[j] += av * Brow[j];
        }
      }
      std::copy(acc.begin(), acc.end(), a.output + r * N);
    }
  });
}

}  // namespace

void AddLinalgOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"matmul", {Matmul<float>, Matmul<double>}});
}

}  // namespace scellis::kernel::ref
