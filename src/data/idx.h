// IDX dataset files, the format of MNIST and Fashion-MNIST.
//
// An IDX file is a 4-byte magic number (two zero bytes, a type code, the number of dimensions),
// one 32-bit big-endian size per dimension, then the elements, row-major and big-endian. The
// files are usually distributed gzip-compressed; both forms are read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace scellis::data {

// The element type, named by its code in the magic number.
enum class IdxType : uint8_t {
  kU8 = 0x08,
  kI8 = 0x09,
  kI16 = 0x0B,
  kI32 = 0x0C,
  kF32 = 0x0D,
  kF64 = 0x0E,
};

struct IdxArray {
  IdxType type = IdxType::kU8;
  std::vector<int64_t> dims;  // empty for a scalar (0 dimensions, one element)
  // Every element converted to float, row-major. Exact for u8, i8, i16 and f32; i32 and f64
  // round to nearest (f64 beyond the float range becomes +-infinity).
  std::vector<float> values;
};

// Default cap on an IDX file and on its decompressed content (the float values then take at
// most four times as much).
inline constexpr uint64_t kIdxDefaultMaxBytes = uint64_t{2} << 30;

// Decodes an IDX file held in memory, gunzipping it first when it starts with the gzip magic
// 1f 8b (concatenated gzip members are read as one stream), and stopping as soon as the content
// outgrows what its header declares. The input is treated as hostile: every size is checked
// before it is used. Diagnostics:
//   idx-bad-gzip        the gzip stream is corrupt or followed by bytes that are not gzip
//   idx-truncated       the file (or the gzip stream) ends before the header or data does
//   idx-bad-magic       the first two bytes are not zero
//   idx-bad-type        the type code is none of those of IdxType
//   idx-too-large       the decompressed content, or the data the dimensions call for, exceeds
//                       max_bytes (this also catches dimensions whose product overflows)
//   idx-trailing-bytes  bytes follow the data the dimensions call for
Result<IdxArray> DecodeIdx(std::string_view file, uint64_t max_bytes = kIdxDefaultMaxBytes);

// Reads and decodes the IDX file at `path`. Only a regular file is read, and a plain (not gzipped)
// one only after its header has been checked against the file's size; a gzipped one inflates only
// as far as its header allows. Besides DecodeIdx's diagnostics (whose messages then name the
// file), file-not-found, file-too-large and read-failed (not a regular file, or unreadable).
Result<IdxArray> ReadIdx(const std::string& path, uint64_t max_bytes = kIdxDefaultMaxBytes);

// The IDX content of the file at `path`, gunzipped when it is gzipped and checked as ReadIdx checks
// it, but not decoded: what a gzipped file is inflated to once so that IdxRows can read it at
// offsets. ReadIdx's diagnostics.
Result<std::string> InflateIdx(const std::string& path, uint64_t max_bytes = kIdxDefaultMaxBytes);

// Whether the file at `path` starts with the gzip magic 1f 8b.
Result<bool> IsGzipFile(const std::string& path);

// A plain IDX file read by rows (the elements under one index of the first dimension) at their
// offsets, so a dataset can be streamed instead of decoded whole. The header is checked against
// the file's size when it is opened; values are converted exactly as DecodeIdx converts them.
// Besides ReadIdx's diagnostics: idx-gzipped (inflate it first, InflateIdx), idx-no-rows (a
// scalar).
class IdxRows {
 public:
  static Result<IdxRows> Open(const std::string& path, uint64_t max_bytes = kIdxDefaultMaxBytes);
  IdxRows(IdxRows&& o) noexcept;
  IdxRows& operator=(IdxRows&& o) noexcept;
  IdxRows(const IdxRows&) = delete;
  IdxRows& operator=(const IdxRows&) = delete;
  ~IdxRows();

  IdxType type() const { return type_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t rows() const { return dims_.empty() ? 0 : dims_[0]; }
  int64_t row_elements() const { return row_elements_; }
  // Rows first .. first+count into out[0 .. count * row_elements()); `read-failed` when the file
  // cannot be read (or shrank since it was opened).
  Status Read(int64_t first, int64_t count, float* out) const;

 private:
  IdxRows() = default;
  IdxType type_ = IdxType::kU8;
  std::vector<int64_t> dims_;
  int64_t header_bytes_ = 0, element_bytes_ = 1, row_elements_ = 0;
  std::string path_;
  int fd_ = -1;
  mutable std::vector<unsigned char> buffer_;  // the raw bytes of the rows being read
};

// The four files of Fashion-MNIST, as the Debian package dataset-fashion-mnist installs them.
inline constexpr const char* kFashionMnistTrainImages = "train-images-idx3-ubyte.gz";
inline constexpr const char* kFashionMnistTrainLabels = "train-labels-idx1-ubyte.gz";
inline constexpr const char* kFashionMnistTestImages = "t10k-images-idx3-ubyte.gz";
inline constexpr const char* kFashionMnistTestLabels = "t10k-labels-idx1-ubyte.gz";

// Where Fashion-MNIST is installed, if it is: the directory named by the environment variable
// SCELLIS_FASHION_MNIST_DIR when that is set (and then only it, so a wrong setting is noticed
// rather than silently replaced), else /usr/share/datasets/fashion-mnist. A directory counts only
// if all four files are there.
std::optional<std::string> FindFashionMnistDir();

}  // namespace scellis::data
