// Element-by-element comparison of a GPU result with the CPU reference.
#pragma once

#include <cstdint>
#include <span>

#include "base/determinism.h"

namespace scellis::conform {

struct Comparison {
  int64_t elements = 0;
  int64_t mismatches = 0;  // outside the thresholds (unwritten elements included)
  int64_t unwritten = 0;   // still holding the poison pattern: the kernel never wrote them
  // Largest |got - want| and |got - want| / |want| (the latter over nonzero references), over
  // finite pairs; +inf when a non-finite value stands where a finite one was expected.
  double max_abs = 0;
  double max_rel = 0;
  // The largest error in units of what the thresholds allow at its element: at most 1 exactly
  // when every element passed (+inf for a mismatch where nothing may differ). A receipt records it
  // so that a reader can check a receipt against its own thresholds.
  double max_bound_ratio = 0;
  int64_t first_bad = -1;  // index of the first mismatch
  float first_got = 0, first_want = 0;

  bool ok() const { return mismatches == 0; }
};

// Compares `got` with `want` under `t` (Thresholds::Accepts). An element of `got` whose bits are
// `poison_bits` counts as unwritten, whatever the reference holds there.
//
// For reductions, `magnitude` (when given) holds per element the sum of the magnitudes of its
// terms (Σ|a·b| for a matmul, Σ|x| for a sum): the relative threshold then applies to that, not to
// a result that cancelled to near zero. That is the error bound of a floating-point sum in any
// order or with fused multiply-adds; a kernel that drops or repeats a term still fails it.
Comparison Compare(std::span<const float> got, std::span<const float> want,
                   const policy::Thresholds& t, uint32_t poison_bits,
                   std::span<const float> magnitude = {});

// For integer outputs (i32, u32), whose slots hold the integers' bits: every element must have
// the same bits, and bits equal to `poison_bits` count as unwritten. max_abs is the largest
// difference of the i32 values.
Comparison CompareBits(std::span<const float> got, std::span<const float> want,
                       uint32_t poison_bits);

// True when the two arrays hold the same bits (NaN payloads included).
bool BitIdentical(std::span<const float> a, std::span<const float> b);

}  // namespace scellis::conform
