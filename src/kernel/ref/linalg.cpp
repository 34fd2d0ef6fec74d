// Matrix products: every output element accumulates along K in increasing order, one rounding per
// multiply and per add (no FMA contraction: the build forbids it). The work is register tiles of
// outputs whose vector lanes run across columns (matmul_tile.inc), each lane keeping that order,
// so the bits are those of the plain loop for every instruction set and thread count.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {
namespace {

// The tile compiled for the instruction sets the machine may have; one is chosen at run time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SCELLIS_TILE_X86 1
#pragma GCC push_options
#pragma GCC target("avx512f")
namespace avx512 {
#define SCELLIS_TILE_VECTOR_BYTES 64
#define SCELLIS_TILE_ROWS 8
#include "kernel/ref/matmul_tile.inc"
#undef SCELLIS_TILE_VECTOR_BYTES
#undef SCELLIS_TILE_ROWS
}  // namespace avx512
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2")
namespace avx2 {
#define SCELLIS_TILE_VECTOR_BYTES 32
#define SCELLIS_TILE_ROWS 4
#include "kernel/ref/matmul_tile.inc"
#undef SCELLIS_TILE_VECTOR_BYTES
#undef SCELLIS_TILE_ROWS
}  // namespace avx2
#pragma GCC pop_options
#endif

namespace base_isa {
#define SCELLIS_TILE_VECTOR_BYTES 16
#define SCELLIS_TILE_ROWS 4
#include "kernel/ref/matmul_tile.inc"
#undef SCELLIS_TILE_VECTOR_BYTES
#undef SCELLIS_TILE_ROWS
}  // namespace base_isa

// Output rows per task of the fixed partition (with the column panels of the tile's width).
constexpr int64_t kRowsPerTask = 64;
// Products of fewer multiply-adds than this run on the calling thread.
constexpr int64_t kSerialProduct = int64_t{1} << 20;

template <typename T, typename TileT>
void MatmulTiled(const OpArgs<T>& a) {
  const TensorType& ta = a.in_type(0);
  const TensorType& tb = a.in_type(1);
  const TensorType& to = a.node->type;
  const int64_t M = ta.dims[ta.rank() - 2].size, K = ta.dims[ta.rank() - 1].size;
  const int64_t N = tb.dims[tb.rank() - 1].size;
  std::vector<int64_t> out_sizes = to.sizes();
  std::vector<int64_t> batch(out_sizes.begin(), out_sizes.end() - 2);
  std::vector<int64_t> sizes_a = ta.sizes(), sizes_b = tb.sizes();
  std::vector<int64_t> batch_a(sizes_a.begin(), sizes_a.end() - 2);
  std::vector<int64_t> batch_b(sizes_b.begin(), sizes_b.end() - 2);
  std::vector<int64_t> sa = BroadcastStrides(batch_a, batch), sb = BroadcastStrides(batch_b, batch);
  int64_t batches = 1;
  for (int64_t s : batch) batches *= s;
  if (M == 0 || N == 0) return;
  // A folded transpose (rank 2 only) reads its operand with swapped strides.
  const bool a_transposed = a.is_transposed(0), b_transposed = a.is_transposed(1);
  const int64_t panels = (N + TileT::kColumns - 1) / TileT::kColumns;
  const int64_t row_blocks = (M + kRowsPerTask - 1) / kRowsPerTask;
  // A small product costs less than waking threads: it runs here.
  const Parallel serial(1);
  const Parallel& parallel = batches * M * N * K < kSerialProduct ? serial : *a.parallel;
  parallel.For(batches * panels * row_blocks, [&](int64_t c) {
    const int64_t row_block = c % row_blocks, panel = c / row_blocks % panels;
    const int64_t bi = c / row_blocks / panels;
    std::vector<int64_t> idx = Unravel(bi, batch);
    int64_t off_a = 0, off_b = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      off_a += idx[d] * sa[d];
      off_b += idx[d] * sb[d];
    }
    thread_local std::vector<T> pack;
    if (pack.size() < static_cast<size_t>(K * TileT::kColumns))
      pack.resize(static_cast<size_t>(K * TileT::kColumns));
    const int64_t r0 = row_block * kRowsPerTask, r1 = std::min(M, r0 + kRowsPerTask);
    TileT::Panel(a.inputs[0] + off_a * M * K, a.inputs[1] + off_b * K * N,
                 a.output + bi * M * N, M, K, N, a_transposed, b_transposed, r0, r1,
                 panel * TileT::kColumns, pack.data());
  });
}

template <typename T>
void Matmul(const OpArgs<T>& a) {
  switch (MachineVectorIsa()) {
#ifdef SCELLIS_TILE_X86
    case VectorIsa::kAvx512:
      return MatmulTiled<T, avx512::Tile<T>>(a);
    case VectorIsa::kAvx2:
      return MatmulTiled<T, avx2::Tile<T>>(a);
#endif
    default:
      return MatmulTiled<T, base_isa::Tile<T>>(a);
  }
}

}  // namespace

void AddLinalgOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"matmul", {Matmul<float>, Matmul<double>}});
}

}  // namespace scellis::kernel::ref
