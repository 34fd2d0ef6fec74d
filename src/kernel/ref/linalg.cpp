// Matrix products: every output element accumulates along K in increasing order, one rounding per
// multiply and per add (no FMA contraction: the build forbids it). The work is register tiles of
// outputs whose vector lanes run across columns (matmul_tile.inc), each lane keeping that order,
// so the bits are those of the plain loop for every instruction set and thread count.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/fixed_point.h"
#include "base/host_tensor.h"
#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {
namespace {

// The tile compiled for the instruction sets the machine may have; one is chosen at run time.
// AVX-512's 32 registers hold 6 rows of 4 vectors (24 accumulators): on the 784-256-10 step's
// products 11 % faster than 8 rows of 2, fewer loads per multiply.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SCELLIS_TILE_X86 1
#pragma GCC push_options
#pragma GCC target("avx512f")
namespace avx512 {
#define SCELLIS_TILE_VECTOR_BYTES 64
#define SCELLIS_TILE_ROWS 6
#define SCELLIS_TILE_VECTORS 4
#include "kernel/ref/matmul_tile.inc"
#undef SCELLIS_TILE_VECTORS
#undef SCELLIS_TILE_VECTOR_BYTES
#undef SCELLIS_TILE_ROWS
}  // namespace avx512
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2")
namespace avx2 {
#define SCELLIS_TILE_VECTOR_BYTES 32
#define SCELLIS_TILE_ROWS 4
#define SCELLIS_TILE_VECTORS 2
#include "kernel/ref/matmul_tile.inc"
#undef SCELLIS_TILE_VECTORS
#undef SCELLIS_TILE_VECTOR_BYTES
#undef SCELLIS_TILE_ROWS
}  // namespace avx2
#pragma GCC pop_options
#endif

namespace base_isa {
#define SCELLIS_TILE_VECTOR_BYTES 16
#define SCELLIS_TILE_ROWS 4
#define SCELLIS_TILE_VECTORS 2
#include "kernel/ref/matmul_tile.inc"
#undef SCELLIS_TILE_VECTORS
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
    TileT::Panel(a.inputs[0] + off_a * M * K, a.inputs[1] + off_b * K * N, a.output + bi * M * N, M,
                 K, N, a_transposed, b_transposed, r0, r1, panel * TileT::kColumns, pack.data());
  });
}

template <typename T>
void MatmulInIsa(const OpArgs<T>& a) {
  switch (MachineVectorIsa()) {
#ifdef SCELLIS_TILE_X86
    case VectorIsa::kAvx512:
      // A product no wider than the AVX2 tile (a layer of 10 classes) computes fewer columns it
      // drops there than in the AVX-512 tile's 64.
      if (a.in_type(1).dims.back().size <= avx2::Tile<T>::kColumns)
        return MatmulTiled<T, avx2::Tile<T>>(a);
      return MatmulTiled<T, avx512::Tile<T>>(a);
    case VectorIsa::kAvx2:
      return MatmulTiled<T, avx2::Tile<T>>(a);
#endif
    default:
      return MatmulTiled<T, base_isa::Tile<T>>(a);
  }
}

// An f16 product: the f16 operands are exact in T, the sums T's, and each result is rounded once
// to f16 (the WGSL kernel loads f16 as f32 and rounds its f32 sum the same way).
template <typename T>
void Matmul(const OpArgs<T>& a) {
  MatmulInIsa(a);
  if (a.node->type.dtype != DType::kF16) return;
  const int64_t n = a.node->type.elements();
  for (int64_t i = 0; i < n; ++i) a.output[i] = RoundToHalf(a.output[i]);
}

// k-quant blocks (GGUF's layouts, 256 values each), decoded as the gguf package's dequantizer
// does: in f32, one rounding per operation, in the same order as kernel/emit/wgsl/linalg.cpp.
float HalfBitsToFloat(uint32_t h) {
  return HalfToFloat(static_cast<uint16_t>(h));
}

// q4_k, 144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for the 8 sub-blocks of
// 32 values, 128 bytes of 4-bit quants (sub-blocks 2p and 2p + 1 share bytes 32p .. 32p + 31, the
// low nibbles the even one). w = (d * sc) * q - (dmin * m).
void DecodeQ4K(const uint8_t* blk, float* w) {
  const float d = HalfBitsToFloat(blk[0] | blk[1] << 8);
  const float dmin = HalfBitsToFloat(blk[2] | blk[3] << 8);
  const uint8_t* scales = blk + 4;
  const uint8_t* qs = blk + 16;
  for (int j = 0; j < 8; ++j) {
    uint32_t sc, m;
    if (j < 4) {
      sc = scales[j] & 63u;
      m = scales[j + 4] & 63u;
    } else {
      sc = (scales[j + 4] & 15u) | (scales[j - 4] >> 6) << 4;
      m = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4;
    }
    const float dsc = d * static_cast<float>(sc);
    const float dm = dmin * static_cast<float>(m);
    const int shift = (j & 1) * 4;
    for (int l = 0; l < 32; ++l) {
      const uint32_t q = (qs[(j >> 1) * 32 + l] >> shift) & 15u;
      w[j * 32 + l] = dsc * static_cast<float>(q) - dm;
    }
  }
}

// q6_k, 210 bytes: 128 bytes of low 4 bits ql, 64 bytes of high 2 bits qh, 16 int8 scales (one
// per 16 values), f16 d. Value v (h = v / 128, r = v % 128): low bits the nibble r / 64 of
// ql[64h + r % 64], high bits the pair r / 32 of qh[32h + r % 32]; w = (d * sc) * (q - 32).
void DecodeQ6K(const uint8_t* blk, float* w) {
  const uint8_t* ql = blk;
  const uint8_t* qh = blk + 128;
  const uint8_t* scales = blk + 192;
  const float d = HalfBitsToFloat(blk[208] | blk[209] << 8);
  for (int v = 0; v < 256; ++v) {
    const int h = v / 128, r = v % 128;
    const uint32_t low = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 15u;
    const uint32_t high = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3u;
    const int q = static_cast<int>(low | high << 4) - 32;
    const float dsc = d * static_cast<float>(static_cast<int8_t>(scales[v / 16]));
    w[v] = dsc * static_cast<float>(q);
  }
}

// out[m, n] = sum over k rising of a[m, k] * w[n, k], from 0. Each task decodes its row n of b
// once into a row of its own (K floats, never the whole weight) and runs every row of a by it.
template <typename T>
void MatmulQ(const OpArgs<T>& a) {
  const TensorType& ta = a.in_type(0);
  const TensorType& tb = a.in_type(1);
  const int64_t M = ta.dims[0].size, K = ta.dims[1].size, N = tb.dims[0].size;
  const int64_t blocks = K / kBlockValues, block_bytes = BlockBytes(tb.dtype);
  const auto* bytes = reinterpret_cast<const uint8_t*>(a.inputs[1]);
  const bool q4 = tb.dtype == DType::kQ4K;
  const Parallel serial(1);
  const Parallel& parallel = M * N * K < kSerialProduct ? serial : *a.parallel;
  parallel.For(N, [&](int64_t n) {
    std::vector<float> w(static_cast<size_t>(K));
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const uint8_t* at = bytes + (n * blocks + blk) * block_bytes;
      if (q4)
        DecodeQ4K(at, w.data() + blk * kBlockValues);
      else
        DecodeQ6K(at, w.data() + blk * kBlockValues);
    }
    for (int64_t m = 0; m < M; ++m) {
      const T* row = a.inputs[0] + m * K;
      T acc = 0;
      for (int64_t k = 0; k < K; ++k) acc = acc + row[k] * static_cast<T>(w[k]);
      a.output[m * N + n] = acc;
    }
  });
}

// matmul_fixed: each sum exact in 128 bits, k rising, then shifted and rounded half to even
// (base/fixed_point.h). The run checked that every result fits i32 before any kernel ran.
template <typename T>
void MatmulFixed(const OpArgs<T>& a) {
  const TensorType& ta = a.in_type(0);
  const TensorType& tb = a.in_type(1);
  const int64_t K = ta.dims[1].size, N = tb.dims[1].size;
  const int frac_bits = a.node->attrs["frac_bits"].template get<int>();
  SetEachOutput(a, [&](int64_t i) {
    const int64_t m = i / N, n = i % N;
    __int128 sum = 0;
    for (int64_t k = 0; k < K; ++k)
      sum += __int128{IntegerOf(a.inputs[0][m * K + k], DType::kI32)} *
             IntegerOf(a.inputs[1][k * N + n], DType::kI32);
    return IntegerSlot<T>(FixedPointResult(sum, frac_bits).value_or(0), DType::kI32);
  });
}

}  // namespace

void AddLinalgOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"matmul", {Matmul<float>, Matmul<double>}});
  t.push_back({"matmul_q", {MatmulQ<float>, MatmulQ<double>}});
  t.push_back({"matmul_fixed", {MatmulFixed<float>, MatmulFixed<double>}});
}

}  // namespace scellis::kernel::ref
