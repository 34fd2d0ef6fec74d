#include "base/host_tensor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace scellis {

void HostTensor::CheckWidth(size_t width) const {
  const int64_t want = DTypeBytes(type.dtype);
  if (static_cast<int64_t>(width) != want) {
    throw std::logic_error(std::string("a ") + DTypeName(type.dtype) + " tensor viewed as " +
                           std::to_string(width) + "-byte elements");
  }
  if (static_cast<int64_t>(bytes.size()) != type.bytes()) {
    throw std::logic_error("a " + type.ShapeStringWithSizes() + " " + DTypeName(type.dtype) +
                           " tensor holds " + std::to_string(bytes.size()) + " bytes");
  }
}

double HostTensor::ValueAt(int64_t i) const {
  switch (type.dtype) {
    case DType::kF32:
      return view<float>()[i];
    case DType::kF16:
      return HalfToFloat(view<uint16_t>()[i]);
    case DType::kI32:
      return view<int32_t>()[i];
    case DType::kU32:
    case DType::kBool:
      return view<uint32_t>()[i];
    case DType::kQ4K:
    case DType::kQ6K:
      return view<uint8_t>()[i];
  }
  return 0;
}

void HostTensor::SetValue(int64_t i, double v) {
  switch (type.dtype) {
    case DType::kF32:
      view<float>()[i] = static_cast<float>(v);
      return;
    case DType::kF16:
      view<uint16_t>()[i] = FloatToHalf(static_cast<float>(v));
      return;
    case DType::kI32:
      view<int32_t>()[i] =
          static_cast<int32_t>(std::isnan(v) ? 0.0 : std::clamp(v, -2147483648.0, 2147483647.0));
      return;
    case DType::kU32:
      view<uint32_t>()[i] =
          static_cast<uint32_t>(std::isnan(v) ? 0.0 : std::clamp(v, 0.0, 4294967295.0));
      return;
    case DType::kBool:
      view<uint32_t>()[i] = v != 0 ? 1u : 0u;
      return;
    case DType::kQ4K:
    case DType::kQ6K:
      view<uint8_t>()[i] = static_cast<uint8_t>(std::isnan(v) ? 0.0 : std::clamp(v, 0.0, 255.0));
      return;
  }
}

HostTensor HostTensor::Zeros(const TensorType& type) {
  return {type, std::vector<std::byte>(static_cast<size_t>(type.bytes()))};
}

HostTensor HostTensor::FromFloats(const TensorType& type, std::span<const float> values) {
  HostTensor t = Zeros(type);
  if (static_cast<int64_t>(values.size()) != type.elements()) {
    throw std::logic_error(std::to_string(values.size()) + " values for a tensor of " +
                           std::to_string(type.elements()) + " elements");
  }
  if (type.dtype == DType::kF32) {
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size_bytes());
    return t;
  }
  for (size_t i = 0; i < values.size(); ++i) t.SetValue(static_cast<int64_t>(i), values[i]);
  return t;
}

HostTensor HostTensor::FromValues(const TensorType& type, std::span<const double> values) {
  HostTensor t = Zeros(type);
  if (static_cast<int64_t>(values.size()) != t.units()) {
    throw std::logic_error(std::to_string(values.size()) + " values for a tensor of " +
                           std::to_string(t.units()) + " storage units");
  }
  for (size_t i = 0; i < values.size(); ++i) t.SetValue(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<float> HostTensor::ToFloats() const {
  if (type.dtype == DType::kF32) {
    std::span<const float> v = view<float>();
    return {v.begin(), v.end()};
  }
  std::vector<float> out(static_cast<size_t>(units()));
  for (int64_t i = 0; i < units(); ++i) out[i] = static_cast<float>(ValueAt(i));
  return out;
}

uint16_t FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // infinity or NaN (keep NaN quiet and non-zero)
    return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds past the largest half: infinity
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): the value in units of 2^-24, rounded to nearest even.
    if (abs < 0x33000000u) return sign;  // below half of the smallest subnormal
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // to units of 2^-24
    uint32_t q = mantissa >> shift;
    const uint32_t rem = mantissa & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return sign | static_cast<uint16_t>(q);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even; a carry
  // into the exponent is the right answer.
  uint32_t h = ((abs >> 13) - (112u << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<uint16_t>(h);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    // Subnormal: value = mant * 2^-24, exact in float.
    float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

}  // namespace scellis
