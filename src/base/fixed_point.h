// Fixed-point integer products (matmul_fixed): a and b hold i32 values with `frac_bits` fraction
// bits; a sum of their products is exact as a 128-bit integer (|a * b| <= 2^62, and a sum of at
// most 2^40 of them stays below 2^102), and the result is that sum shifted right by frac_bits,
// rounded half to even. Shared by the check that proves a result fits i32 and the CPU reference,
// so both round alike.
#pragma once

#include <cstdint>
#include <optional>

namespace scellis {

// The range of matmul_fixed's frac_bits.
inline constexpr int kMaxFracBits = 31;

// round_half_even(sum / 2^frac_bits) when it fits i32, else nullopt (an overflow).
inline std::optional<int32_t> FixedPointResult(__int128 sum, int frac_bits) {
  __int128 q = sum >> frac_bits;  // floor: an arithmetic shift
  if (frac_bits > 0) {
    const __int128 r = sum - (q << frac_bits);  // in [0, 2^frac_bits)
    const __int128 half = __int128{1} << (frac_bits - 1);
    if (r > half || (r == half && (q & 1) != 0)) q += 1;
  }
  if (q < INT32_MIN || q > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(q);
}

}  // namespace scellis
