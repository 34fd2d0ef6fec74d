// Non-f32 tensors travel as their own bytes: an i32 feed goes through a layout kernel (a pure
// move) and an elementwise kernel (computed in f32, stored as i32) on the CPU reference and on
// SwiftShader, and comes back with the values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "pipeline/compile.h"
#include "runtime/backends/select.h"
#include "runtime/backends/backends_test.h"

namespace scellis::runtime {
namespace {

using testing::Open;
using testing::PlanFor;

class TypedIo : public ::testing::TestWithParam<std::string> {};

TEST_P(TypedIo, I32FeedRoundTrips) {
  auto exec = Open(GetParam());
  ASSERT_NE(exec, nullptr);
  Json doc = {{"version", 2},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "a"}, {"shape", {2, 3}}, {"dtype", "i32"}},
                {{"id", 1}, {"op", "transpose"}, {"a", 0}},
                {{"id", 2}, {"op", "reshape"}, {"a", 1}, {"shape", {6}}}}},
              {"outputs", {{{"name", "t"}, {"id", 1}}, {{"name", "flat"}, {"id", 2}}}}};
  auto plan = PlanFor(doc, *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  HostTensor a = HostTensor::Zeros(MakeType({2, 3}, DType::kI32));
  const std::vector<int32_t> values = {-7, 0, 5, 123456, -4000000, 8388607};
  std::copy(values.begin(), values.end(), a.view<int32_t>().begin());

  auto r = exec->Run(*plan, {{"a", a}});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  const HostTensor& t = r->outputs.at(0).second;
  const HostTensor& flat = r->outputs.at(1).second;
  EXPECT_EQ(t.type.dtype, DType::kI32);
  EXPECT_EQ(t.bytes.size(), 24u);
  EXPECT_EQ(std::vector<int32_t>(t.view<int32_t>().begin(), t.view<int32_t>().end()),
            (std::vector<int32_t>{-7, 123456, 0, -4000000, 5, 8388607}));
  // Beyond 2^24, so a detour through f32 anywhere would show.
  EXPECT_EQ(flat.type.dtype, DType::kI32);
  EXPECT_EQ(std::vector<int32_t>(flat.view<int32_t>().begin(), flat.view<int32_t>().end()),
            (std::vector<int32_t>{-7, 123456, 0, -4000000, 5, 8388607}));
}

// Masks (graph protocol version 3): a comparison and a cast store bool as u32 0/1, a fed bool
// mask selects elements as their bits. Values worked by hand: NaN compares false and casts to
// true, -0 casts to false.
TEST_P(TypedIo, BoolMasksAreU32ZeroOrOne) {
  auto exec = Open(GetParam());
  ASSERT_NE(exec, nullptr);
  Json doc = {
      {"version", 3},
      {"nodes",
       {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {6}}},
        {{"id", 1}, {"op", "input"}, {"name", "m"}, {"shape", {6}}, {"dtype", "bool"}},
        {{"id", 2}, {"op", "gt"}, {"a", 0}, {"scalar", 0}},
        {{"id", 3}, {"op", "full"}, {"shape", Json::array()}, {"value", 7}},
        {{"id", 4}, {"op", "where"}, {"cond", 1}, {"a", 0}, {"b", 3}},
        {{"id", 5}, {"op", "cast"}, {"a", 0}, {"dtype", "bool"}}}},
      {"outputs",
       {{{"name", "gt"}, {"id", 2}}, {{"name", "w"}, {"id", 4}}, {{"name", "nz"}, {"id", 5}}}}};
  auto plan = PlanFor(doc, *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  HostTensor x =
      HostTensor::FromFloats(MakeType({6}), std::vector<float>{nan, -0.0f, 0, 2, -inf, 0.5f});
  HostTensor m = HostTensor::Zeros(MakeType({6}, DType::kBool));
  const std::vector<uint32_t> mask = {1, 0, 1, 0, 1, 0};
  std::copy(mask.begin(), mask.end(), m.view<uint32_t>().begin());

  auto r = exec->Run(*plan, {{"x", x}, {"m", m}});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  auto u32s = [](const HostTensor& t) {
    return std::vector<uint32_t>(t.view<uint32_t>().begin(), t.view<uint32_t>().end());
  };
  const HostTensor& gt = r->outputs.at(0).second;
  EXPECT_EQ(gt.type.dtype, DType::kBool);
  EXPECT_EQ(gt.bytes.size(), 24u);
  EXPECT_EQ(u32s(gt), (std::vector<uint32_t>{0, 0, 0, 1, 0, 1}));
  const HostTensor& nz = r->outputs.at(2).second;
  EXPECT_EQ(nz.type.dtype, DType::kBool);
  EXPECT_EQ(u32s(nz), (std::vector<uint32_t>{1, 0, 0, 1, 1, 1}));
  const HostTensor& w = r->outputs.at(1).second;
  ASSERT_EQ(w.type.dtype, DType::kF32);
  std::vector<float> got = w.ToFloats();
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(std::vector<float>(got.begin() + 1, got.end()), (std::vector<float>{7, 0, 7, -inf, 7}));
  EXPECT_FALSE(std::signbit(got[2]));  // the +0 of x, chosen as its bits
}

// A scalar compared with a mask is a bool too: eq(m, 0) is the mask's negation, stored as u32.
TEST_P(TypedIo, AMaskComparesWithABoolScalar) {
  auto exec = Open(GetParam());
  ASSERT_NE(exec, nullptr);
  Json doc = {{"version", 3},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "m"}, {"shape", {4}}, {"dtype", "bool"}},
                {{"id", 1}, {"op", "eq"}, {"a", 0}, {"scalar", 0}}}},
              {"outputs", {{{"name", "not_m"}, {"id", 1}}}}};
  auto plan = PlanFor(doc, *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  HostTensor m = HostTensor::Zeros(MakeType({4}, DType::kBool));
  const std::vector<uint32_t> mask = {1, 0, 0, 1};
  std::copy(mask.begin(), mask.end(), m.view<uint32_t>().begin());
  auto r = exec->Run(*plan, {{"m", m}});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  const HostTensor& out = r->outputs.at(0).second;
  EXPECT_EQ(out.type.dtype, DType::kBool);
  EXPECT_EQ(std::vector<uint32_t>(out.view<uint32_t>().begin(), out.view<uint32_t>().end()),
            (std::vector<uint32_t>{0, 1, 1, 0}));
}

std::vector<int32_t> I32s(const HostTensor& t) {
  EXPECT_EQ(t.type.dtype, DType::kI32);
  return {t.view<int32_t>().begin(), t.view<int32_t>().end()};
}

// i32 inline data beyond 2^24 (no f32 holds 2^24 + 1) moves exactly through a flip and gathers,
// and a gathered i32 index of an i32 table reads as an integer.
TEST_P(TypedIo, I32InlineDataMovesExactly) {
  auto exec = Open(GetParam());
  ASSERT_NE(exec, nullptr);
  const Json big = {2147483647, -2147483648LL, 16777217, -16777217, 0, -1};
  Json doc = {
      {"version", 4},
      {"nodes",
       {{{"id", 0}, {"op", "input"}, {"shape", {6}}, {"dtype", "i32"}, {"data", big}},
        {{"id", 1}, {"op", "flip"}, {"a", 0}, {"axes", {0}}},
        {{"id", 2}, {"op", "input"}, {"shape", {4}}, {"dtype", "i32"}, {"data", {5, 0, 2, 5}}},
        {{"id", 3}, {"op", "index_select"}, {"a", 0}, {"index", 2}, {"axis", 0}},
        {{"id", 4}, {"op", "gather"}, {"a", 1}, {"index", 2}, {"axis", 0}}}},
      {"outputs",
       {{{"name", "flip"}, {"id", 1}},
        {{"name", "sel"}, {"id", 3}},
        {{"name", "gat"}, {"id", 4}}}}};
  auto plan = PlanFor(doc, *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  auto r = exec->Run(*plan, {});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(I32s(r->outputs.at(0).second),
            (std::vector<int32_t>{-1, 0, -16777217, 16777217, INT32_MIN, INT32_MAX}));
  EXPECT_EQ(I32s(r->outputs.at(1).second), (std::vector<int32_t>{-1, 2147483647, 16777217, -1}));
  EXPECT_EQ(I32s(r->outputs.at(2).second),
            (std::vector<int32_t>{2147483647, -1, -16777217, 2147483647}));
}

// cast to i32 truncates toward zero, saturates at the i32 range and makes NaN 0; from i32 to f32
// it rounds to nearest even (16777217 -> 16777216, 16777219 -> 16777220, 2^31 - 1 -> 2^31); to
// bool it is != 0. A fused cast through i32 and back truncates in the register. Worked by hand.
TEST_P(TypedIo, CastsBetweenI32AndF32AndBool) {
  auto exec = Open(GetParam());
  ASSERT_NE(exec, nullptr);
  Json doc = {{"version", 3},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {9}}},
                {{"id", 1}, {"op", "cast"}, {"a", 0}, {"dtype", "i32"}},
                {{"id", 2}, {"op", "input"}, {"name", "n"}, {"shape", {6}}, {"dtype", "i32"}},
                {{"id", 3}, {"op", "cast"}, {"a", 2}, {"dtype", "f32"}},
                {{"id", 4}, {"op", "cast"}, {"a", 2}, {"dtype", "bool"}},
                {{"id", 5}, {"op", "cast"}, {"a", 1}, {"dtype", "f32"}}}},
              {"outputs",
               {{{"name", "to_i32"}, {"id", 1}},
                {{"name", "to_f32"}, {"id", 3}},
                {{"name", "to_bool"}, {"id", 4}},
                {{"name", "round_trip"}, {"id", 5}}}}};
  auto plan = PlanFor(doc, *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  HostTensor x = HostTensor::FromFloats(
      MakeType({9}),
      std::vector<float>{nan, inf, -inf, 2.9f, -2.9f, 3e9f, -3e9f, 2147483520.0f, -0.0f});
  HostTensor n = HostTensor::Zeros(MakeType({6}, DType::kI32));
  const std::vector<int32_t> ints = {16777217, -16777217, INT32_MAX, INT32_MIN, 16777219, 0};
  std::copy(ints.begin(), ints.end(), n.view<int32_t>().begin());
  auto r = exec->Run(*plan, {{"x", x}, {"n", n}});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(
      I32s(r->outputs.at(0).second),
      (std::vector<int32_t>{0, INT32_MAX, INT32_MIN, 2, -2, INT32_MAX, INT32_MIN, 2147483520, 0}));
  EXPECT_EQ(r->outputs.at(1).second.ToFloats(),
            (std::vector<float>{16777216.0f, -16777216.0f, 2147483648.0f, -2147483648.0f,
                                16777220.0f, 0.0f}));
  const HostTensor& b = r->outputs.at(2).second;
  EXPECT_EQ(std::vector<uint32_t>(b.view<uint32_t>().begin(), b.view<uint32_t>().end()),
            (std::vector<uint32_t>{1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(r->outputs.at(3).second.ToFloats(),
            (std::vector<float>{0, 2147483648.0f, -2147483648.0f, 2, -2, 2147483648.0f,
                                -2147483648.0f, 2147483520.0f, 0}));
}

INSTANTIATE_TEST_SUITE_P(Backends, TypedIo, ::testing::Values("cpu", "webgpu"));

TEST(TypedIo, OpsOutsideTheirPortDTypesAreRefused) {
  auto exec = Open("cpu");
  Json doc = {{"version", 2},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "a"}, {"shape", {3}}, {"dtype", "u32"}},
                {{"id", 1}, {"op", "sum"}, {"a", 0}}}},
              {"outputs", {{{"name", "s"}, {"id", 1}}}}};
  auto plan = PlanFor(doc, *exec);
  ASSERT_FALSE(plan.ok());
  // The op table says what each port takes: sums are f32, f16 or i32.
  EXPECT_EQ(plan.errors().front().code, "dtype-mismatch");
}

TEST(TypedIo, F16WithoutTheFeatureIsNamed) {
  auto exec = Open("webgpu");
  ASSERT_NE(exec, nullptr);
  auto probe = FindBackend("webgpu")->Probe({.allow_software_adapter = true});
  ASSERT_TRUE(probe.ok());
  Json doc = {{"version", 2},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "h"}, {"shape", {4}}, {"dtype", "f16"}},
                {{"id", 1}, {"op", "reshape"}, {"a", 0}, {"shape", {2, 2}}}}},
              {"outputs", {{{"name", "n"}, {"id", 1}}}}};
  auto plan = PlanFor(doc, *exec);
  ASSERT_TRUE(plan.ok()) << plan.errors().front().Format();
  HostTensor h =
      HostTensor::FromFloats(MakeType({4}, DType::kF16), std::vector<float>{1, -2, 0.5, 3});
  auto r = exec->Run(*plan, {{"h", h}});
  // Either the device computes in f16 storage, or the run is refused by name before any kernel
  // compiles (no shader-f16, or a compiler that refuses `enable f16`).
  if (!r.ok()) {
    EXPECT_EQ(r.errors().front().code, "shader-f16-unavailable") << r.errors().front().Format();
    if (!probe->details["shader_f16"].get<bool>()) {
      EXPECT_NE(r.errors().front().message.find("no shader-f16"), std::string::npos);
    }
  } else {
    EXPECT_EQ(r->outputs.at(0).second.type.dtype, DType::kF16);
    EXPECT_EQ(r->outputs.at(0).second.ToFloats(), (std::vector<float>{1, -2, 0.5, 3}));
  }
}

}  // namespace
}  // namespace scellis::runtime
