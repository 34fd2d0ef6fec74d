#include "base/host_tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace scellis {
namespace {

TEST(HostTensor, DTypeBytesPerDtype) {
  EXPECT_EQ(DTypeBytes(DType::kF32), 4);
  EXPECT_EQ(DTypeBytes(DType::kF16), 2);
  EXPECT_EQ(DTypeBytes(DType::kI32), 4);
  EXPECT_EQ(DTypeBytes(DType::kU32), 4);
  EXPECT_EQ(DTypeBytes(DType::kBool), 4);  // stored as u32 on host and device
  EXPECT_EQ(MakeType({3, 5}, DType::kF16).bytes(), 30);
  EXPECT_EQ(MakeType({3, 5}, DType::kBool).bytes(), 60);
}

TEST(HostTensor, DtypeNamesRoundTrip) {
  for (DType t : {DType::kF32, DType::kF16, DType::kI32, DType::kU32, DType::kBool})
    EXPECT_EQ(ParseDType(DTypeName(t)), t) << DTypeName(t);
  EXPECT_EQ(ParseDType("f64"), std::nullopt);
  EXPECT_EQ(DTypeChoices(), "f32 | f16 | i32 | u32 | bool | q4_k | q6_k");
}

TEST(HostTensor, ViewsCheckTheDtypeWidth) {
  HostTensor i = HostTensor::Zeros(MakeType({4}, DType::kI32));
  EXPECT_EQ(i.view<int32_t>().size(), 4u);
  EXPECT_EQ(i.view<float>().size(), 4u);  // same width: allowed (the bits, not the values)
  EXPECT_THROW(i.view<uint16_t>(), std::logic_error);
  EXPECT_THROW(i.view<double>(), std::logic_error);
  HostTensor h = HostTensor::Zeros(MakeType({3}, DType::kF16));
  EXPECT_EQ(h.view<uint16_t>().size(), 3u);
  EXPECT_THROW(h.view<float>(), std::logic_error);
  // A byte count that does not match the type is caught too.
  HostTensor bad{MakeType({4}), std::vector<std::byte>(12)};
  EXPECT_THROW(bad.view<float>(), std::logic_error);
}

TEST(HostTensor, ValuesConvertByDtype) {
  const std::vector<float> v = {-2.75f, 0.0f, 3.0f, 1e10f, NAN};
  HostTensor i = HostTensor::FromFloats(MakeType({5}, DType::kI32), v);
  EXPECT_EQ(std::vector<int32_t>(i.view<int32_t>().begin(), i.view<int32_t>().end()),
            (std::vector<int32_t>{-2, 0, 3, 2147483647, 0}));  // toward zero, clamped, NaN -> 0
  HostTensor u = HostTensor::FromFloats(MakeType({5}, DType::kU32), v);
  EXPECT_EQ(std::vector<uint32_t>(u.view<uint32_t>().begin(), u.view<uint32_t>().end()),
            (std::vector<uint32_t>{0, 0, 3, 4294967295u, 0}));
  HostTensor b = HostTensor::FromFloats(MakeType({5}, DType::kBool), v);
  EXPECT_EQ(std::vector<uint32_t>(b.view<uint32_t>().begin(), b.view<uint32_t>().end()),
            (std::vector<uint32_t>{1, 0, 1, 1, 1}));
  HostTensor f = HostTensor::FromFloats(MakeType({5}), v);
  EXPECT_EQ(std::memcmp(f.bytes.data(), v.data(), 20), 0);
  EXPECT_EQ(i.ToFloats(), (std::vector<float>{-2, 0, 3, 2147483648.0f, 0}));
}

// Half-precision encodings from the IEEE 754 binary16 format.
TEST(HostTensor, HalfConversions) {
  struct Case {
    float f;
    uint16_t h;
  };
  for (Case c :
       {Case{1.0f, 0x3c00}, Case{-2.0f, 0xc000}, Case{65504.0f, 0x7bff}, Case{0x1p-24f, 0x0001},
        Case{0x1p-14f, 0x0400}, Case{0.0f, 0x0000}, Case{-0.0f, 0x8000}, Case{INFINITY, 0x7c00}}) {
    EXPECT_EQ(FloatToHalf(c.f), c.h) << c.f;
    EXPECT_EQ(HalfToFloat(c.h), c.f) << c.h;
  }
  EXPECT_EQ(FloatToHalf(0.1f), 0x2e66);             // 0.0999755859375, nearest
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);         // halfway past the largest: rounds to infinity
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f), 0x3c00);  // a tie rounds to even
  EXPECT_EQ(FloatToHalf(0x1p-25f), 0x0000);         // a tie below the smallest subnormal: even
  EXPECT_EQ(FloatToHalf(0x1.8p-24f), 0x0002);       // 1.5 units of 2^-24: tie to even (2)
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
}

}  // namespace
}  // namespace scellis
