// Checkpoints in the safetensors format.
//
// A safetensors file is an 8-byte little-endian header length N, a JSON header of N bytes, and
// a data section holding every tensor's bytes. The header maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data section) and
// may hold "__metadata__", a map of strings to strings.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/host_tensor.h"
#include "base/result.h"

namespace scellis::store {

struct NamedTensor {
  std::string name;
  std::string dtype;           // "F32", "F16", "F64", "I32", "U32", "I64", "U8" or "BOOL"
  std::vector<int64_t> shape;  // empty for a scalar
  std::string bytes;           // the elements, row-major, little-endian
};

// The largest header accepted when decoding, as in the reference implementation.
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;
// Default cap on a checkpoint file read by LoadSafetensors.
inline constexpr uint64_t kSafetensorsDefaultMaxFileBytes = uint64_t{64} << 30;

// Bytes per element of a supported dtype, 0 for any other string.
int SafetensorsDtypeSize(std::string_view dtype);

// The format's name of an engine dtype: F32, F16, I32, U32, BOOL.
const char* SafetensorsDtypeName(DType t);
// An engine tensor as a checkpoint entry. Every dtype's bytes are its storage bytes (little-endian
// IEEE binary32 and binary16, two's complement i32, u32) but bool's: the format stores BOOL as
// one byte per element, the engine a 4-byte 0 or 1.
NamedTensor ToNamedTensor(std::string name, const HostTensor& t);
// A checkpoint entry of an engine dtype as an engine tensor: safetensors-bad-dtype for the
// format's other dtypes (F64, I64, U8), safetensors-bad-shape past the engine's rank or size
// limits, safetensors-bad-value for a BOOL byte other than 0 or 1; each points at /name.
Result<HostTensor> ToHostTensor(const NamedTensor& nt);

// Checks that tensors can be encoded: names non-empty, distinct, valid UTF-8 and not
// "__metadata__" (safetensors-bad-entry, safetensors-duplicate-key), dtypes supported
// (safetensors-bad-dtype), dimensions non-negative with bytes.size() equal to their product
// times the element size (safetensors-bad-shape), metadata valid UTF-8 (safetensors-bad-metadata).
// Reports every problem, each pointing at the tensor (/name) or metadata key.
Status CheckTensors(const std::vector<NamedTensor>& tensors,
                    const std::map<std::string, std::string>& metadata);

// The canonical file for `tensors` and `metadata`: tensors sorted by name, laid out in that order
// without gaps; the header is compact JSON with sorted keys, "__metadata__" only when metadata is
// non-empty, padded with spaces to a multiple of 8 bytes so the data section is 8-aligned. Equal
// inputs in any order give identical bytes. The input must pass CheckTensors; otherwise the file
// is still written but will not decode.
std::string EncodeSafetensors(const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata);

// CheckTensors, then EncodeSafetensors written with WriteFileAtomic (write-failed on failure).
Status SaveSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

// Decodes a safetensors file held in memory, treating it as hostile. Returns the tensors sorted
// by name and, when `metadata` is not null and decoding succeeds, replaces *metadata with the
// header's "__metadata__" (empty when absent). Diagnostics, with JSON pointers into the header:
//   safetensors-truncated         fewer than 8 bytes, or the header runs past the end
//   safetensors-header-too-large  the header length exceeds kSafetensorsMaxHeaderBytes
//   safetensors-bad-header        not JSON, not an object, not starting with '{', or nested
//                                 deeper than the format ever needs
//   safetensors-duplicate-key     a key appears twice in one object
//   safetensors-bad-entry         an entry is not an object of exactly dtype, shape, data_offsets
//   safetensors-bad-dtype         a dtype other than F32, F16, F64, I32, U32, I64, U8, BOOL
//   safetensors-bad-shape         a dimension that is not a non-negative integer, or a size that
//                                 overflows
//   safetensors-bad-offsets       offsets that are not [begin, end] with end - begin the tensor's
//                                 size, or that overlap, leave gaps, or do not cover the data
//                                 section exactly
//   safetensors-bad-metadata      "__metadata__" is not an object of strings
// Every problem with the entries is reported, not just the first.
Result<std::vector<NamedTensor>> DecodeSafetensors(std::string_view file,
                                                   std::map<std::string, std::string>* metadata);

// Reads the file at `path` and decodes it with DecodeSafetensors. Only a regular file is read, and
// its data section only after the header has been decoded and checked against the file's size, so
// a file that is not a checkpoint costs a few bytes of reading. Besides DecodeSafetensors'
// diagnostics: file-not-found, file-too-large above max_bytes, read-failed (not a regular file,
// or unreadable).
Result<std::vector<NamedTensor>> LoadSafetensors(
    const std::string& path, std::map<std::string, std::string>* metadata,
    uint64_t max_bytes = kSafetensorsDefaultMaxFileBytes);

}  // namespace scellis::store
