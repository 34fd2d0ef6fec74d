#include "conform/compare.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace scellis::conform {
namespace {

// A dot product of 100 terms of about ±1 that cancels to nearly zero: the reference rounds twice
// per term, a GPU may round once (FMA). Judged against its own tiny value the difference looks
// huge; against the magnitude of its terms it is rounding.
TEST(Compare, SumsAreJudgedAgainstTheMagnitudeOfTheirTerms) {
  const policy::Thresholds prod = policy::ResolveThresholds(policy::ToleranceClass::kDefault,
                                                            policy::Tier::kProd);  // 1e-5, 1e-4
  std::vector<float> want = {-0.00238f}, got = {-0.00236f};                        // 2e-5 apart
  std::vector<float> magnitude = {100.0f};
  EXPECT_FALSE(Compare(got, want, prod, 0).ok());
  EXPECT_TRUE(Compare(got, want, prod, 0, magnitude).ok());
  // Dropping one of the terms (about 1 in size) is not rounding: it still fails.
  std::vector<float> dropped = {-0.00238f + 0.9f};
  EXPECT_FALSE(Compare(dropped, want, prod, 0, magnitude).ok());
  // Non-finite values never pass on magnitude.
  std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN()};
  EXPECT_FALSE(Compare(nan, want, prod, 0, magnitude).ok());
}

// NaN agrees only with NaN, and infinities only with themselves, whatever the tolerance.
TEST(Compare, NanAgreesWithNanOnly) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const policy::Thresholds loose =
      policy::ResolveThresholds(policy::ToleranceClass::kLoose, policy::Tier::kFast);
  std::vector<float> want = {nan, 1.0f, inf};
  EXPECT_TRUE(Compare(std::vector<float>{nan, 1.0f, inf}, want, loose, 0).ok());
  EXPECT_EQ(Compare(std::vector<float>{0.0f, 1.0f, inf}, want, loose, 0).mismatches, 1);
  EXPECT_EQ(Compare(std::vector<float>{nan, nan, inf}, want, loose, 0).mismatches, 1);
  EXPECT_EQ(Compare(std::vector<float>{nan, 1.0f, -inf}, want, loose, 0).mismatches, 1);
  EXPECT_EQ(Compare(std::vector<float>{nan, 1.0f, nan}, want, loose, 0).mismatches, 1);
}

// Integer outputs compare as bits: values no f32 tells apart (2^24 and 2^24 + 1), i32 bit
// patterns that are NaN or -0 as floats (2^31 - 1, -2^31 against 0) all count, and the poison
// pattern is an unwritten element.
TEST(Compare, IntegersCompareAsBits) {
  auto slots = [](std::vector<int32_t> v) {
    std::vector<float> s(v.size());
    std::memcpy(s.data(), v.data(), v.size() * 4);
    return s;
  };
  const std::vector<float> want = slots({16777217, 2147483647, INT32_MIN, 5});
  EXPECT_TRUE(CompareBits(want, want, 0x7fc0deadu).ok());
  Comparison c = CompareBits(slots({16777216, 2147483646, 0, 0x7fc0dead}), want, 0x7fc0deadu);
  EXPECT_EQ(c.mismatches, 4);
  EXPECT_EQ(c.unwritten, 1);
  EXPECT_EQ(c.first_bad, 0);
  EXPECT_EQ(c.max_abs, 2147483648.0);
}

}  // namespace
}  // namespace scellis::conform
