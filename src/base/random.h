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

// The u32 counter hash of the graph ops `uniform` and `dropout`, in integer arithmetic modulo
// 2^32 so that the CPU reference and every WGSL device give the same bits (WGSL has no 64-bit
// integers, hence a 32-bit hash rather than CounterHash above). PcgHash is the PCG-based hash of
// Jarzynski and Olano, "Hash Functions for GPU Rendering" (JCGT 2020); the WGSL twin is in
// kernel/emit/wgsl/random.cpp.
inline uint32_t PcgHash(uint32_t v) {
  const uint32_t s = v * 747796405u + 2891336453u;
  const uint32_t w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

// Bits of element `index` of the stream (seed, step): h(h(index) ^ h(seed ^ h(step))).
inline uint32_t StreamBits(uint32_t seed, uint32_t step, uint32_t index) {
  return PcgHash(PcgHash(index) ^ PcgHash(seed ^ PcgHash(step)));
}

// The top 24 bits of StreamBits over 2^24: uniform in [0, 1), exactly representable in f32.
inline float StreamUniform(uint32_t seed, uint32_t step, uint32_t index) {
  return static_cast<float>(StreamBits(seed, step, index) >> 8) * (1.0f / 16777216.0f);
}

// The step number a fed f32 step value stands for: its integer part, NaN and negatives as 0, values
// beyond the largest f32 below 2^32 as that value.
inline uint32_t StepNumber(double t) {
  if (!(t > 0)) return 0;
  return static_cast<uint32_t>(t < 4294967040.0 ? t : 4294967040.0);
}

}  // namespace scellis
