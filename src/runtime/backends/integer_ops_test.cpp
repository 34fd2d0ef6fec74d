// Exact integer arithmetic (graph protocol version 3): i32 and u32 operands computed as integers on
// the CPU reference and on SwiftShader, wrapping modulo 2^32, with the extremes among the operands.
// Expected values from NumPy's int32 and uint32 arithmetic (which wraps as two's complement) and
// conversions (astype), copied here; the f32 -> u32 rule (toward zero, saturating, NaN to 0) is
// worked by hand.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "runtime/backends/backends_test.h"

namespace scellis::runtime {
namespace {

using testing::Open;
using testing::PlanFor;

constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax = std::numeric_limits<int32_t>::max();

template <typename T>
std::vector<T> ValuesOf(const HostTensor& t) {
  return {t.view<T>().begin(), t.view<T>().end()};
}

template <typename T>
HostTensor Tensor(DType dtype, const std::vector<T>& values) {
  HostTensor t = HostTensor::Zeros(MakeType({static_cast<int64_t>(values.size())}, dtype));
  std::copy(values.begin(), values.end(), t.view<T>().begin());
  return t;
}

Json Node(int id, const std::string& op, Json fields) {
  fields["id"] = id;
  fields["op"] = op;
  return fields;
}

class IntegerOps : public ::testing::TestWithParam<std::string> {};

TEST_P(IntegerOps, I32WrapsAsTwosComplement) {
  auto exec = Open(GetParam());
  ASSERT_NE(exec, nullptr);
  Json nodes = {
      Node(0, "input", {{"name", "a"}, {"shape", {8}}, {"dtype", "i32"}}),
      Node(1, "input", {{"name", "b"}, {"shape", {8}}, {"dtype", "i32"}}),
      Node(2, "add", {{"a", 0}, {"b", 1}}),
      Node(3, "sub", {{"a", 0}, {"b", 1}}),
      Node(4, "mul", {{"a", 0}, {"b", 1}}),
      Node(5, "neg", {{"a", 0}}),
      Node(6, "maximum", {{"a", 0}, {"b", 1}}),
      Node(7, "minimum", {{"a", 0}, {"b", 1}}),
      Node(8, "clamp", {{"a", 0}, {"min", -100}, {"max", 16777216}}),
      Node(9, "lt", {{"a", 0}, {"b", 1}}),
      Node(10, "sum", {{"a", 0}}),
      Node(11, "cast", {{"a", 0}, {"dtype", "u32"}}),
      Node(12, "cast", {{"a", 0}, {"dtype", "f32"}}),
      Node(13, "add", {{"a", 0}, {"scalar", 7}}),
      // where(a < b, a * b, -a) + 1
      Node(14, "where", {{"cond", 9}, {"a", 4}, {"b", 5}}),
      Node(15, "add", {{"a", 14}, {"scalar", 1}}),
  };
  Json outputs = Json::array();
  for (int id = 2; id <= 13; ++id)
    outputs.push_back({{"name", "o" + std::to_string(id)}, {"id", id}});
  outputs.push_back({{"name", "o15"}, {"id", 15}});
  auto plan = PlanFor({{"version", 3}, {"nodes", nodes}, {"outputs", outputs}}, *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  const std::vector<int32_t> a = {kMin, kMax, 0, -1, 1, 16777217, -16777217, 123456789};
  const std::vector<int32_t> b = {-1, 1, kMin, kMax, -2, 3, 16777217, -987654321};
  auto r = exec->Run(*plan, {{"a", Tensor(DType::kI32, a)}, {"b", Tensor(DType::kI32, b)}});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  auto out = [&](size_t i) -> const HostTensor& { return r->outputs.at(i).second; };
  EXPECT_EQ(ValuesOf<int32_t>(out(0)),
            (std::vector<int32_t>{kMax, kMin, kMin, 2147483646, -1, 16777220, 0, -864197532}));
  EXPECT_EQ(ValuesOf<int32_t>(out(1)), (std::vector<int32_t>{-2147483647, 2147483646, kMin, kMin, 3,
                                                             16777214, -33554434, 1111111110}));
  EXPECT_EQ(ValuesOf<int32_t>(out(2)),
            (std::vector<int32_t>{kMin, kMax, 0, -2147483647, -2, 50331651, -33554433, 67153019}));
  EXPECT_EQ(ValuesOf<int32_t>(out(3)),
            (std::vector<int32_t>{kMin, -2147483647, 0, 1, -1, -16777217, 16777217, -123456789}));
  EXPECT_EQ(ValuesOf<int32_t>(out(4)),
            (std::vector<int32_t>{-1, kMax, 0, kMax, 1, 16777217, 16777217, 123456789}));
  EXPECT_EQ(ValuesOf<int32_t>(out(5)),
            (std::vector<int32_t>{kMin, 1, kMin, -1, -2, 3, -16777217, -987654321}));
  EXPECT_EQ(ValuesOf<int32_t>(out(6)),
            (std::vector<int32_t>{-100, 16777216, 0, -1, 1, 16777216, -100, 16777216}));
  EXPECT_EQ(out(7).type.dtype, DType::kBool);
  EXPECT_EQ(ValuesOf<uint32_t>(out(7)), (std::vector<uint32_t>{1, 0, 0, 1, 0, 0, 1, 0}));
  EXPECT_EQ(out(8).type.dtype, DType::kI32);
  EXPECT_EQ(ValuesOf<int32_t>(out(8)), (std::vector<int32_t>{123456788}));
  EXPECT_EQ(ValuesOf<uint32_t>(out(9)),
            (std::vector<uint32_t>{2147483648u, 2147483647u, 0u, 4294967295u, 1u, 16777217u,
                                   4278190079u, 123456789u}));
  EXPECT_EQ(ValuesOf<float>(out(10)),
            (std::vector<float>{-2147483648.0f, 2147483648.0f, 0.0f, -1.0f, 1.0f, 16777216.0f,
                                -16777216.0f, 123456792.0f}));
  EXPECT_EQ(ValuesOf<int32_t>(out(11)), (std::vector<int32_t>{-2147483641, -2147483642, 7, 6, 8,
                                                              16777224, -16777210, 123456796}));
  // where(a < b, a * b, -a) + 1, from the rows above.
  EXPECT_EQ(ValuesOf<int32_t>(out(12)),
            (std::vector<int32_t>{kMin + 1, -2147483646, 1, -2147483646, 0, -16777216, -33554432,
                                  -123456788}));
}

TEST_P(IntegerOps, U32WrapsModulo2To32) {
  auto exec = Open(GetParam());
  ASSERT_NE(exec, nullptr);
  Json nodes = {
      Node(0, "input", {{"name", "u"}, {"shape", {6}}, {"dtype", "u32"}}),
      Node(1, "input", {{"name", "v"}, {"shape", {6}}, {"dtype", "u32"}}),
      Node(2, "add", {{"a", 0}, {"b", 1}}),
      Node(3, "sub", {{"a", 0}, {"b", 1}}),
      Node(4, "mul", {{"a", 0}, {"b", 1}}),
      Node(5, "maximum", {{"a", 0}, {"b", 1}}),
      Node(6, "minimum", {{"a", 0}, {"b", 1}}),
      Node(7, "ge", {{"a", 0}, {"b", 1}}),
      Node(8, "cast", {{"a", 0}, {"dtype", "i32"}}),
      Node(9, "cast", {{"a", 0}, {"dtype", "f32"}}),
      Node(10, "input", {{"name", "f"}, {"shape", {7}}}),
      Node(11, "cast", {{"a", 10}, {"dtype", "u32"}}),
      Node(12, "masked_fill", {{"a", 0}, {"mask", 7}, {"value", 4294967295u}}),
  };
  Json outputs = Json::array();
  for (int id : {2, 3, 4, 5, 6, 7, 8, 9, 11, 12})
    outputs.push_back({{"name", "o" + std::to_string(id)}, {"id", id}});
  auto plan = PlanFor({{"version", 3}, {"nodes", nodes}, {"outputs", outputs}}, *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  const std::vector<uint32_t> u = {0u, 4294967295u, 2147483648u, 1u, 16777217u, 4000000000u};
  const std::vector<uint32_t> v = {1u, 1u, 2147483648u, 4294967295u, 16777217u, 3u};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> f = {nan, -1.5f, 3.9f, 4294967296.0f, 1e20f, -inf, 4294967040.0f};
  auto r = exec->Run(*plan, {{"u", Tensor(DType::kU32, u)},
                             {"v", Tensor(DType::kU32, v)},
                             {"f", Tensor(DType::kF32, f)}});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  auto out = [&](size_t i) { return r->outputs.at(i).second; };
  EXPECT_EQ(ValuesOf<uint32_t>(out(0)),
            (std::vector<uint32_t>{1u, 0u, 0u, 0u, 33554434u, 4000000003u}));
  EXPECT_EQ(ValuesOf<uint32_t>(out(1)),
            (std::vector<uint32_t>{4294967295u, 4294967294u, 0u, 2u, 0u, 3999999997u}));
  EXPECT_EQ(ValuesOf<uint32_t>(out(2)),
            (std::vector<uint32_t>{0u, 4294967295u, 0u, 4294967295u, 33554433u, 3410065408u}));
  EXPECT_EQ(
      ValuesOf<uint32_t>(out(3)),
      (std::vector<uint32_t>{1u, 4294967295u, 2147483648u, 4294967295u, 16777217u, 4000000000u}));
  EXPECT_EQ(ValuesOf<uint32_t>(out(4)),
            (std::vector<uint32_t>{0u, 1u, 2147483648u, 1u, 16777217u, 3u}));
  EXPECT_EQ(ValuesOf<uint32_t>(out(5)), (std::vector<uint32_t>{0, 1, 1, 0, 1, 1}));
  EXPECT_EQ(ValuesOf<int32_t>(out(6)),
            (std::vector<int32_t>{0, -1, kMin, 1, 16777217, -294967296}));
  EXPECT_EQ(ValuesOf<float>(out(7)), (std::vector<float>{0.0f, 4294967296.0f, 2147483648.0f, 1.0f,
                                                         16777216.0f, 4000000000.0f}));
  // f32 -> u32: NaN 0, toward zero, saturating at 0 and 2^32 - 1; 4294967040 (the largest f32
  // below 2^32) is exact.
  EXPECT_EQ(ValuesOf<uint32_t>(out(8)),
            (std::vector<uint32_t>{0u, 0u, 3u, 4294967295u, 4294967295u, 0u, 4294967040u}));
  EXPECT_EQ(ValuesOf<uint32_t>(out(9)),
            (std::vector<uint32_t>{0u, 4294967295u, 4294967295u, 1u, 4294967295u, 4294967295u}));
}

// index_add on i32 data: exact sums in index order, wrapping.
TEST_P(IntegerOps, IndexAddOnI32IsExact) {
  auto exec = Open(GetParam());
  ASSERT_NE(exec, nullptr);
  Json nodes = {
      Node(0, "input", {{"name", "a"}, {"shape", {3}}, {"dtype", "i32"}}),
      Node(1, "input", {{"name", "index"}, {"shape", {4}}, {"dtype", "i32"}}),
      Node(2, "input", {{"name", "src"}, {"shape", {4}}, {"dtype", "i32"}}),
      Node(3, "index_add", {{"a", 0}, {"index", 1}, {"src", 2}, {"axis", 0}}),
  };
  auto plan = PlanFor(
      {{"version", 4}, {"nodes", nodes}, {"outputs", {{{"name", "out"}, {"id", 3}}}}}, *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  auto r = exec->Run(*plan, {{"a", Tensor(DType::kI32, std::vector<int32_t>{kMax, 16777216, 5})},
                             {"index", Tensor(DType::kI32, std::vector<int32_t>{0, 1, 0, 1})},
                             {"src", Tensor(DType::kI32, std::vector<int32_t>{1, 1, 2, 1})}});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  // kMax + 1 + 2 wraps to kMin + 2; 2^24 + 1 + 1 is exact (f32 would give 2^24).
  EXPECT_EQ(ValuesOf<int32_t>(r->outputs.at(0).second),
            (std::vector<int32_t>{kMin + 2, 16777218, 5}));
}

INSTANTIATE_TEST_SUITE_P(Backends, IntegerOps, ::testing::Values("cpu", "webgpu"));

}  // namespace
}  // namespace scellis::runtime
