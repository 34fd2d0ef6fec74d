// Counter-based random numbers: value i of stream `seed` is a pure function of (seed, i), so the
// same seed gives the same weights on every backend and thread count, and any element can be
// recomputed alone.
#pragma once

#include <cstdint>

namespace scellis {

// SplitMix64 finalizer over the pair; passes BigCrush as a counter-based generator.
inline uint64_t CounterHash(uint64_t seed, uint64_t counter) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + counter + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  z = (z + 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
  return z ^ (z >> 29);
}

// Uniform in [0, 1) with 24 random bits: exactly representable in f32.
inline float CounterUniform(uint64_t seed, uint64_t counter) {
  return static_cast<float>(CounterHash(seed, counter) >> 40) * (1.0f / 16777216.0f);
}

}  // namespace scellis
