// f16 compute: elementwise ops and sums over f16 tensors on the CPU reference and, where the
// adapter's compiler accepts `enable f16`, on WebGPU (else the run is refused by name; SwiftShader
// refuses it, so there only f16 steps inside f32 kernels run). Each f16 op computes in f32 and
// rounds once to f16; expected bits from NumPy's float16 arithmetic (correctly rounded for + - *
// /), copied here. A NaN is checked as a NaN (its sign and payload are not part of the contract).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>

#include "runtime/backends/backends_test.h"
#include "runtime/backends/select.h"

namespace scellis::runtime {
namespace {

using testing::Open;
using testing::PlanFor;

HostTensor HalfBits(const std::vector<uint16_t>& bits, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(bits.size())};
  HostTensor t = HostTensor::Zeros(MakeType(shape, DType::kF16));
  std::copy(bits.begin(), bits.end(), t.view<uint16_t>().begin());
  return t;
}

bool IsHalfNan(uint16_t h) {
  return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}

void ExpectHalfBits(const HostTensor& t, const std::vector<uint16_t>& want,
                    const std::string& what) {
  ASSERT_EQ(t.type.dtype, DType::kF16) << what;
  std::span<const uint16_t> got = t.view<uint16_t>();
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (IsHalfNan(want[i])) {
      EXPECT_TRUE(IsHalfNan(got[i])) << what << " element " << i;
    } else {
      EXPECT_EQ(got[i], want[i]) << what << " element " << i << ": got 0x" << std::hex << got[i]
                                 << ", want 0x" << want[i];
    }
  }
}

Json Node(int id, const std::string& op, Json fields) {
  fields["id"] = id;
  fields["op"] = op;
  return fields;
}

class HalfOps : public ::testing::TestWithParam<std::string> {};

TEST_P(HalfOps, RoundOnceToNearestEven) {
  auto exec = Open(GetParam());
  ASSERT_NE(exec, nullptr);
  Json nodes = {
      Node(0, "input", {{"name", "a"}, {"shape", {12}}, {"dtype", "f16"}}),
      Node(1, "input", {{"name", "b"}, {"shape", {12}}, {"dtype", "f16"}}),
      Node(2, "add", {{"a", 0}, {"b", 1}}),
      Node(3, "sub", {{"a", 0}, {"b", 1}}),
      Node(4, "mul", {{"a", 0}, {"b", 1}}),
      Node(5, "div", {{"a", 0}, {"b", 1}}),
      Node(6, "maximum", {{"a", 0}, {"b", 1}}),
      Node(7, "minimum", {{"a", 0}, {"b", 1}}),
      Node(8, "neg", {{"a", 0}}),
      Node(9, "relu", {{"a", 0}}),
      Node(10, "lt", {{"a", 0}, {"b", 1}}),
      Node(11, "clamp", {{"a", 0}, {"min", -0.3}, {"max", 1000}}),
      Node(12, "where", {{"cond", 10}, {"a", 0}, {"b", 1}}),
      Node(13, "input", {{"name", "f"}, {"shape", {8}}}),
      Node(14, "cast", {{"a", 13}, {"dtype", "f16"}}),
      Node(15, "cast", {{"a", 0}, {"dtype", "i32"}}),
      Node(16, "input", {{"name", "s"}, {"shape", {7}}, {"dtype", "f16"}}),
      Node(17, "sum", {{"a", 16}}),
  };
  Json outputs = Json::array();
  for (int id : {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15, 17})
    outputs.push_back({{"name", "o" + std::to_string(id)}, {"id", id}});
  auto plan = PlanFor({{"version", 3}, {"nodes", nodes}, {"outputs", outputs}}, *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  // 65504, -65504, 2^-14, 2^-24, 0.1, -0.3333, 1000.5, 2048, 1 + 2^-10, inf, NaN, -0
  const std::vector<uint16_t> a = {0x7bff, 0xfbff, 0x0400, 0x0001, 0x2e66, 0xb555,
                                   0x63d1, 0x6800, 0x3c01, 0x7c00, 0x7e00, 0x8000};
  // 32, 65504, -(2^-14 - 2^-24), 2^-24, 0.2, 3, -0.0999, 1, 1 + 2^-10, 1, 2, 0
  const std::vector<uint16_t> b = {0x5000, 0x7bff, 0x83ff, 0x0001, 0x3266, 0x4200,
                                   0xae65, 0x3c00, 0x3c01, 0x3c00, 0x4000, 0x0000};
  const std::vector<float> f = {1.00048828125f, 70000.0f, 1e-8f,    3.0000001e-8f,
                                -2.5f,          65520.0f, 65519.0f, 0.1f};
  // 2^-14, 2^-24, 0.1, -0.3333, 1000.5, 2048, 1 + 2^-10: 3049.2678 in f32, 3050 in f16
  const std::vector<uint16_t> s = {0x0400, 0x0001, 0x2e66, 0xb555, 0x63d1, 0x6800, 0x3c01};
  auto r = exec->Run(*plan, {{"a", HalfBits(a)},
                             {"b", HalfBits(b)},
                             {"f", HostTensor::FromFloats(MakeType({8}), f)},
                             {"s", HalfBits(s)}});
  if (!r.ok()) {
    // Only an adapter without shader-f16 may refuse, by name, before anything runs.
    ASSERT_EQ(GetParam(), "webgpu");
    EXPECT_EQ(r.errors().front().code, "shader-f16-unavailable") << r.errors().front().Format();
    std::cout << "skipped: " << r.errors().front().message << "\n";
    return;
  }
  auto out = [&](size_t i) -> const HostTensor& { return r->outputs.at(i).second; };
  ExpectHalfBits(out(0),
                 {0x7c00, 0x0000, 0x0001, 0x0002, 0x34cc, 0x4155, 0x63d1, 0x6800, 0x4001, 0x7c00,
                  0x7e00, 0x0000},
                 "add");
  ExpectHalfBits(out(1),
                 {0x7bfe, 0xfc00, 0x07ff, 0x0000, 0xae66, 0xc2ab, 0x63d1, 0x67ff, 0x0000, 0x7c00,
                  0x7e00, 0x8000},
                 "sub");
  ExpectHalfBits(out(2),
                 {0x7c00, 0xfc00, 0x8000, 0x0000, 0x251e, 0xbc00, 0xd63f, 0x6800, 0x3c02, 0x7c00,
                  0x7e00, 0x8000},
                 "mul");
  // The reference divides in f32, correctly rounded, so it is f16 division exactly; WGSL's f32
  // division is within 2.5 ulp of f32, far inside one f16 ulp, but may round differently at a tie.
  const std::vector<uint16_t> quotient = {0x67ff, 0xbc00, 0xbc01, 0x3c00, 0x3800, 0xaf1c,
                                          0xf0e4, 0x6800, 0x3c00, 0x7c00, 0x7e00, 0xfe00};
  if (GetParam() == "cpu") {
    ExpectHalfBits(out(3), quotient, "div");
  } else {
    for (size_t i = 0; i < quotient.size(); ++i) {
      const double want = HalfToFloat(quotient[i]), got = out(3).ValueAt(static_cast<int64_t>(i));
      if (std::isnan(want) || std::isinf(want)) {
        EXPECT_EQ(std::isnan(got), std::isnan(want)) << i;
      } else {
        EXPECT_LE(std::fabs(got - want), std::fabs(want) * 0x1p-10) << i;
      }
    }
  }
  ExpectHalfBits(out(4),
                 {0x7bff, 0x7bff, 0x0400, 0x0001, 0x3266, 0x4200, 0x63d1, 0x6800, 0x3c01, 0x7c00,
                  0x7e00, 0x8000},
                 "maximum");
  ExpectHalfBits(out(5),
                 {0x5000, 0xfbff, 0x83ff, 0x0001, 0x2e66, 0xb555, 0xae65, 0x3c00, 0x3c01, 0x3c00,
                  0x7e00, 0x8000},
                 "minimum");
  ExpectHalfBits(out(6),
                 {0xfbff, 0x7bff, 0x8400, 0x8001, 0xae66, 0x3555, 0xe3d1, 0xe800, 0xbc01, 0xfc00,
                  0xfe00, 0x0000},
                 "neg");
  ExpectHalfBits(out(7),
                 {0x7bff, 0x0000, 0x0400, 0x0001, 0x2e66, 0x0000, 0x63d1, 0x6800, 0x3c01, 0x7c00,
                  0x7e00, 0x8000},
                 "relu");
  EXPECT_EQ(std::vector<uint32_t>(out(8).view<uint32_t>().begin(), out(8).view<uint32_t>().end()),
            (std::vector<uint32_t>{0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0}));
  // The bounds are rounded to f16 where chosen: -0.3 is 0xb4cd, 1000 is 0x63d0.
  ExpectHalfBits(out(9),
                 {0x63d0, 0xb4cd, 0x0400, 0x0001, 0x2e66, 0xb4cd, 0x63d0, 0x63d0, 0x3c01, 0x63d0,
                  0x7e00, 0x8000},
                 "clamp");
  ExpectHalfBits(out(10),
                 {0x5000, 0xfbff, 0x83ff, 0x0001, 0x2e66, 0xb555, 0xae65, 0x3c00, 0x3c01, 0x3c00,
                  0x4000, 0x0000},
                 "where");
  // f32 -> f16: a tie to even (1 + 2^-11 -> 1), overflow to infinity (70000, and 65520, the tie
  // above the largest half), underflow to zero and to the smallest subnormal.
  ExpectHalfBits(out(11), {0x3c00, 0x7c00, 0x0000, 0x0001, 0xc100, 0x7c00, 0x7bff, 0x2e66},
                 "cast to f16");
  EXPECT_EQ(std::vector<int32_t>(out(12).view<int32_t>().begin(), out(12).view<int32_t>().end()),
            (std::vector<int32_t>{65504, -65504, 0, 0, 0, 0, 1000, 2048, 1, 2147483647, 0, 0}));
  ExpectHalfBits(out(13), {0x69f5}, "sum");
}

// An f16 product [3, 5] @ [5, 4]: products and sums in f32 in increasing k, rounded once to f16.
// Expected bits from NumPy (np.float32 products and running sums, then np.float16), copied here;
// 65504 * 2 overflows f16 in the first row, and a subnormal (2^-24) sits in the second.
TEST_P(HalfOps, MatmulSumsInF32AndRoundsOnce) {
  auto exec = Open(GetParam());
  ASSERT_NE(exec, nullptr);
  Json nodes = {
      Node(0, "input", {{"name", "a"}, {"shape", {3, 5}}, {"dtype", "f16"}}),
      Node(1, "input", {{"name", "b"}, {"shape", {5, 4}}, {"dtype", "f16"}}),
      Node(2, "matmul", {{"a", 0}, {"b", 1}}),
  };
  auto plan = PlanFor(
      {{"version", 3}, {"nodes", nodes}, {"outputs", {{{"name", "c"}, {"id", 2}}}}}, *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  const std::vector<uint16_t> a = {0x7bff, 0x3c8d, 0x44f7, 0xc539, 0x446e, 0x3fb0, 0xb2c2, 0x0001,
                                   0xbe4e, 0xc1e7, 0xc222, 0xb838, 0x40a0, 0xc455, 0xc5bb};
  const std::vector<uint16_t> b = {0x4000, 0xc153, 0xbf38, 0xb81f, 0x4388, 0x2179, 0x30ac,
                                   0xad8f, 0x3e69, 0x42d9, 0x4293, 0x3fce, 0xc315, 0x3faa,
                                   0xb67b, 0x3c14, 0x44e8, 0xc7ec, 0xc0e8, 0x3e9f};
  auto r = exec->Run(*plan, {{"a", HalfBits(a, {3, 5})}, {"b", HalfBits(b, {5, 4})}});
  if (!r.ok()) {
    ASSERT_EQ(GetParam(), "webgpu");
    EXPECT_EQ(r.errors().front().code, "shader-f16-unavailable") << r.errors().front().Format();
    std::cout << "skipped: " << r.errors().front().message << "\n";
    return;
  }
  ExpectHalfBits(r->outputs.at(0).second,
                 {0x7c00, 0xfc00, 0xfc00, 0xf81e, 0xc5d9, 0x4b9f, 0x4461, 0xc777, 0xcc4c, 0x52a5,
                  0x4f38, 0xc7c4},
                 "matmul");
}

INSTANTIATE_TEST_SUITE_P(Backends, HalfOps, ::testing::Values("cpu", "webgpu"));

// f16 steps inside a kernel whose ends are f32 need no f16 storage, so they run on an adapter
// whose compiler refuses `enable f16` too: WGSL's round_f16 against the reference's rounding on
// f32 bit patterns spread over the whole range (subnormal halves, ties, overflow, NaN), and one
// f16 product per element, bit for bit.
TEST(HalfOps, InKernelRoundingMatchesTheReferenceBitForBit) {
  Json nodes = {
      Node(0, "input", {{"name", "x"}, {"shape", {40000}}}),
      Node(1, "cast", {{"a", 0}, {"dtype", "f16"}}),
      Node(2, "mul", {{"a", 5}, {"b", 6}}),
      Node(3, "cast", {{"a", 1}, {"dtype", "f32"}}),
      Node(4, "cast", {{"a", 2}, {"dtype", "f32"}}),
      // Each f16 value read by one step only, so none needs a buffer.
      Node(5, "cast", {{"a", 0}, {"dtype", "f16"}}),
      Node(6, "cast", {{"a", 0}, {"dtype", "f16"}}),
  };
  Json doc = {{"version", 3},
              {"nodes", nodes},
              {"outputs", {{{"name", "rounded"}, {"id", 3}}, {{"name", "squared"}, {"id", 4}}}}};
  HostTensor x = HostTensor::Zeros(MakeType({40000}));
  std::span<float> xs = x.view<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    // Every 107375th f32 bit pattern, then halfway points between neighbouring halves (ties).
    xs[i] = i < 20000 ? std::bit_cast<float>(static_cast<uint32_t>(i * 214751u))
                      : (HalfToFloat(static_cast<uint16_t>(i - 20000)) +
                         HalfToFloat(static_cast<uint16_t>(i - 19999))) /
                            2;
  }
  std::vector<std::vector<uint32_t>> bits;
  for (const char* backend : {"cpu", "webgpu"}) {
    auto exec = Open(backend);
    ASSERT_NE(exec, nullptr);
    auto plan = PlanFor(doc, *exec);
    ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
    auto r = exec->Run(*plan, {{"x", x}});
    ASSERT_TRUE(r.ok()) << backend << ": " << r.errors().front().Format();
    for (const auto& [name, t] : r->outputs) {
      std::vector<uint32_t> b;
      for (float v : t.view<float>())
        b.push_back(std::isnan(v) ? 0x7fc00000u : std::bit_cast<uint32_t>(v));
      bits.push_back(std::move(b));
    }
  }
  ASSERT_EQ(bits.size(), 4u);
  for (size_t o = 0; o < 2; ++o) {
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < bits[o].size(); ++i)
      if (bits[o][i] != bits[o + 2][i] && differ++ == 0) first = i;
    EXPECT_EQ(differ, 0u) << "output " << o << " first differs at " << first
                          << " (x = " << xs[first] << ")";
  }
  // Spot checks against the rule: a tie goes to the even half.
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.00048828125f)), 1.0f);
}

}  // namespace
}  // namespace scellis::runtime
