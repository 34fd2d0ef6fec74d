// A tensor on the host: its type and its bytes, row-major, in the dtype's storage layout (bool as
// 4-byte u32 0/1, f16 as IEEE half). Backends move the bytes as they are: an upload is a memcpy.
//
// Typed access goes through view<T>(), which checks that T has the dtype's width — reading an i32
// tensor as float is a bug the view catches rather than a silent reinterpretation. Value-wise
// conversion (documents give numbers; the CPU reference computes in f32 or f64) goes through
// FromFloats / ValueAt / SetValue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/tensor_type.h"

namespace scellis {

struct HostTensor {
  TensorType type;
  std::vector<std::byte> bytes;

  int64_t elements() const { return type.elements(); }
  // The storage units ValueAt and SetValue address: the elements, or for a block dtype (q4_k,
  // q6_k) the bytes of its blocks.
  int64_t units() const { return static_cast<int64_t>(bytes.size()) / DTypeBytes(type.dtype); }

  // The elements as T. Throws std::logic_error (a bug, never user input) when T is not as wide as
  // the dtype or the byte count does not match the type.
  template <class T>
  std::span<const T> view() const {
    CheckWidth(sizeof(T));
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
  template <class T>
  std::span<T> view() {
    CheckWidth(sizeof(T));
    return {reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)};
  }

  // Element i as a number (i32/u32 exactly in a double, bool 0 or 1, f16 widened; a block
  // dtype's byte i).
  double ValueAt(int64_t i) const;
  // Stores `v` converted to the dtype: f32/f16 rounded to nearest even; i32/u32 toward zero and
  // clamped to the type's range, NaN as 0 (as WGSL converts); bool as v != 0.
  void SetValue(int64_t i, double v);

  // A tensor of `type` filled with zero bytes.
  static HostTensor Zeros(const TensorType& type);
  // `values` (one per element) converted to the dtype as by SetValue. f32 is a plain copy.
  static HostTensor FromFloats(const TensorType& type, std::span<const float> values);
  // `values` (one per storage unit: a block dtype takes its bytes) converted to the dtype as by
  // SetValue: exact for integer types.
  static HostTensor FromValues(const TensorType& type, std::span<const double> values);
  // Every storage unit as float (see ValueAt).
  std::vector<float> ToFloats() const;

 private:
  void CheckWidth(size_t width) const;
};

// IEEE binary16 <-> binary32, round to nearest even; NaN stays NaN, overflow becomes infinity.
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);

}  // namespace scellis
