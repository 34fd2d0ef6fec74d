#include "conform/compare.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace scellis::conform {

Comparison Compare(std::span<const float> got, std::span<const float> want,
                   const policy::Thresholds& t, uint32_t poison_bits,
                   std::span<const float> magnitude) {
  Comparison c;
  c.elements = static_cast<int64_t>(want.size());
  const double inf = std::numeric_limits<double>::infinity();
  if (got.size() != want.size()) {
    c.mismatches = c.elements;
    c.max_abs = c.max_rel = c.max_bound_ratio = inf;
    c.first_bad = 0;
    return c;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &got[i], sizeof bits);
    const double g = got[i], w = want[i];
    bool bad = false;
    if (bits == poison_bits) {
      ++c.unwritten;
      bad = true;
      c.max_bound_ratio = inf;
    } else if (!t.Accepts(g, w)) {
      bool within_sum_bound = i < magnitude.size() && std::isfinite(g) && std::isfinite(w) &&
                              std::fabs(g - w) <= t.atol + t.rtol * magnitude[i];
      bad = !within_sum_bound;
    }
    if (std::isfinite(g) && std::isfinite(w)) {
      double abs = std::fabs(g - w);
      c.max_abs = std::max(c.max_abs, abs);
      if (w != 0) c.max_rel = std::max(c.max_rel, abs / std::fabs(w));
      double scale = std::max(std::fabs(w), i < magnitude.size() ? double{magnitude[i]} : 0.0);
      double allowed = t.atol + t.rtol * scale;
      double ratio = abs == 0 ? 0 : (allowed > 0 ? abs / allowed : inf);
      c.max_bound_ratio =
          std::max(c.max_bound_ratio, bad ? std::max(ratio, std::nextafter(1.0, 2.0)) : ratio);
    } else if (bad) {
      c.max_abs = c.max_rel = c.max_bound_ratio = inf;
    }
    if (bad) {
      if (c.first_bad < 0) {
        c.first_bad = static_cast<int64_t>(i);
        c.first_got = got[i];
        c.first_want = want[i];
      }
      ++c.mismatches;
    }
  }
  return c;
}

Comparison CompareBits(std::span<const float> got, std::span<const float> want,
                       uint32_t poison_bits) {
  Comparison c;
  c.elements = static_cast<int64_t>(want.size());
  if (got.size() != want.size()) {
    c.mismatches = c.elements;
    c.max_abs = c.max_rel = c.max_bound_ratio = std::numeric_limits<double>::infinity();
    c.first_bad = 0;
    return c;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t g, w;
    std::memcpy(&g, &got[i], sizeof g);
    std::memcpy(&w, &want[i], sizeof w);
    if (g == w) continue;
    if (g == poison_bits) ++c.unwritten;
    const double diff = std::fabs(static_cast<double>(static_cast<int32_t>(g)) -
                                  static_cast<double>(static_cast<int32_t>(w)));
    c.max_abs = std::max(c.max_abs, diff);
    c.max_bound_ratio = std::numeric_limits<double>::infinity();
    if (c.first_bad < 0) {
      c.first_bad = static_cast<int64_t>(i);
      c.first_got = static_cast<float>(static_cast<int32_t>(g));
      c.first_want = static_cast<float>(static_cast<int32_t>(w));
    }
    ++c.mismatches;
  }
  return c;
}

bool BitIdentical(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

}  // namespace scellis::conform
