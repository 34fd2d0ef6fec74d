// Element types and shapes. A dimension may carry a symbol (`N`, `D`) from the document; its size
// is bound when inputs arrive, so every rung below the document works with concrete sizes while
// printers still show the names users wrote.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace scellis {

// Element types. f32 is the only float type kernels compute in; the others are storage types.
// `bool` is stored as a 4-byte u32 (0 or 1) on the host and on the device alike, so uploads stay
// a memcpy and WGSL, which has no bool storage, binds it as array<u32>. f16 is 2 bytes and needs
// the adapter's shader-f16 feature on WebGPU.
//
// q4_k and q6_k are GGUF's k-quant blocks: the values of each row go in super-blocks of 256, each
// stored as one packed block of 144 (q4_k) or 210 (q6_k) bytes. A tensor of a block dtype has the
// shape of its values ([N, K], K a multiple of 256) and holds N * K / 256 blocks, row after row;
// only `input` makes one and only matmul_q reads one (it decodes the blocks as it multiplies).
enum class DType { kF32, kF16, kI32, kU32, kBool, kQ4K, kQ6K };

// Values per block of a block dtype.
inline constexpr int64_t kBlockValues = 256;
inline bool IsBlockDType(DType t) {
  return t == DType::kQ4K || t == DType::kQ6K;
}
// The bytes of one block of a block dtype.
inline int64_t BlockBytes(DType t) {
  return t == DType::kQ4K ? 144 : 210;
}

const char* DTypeName(DType t);
std::optional<DType> ParseDType(const std::string& s);
// "f32 | f16 | i32 | u32 | bool | q4_k | q6_k", for diagnostics.
std::string DTypeChoices();
// The width of one storage unit: an element, or a byte of a block dtype's blocks.
inline int64_t DTypeBytes(DType t) {
  return IsBlockDType(t) ? 1 : t == DType::kF16 ? 2 : 4;
}
// The bytes of `elements` values of dtype `t` (for a block dtype, a whole number of blocks).
inline int64_t StorageBytes(int64_t elements, DType t) {
  return IsBlockDType(t) ? elements / kBlockValues * BlockBytes(t) : elements * DTypeBytes(t);
}

struct Dim {
  int64_t size = 0;
  std::string symbol;  // "" when the document gave a number

  bool operator==(const Dim& o) const { return size == o.size; }
};

// Largest element count of one tensor. Far beyond any device, small enough that byte counts of a
// few tensors never overflow int64.
//
// Zero-sized dimensions are allowed and mean what they mean in PyTorch and NumPy: a tensor with no
// elements (a sum over an empty axis is 0, a mean NaN, a matmul with an empty inner dimension
// zeros). They do not relax the limit: a shape is checked on the product of its non-zero sizes, so
// `[0, 2^40, 2^40]` is as refused as `[2^40, 2^40]` — every stride and every partial product of the
// sizes then stays within kMaxElements, whatever the position of the zero.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;
inline constexpr int kMaxRank = 4;

struct TensorType {
  std::vector<Dim> dims;
  DType dtype = DType::kF32;

  int rank() const { return static_cast<int>(dims.size()); }
  int64_t elements() const;
  int64_t bytes() const { return StorageBytes(elements(), dtype); }
  std::vector<int64_t> sizes() const;
  bool SameShape(const TensorType& o) const;

  // `[N, D]` using symbols where the document named the dimension, `[4, 3]` otherwise.
  std::string ShapeString() const;
  // `[N=4, D=3]`.
  std::string ShapeStringWithSizes() const;
};

TensorType MakeType(const std::vector<int64_t>& sizes, DType dtype = DType::kF32);

// Row-major strides of `sizes`.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& sizes);
// Row-major element `flat` of a tensor of `sizes` as a multi-index, "[1, 0, 2]", for diagnostics.
std::string PositionText(int64_t flat, const std::vector<int64_t>& sizes);

// The element count of `sizes`, computed without overflow; nullopt when a size is negative or
// the product of the non-zero sizes exceeds kMaxElements (see kMaxElements for why zeros do not
// count). Every shape a document declares and every shape an op's rule infers passes through it,
// so elements(), bytes() and RowMajorStrides() of a checked type cannot overflow.
std::optional<int64_t> CheckedElements(const std::vector<int64_t>& sizes);
std::optional<int64_t> CheckedElements(const std::vector<Dim>& dims);
// The byte size of `t`, checked as CheckedElements.
std::optional<int64_t> CheckedBytes(const TensorType& t);

// NumPy broadcasting of two shapes; nullopt when they are incompatible.
std::optional<std::vector<Dim>> BroadcastDims(const std::vector<Dim>& a, const std::vector<Dim>& b);

// Strides with which an input of shape `in` is read at each index of the broadcast output `out`
// (0 along broadcast dimensions), right-aligned as NumPy does. Size = out.size().
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in,
                                      const std::vector<int64_t>& out);

}  // namespace scellis
