// The version-6 ops sorting builds on — arange, butterfly and the integer bit operations — through
// the whole descent on the CPU reference, against values worked by hand; their shape rules; and
// their refusals, each a named diagnostic at the offending node.
#include <gtest/gtest.h>

#include "kernel/module.h"
#include "support/graph.h"

namespace scellis::webir {
namespace {

using scellis::testing::CompileAndRun;
using scellis::testing::GraphDoc;
using scellis::testing::InputNode;
using scellis::testing::ProdOptions;

Json IntInput(int id, const std::vector<int64_t>& shape, const std::vector<int64_t>& data,
              const char* dtype = "i32") {
  return {{"id", id}, {"op", "input"}, {"shape", shape}, {"dtype", dtype}, {"data", data}};
}

// The output's elements as exact numbers (i32 and u32 in a double).
std::vector<double> Values(const Json& doc) {
  runtime::RunResult r = CompileAndRun(doc.dump());
  std::vector<double> v;
  if (r.outputs.empty()) return v;
  const HostTensor& t = r.outputs[0].second;
  for (int64_t i = 0; i < t.type.elements(); ++i) v.push_back(t.ValueAt(i));
  return v;
}

// The first diagnostic compiling `doc` gives, as "code pointer".
std::string Refusal(const Json& doc) {
  auto c = pipeline::Compile(doc.dump(), ProdOptions());
  if (c.ok()) return "compiled";
  return c.errors().front().code + " " + c.errors().front().pointer;
}

TEST(Arange, IsEachElementsIndexAlongItsAxis) {
  auto ramp = [](std::vector<int64_t> shape, int axis, const char* dtype) {
    return GraphDoc({{{"id", 0}, {"op", "arange"}, {"shape", shape}, {"axis", axis},
                      {"dtype", dtype}}},
                    {{"y", 0}}, 6);
  };
  EXPECT_EQ(Values(ramp({2, 3}, 1, "i32")), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Values(ramp({2, 3}, 0, "u32")), (std::vector<double>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(Values(ramp({2, 3}, -1, "f32")), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Values(ramp({2, 1, 2}, 2, "i32")), (std::vector<double>{0, 1, 0, 1}));
  // Read by an op over a larger tensor: the ramp [0, 1, 2] broadcast down the rows, fused.
  Json doc = GraphDoc({InputNode(0, {2, 3}, {10, 20, 30, 40, 50, 60}),
                       {{"id", 1}, {"op", "arange"}, {"shape", {3}}, {"dtype", "f32"}},
                       {{"id", 2}, {"op", "add"}, {"a", 0}, {"b", 1}}},
                      {{"y", 2}}, 6);
  EXPECT_EQ(Values(doc), (std::vector<double>{10, 21, 32, 40, 51, 62}));
  auto c = pipeline::Compile(doc.dump(), ProdOptions());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->module->kernels.size(), 1u) << "the ramp is computed in its reader's kernel";
}

TEST(Arange, RefusesWhatItCannotBe) {
  auto node = [](Json attrs) {
    attrs["id"] = 0;
    attrs["op"] = "arange";
    return GraphDoc({attrs}, {{"y", 0}}, 6);
  };
  EXPECT_EQ(Refusal(node({{"shape", {4}}, {"dtype", "f16"}})), "bad-dtype /nodes/0");
  EXPECT_EQ(Refusal(node({{"shape", {4}}, {"axis", 1}})), "bad-axis /nodes/0");
  EXPECT_EQ(Refusal(node({{"shape", Json::array()}})), "bad-rank /nodes/0");
  Json old = node({{"shape", {4}}});
  old["version"] = 5;
  EXPECT_EQ(Refusal(old), "op-newer-than-version /nodes/0");
}

TEST(Butterfly, ReadsEachElementsPartner) {
  // Along the last axis (the default) with mask 1: pairs swap; with mask 3 along rows of 4, each
  // element meets the one three bits away (0<->3, 1<->2).
  auto doc = [](int64_t mask, Json axis) {
    Json n = {{"id", 1}, {"op", "butterfly"}, {"a", 0}, {"mask", mask}};
    if (!axis.is_null()) n["axis"] = axis;
    return GraphDoc({InputNode(0, {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}), n}, {{"y", 1}}, 6);
  };
  EXPECT_EQ(Values(doc(1, nullptr)), (std::vector<double>{1, 0, 3, 2, 5, 4, 7, 6}));
  EXPECT_EQ(Values(doc(3, 1)), (std::vector<double>{3, 2, 1, 0, 7, 6, 5, 4}));
  EXPECT_EQ(Values(doc(1, 0)), (std::vector<double>{4, 5, 6, 7, 0, 1, 2, 3}));
  EXPECT_EQ(Values(doc(0, 1)), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
  // An axis of 6 is three blocks of 2: mask 1 stays inside it.
  Json six = GraphDoc({IntInput(0, {6}, {-5, 7, 2147483647, -2147483648, 0, 9}),
                       {{"id", 1}, {"op", "butterfly"}, {"a", 0}, {"mask", 1}}},
                      {{"y", 1}}, 6);
  EXPECT_EQ(Values(six), (std::vector<double>{7, -5, -2147483648.0, 2147483647, 9, 0}));
}

TEST(Butterfly, RefusesPartnersOutsideTheAxisByName) {
  auto doc = [](std::vector<int64_t> shape, int64_t mask, int axis) {
    std::vector<float> data(static_cast<size_t>(shape[0] * (shape.size() > 1 ? shape[1] : 1)));
    return GraphDoc({InputNode(0, shape, data),
                     {{"id", 1}, {"op", "butterfly"}, {"a", 0}, {"mask", mask}, {"axis", axis}}},
                    {{"y", 1}}, 6);
  };
  // 6 elements, mask 4: index 2 would pair with 6.
  auto c = pipeline::Compile(doc({6}, 4, 0).dump(), ProdOptions());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.errors().front().code, "butterfly-out-of-range");
  EXPECT_EQ(c.errors().front().pointer, "/nodes/1");
  EXPECT_NE(c.errors().front().message.find("pairs index 2 with 6"), std::string::npos)
      << c.errors().front().message;
  EXPECT_EQ(Refusal(doc({3}, 1, 0)), "butterfly-out-of-range /nodes/1");   // index 2 with 3
  EXPECT_EQ(Refusal(doc({4, 3}, 2, 1)), "butterfly-out-of-range /nodes/1");
  EXPECT_EQ(Refusal(doc({4}, -1, 0)), "butterfly-out-of-range /nodes/1");
  EXPECT_EQ(Refusal(doc({12}, 3, 0)), "compiled");  // 12 is three blocks of 4
  EXPECT_EQ(Refusal(doc({4}, 1, 2)), "bad-axis /nodes/1");
}

// One compare-exchange stage of a bitonic sort over 8 keys (k = 4, j = 2), worked by hand:
// element i meets i ^ 2; it keeps the smaller where (i & 2 == 0) == (i & 4 == 0), else the
// larger. Keys 5 1 7 3 2 8 6 4: pairs (0,2) (1,3) ascending -> 5 1 7 3; pairs (4,6) (5,7)
// descending -> 6 8 2 4.
TEST(Butterfly, OneBitonicStageIsOneKernel) {
  auto bit_clear = [](int id, int of, int bit) {
    return std::vector<Json>{
        {{"id", id}, {"op", "bitwise_and"}, {"a", of}, {"scalar", bit}},
        {{"id", id + 1}, {"op", "eq"}, {"a", id}, {"scalar", 0}}};
  };
  std::vector<Json> nodes = {InputNode(0, {8}, {5, 1, 7, 3, 2, 8, 6, 4}),
                             {{"id", 1}, {"op", "butterfly"}, {"a", 0}, {"mask", 2}},
                             {{"id", 2}, {"op", "arange"}, {"shape", {8}}}};
  for (const Json& n : bit_clear(3, 2, 2)) nodes.push_back(n);
  for (const Json& n : bit_clear(5, 2, 4)) nodes.push_back(n);
  nodes.push_back({{"id", 7}, {"op", "eq"}, {"a", 4}, {"b", 6}});
  nodes.push_back({{"id", 8}, {"op", "minimum"}, {"a", 0}, {"b", 1}});
  nodes.push_back({{"id", 9}, {"op", "maximum"}, {"a", 0}, {"b", 1}});
  nodes.push_back({{"id", 10}, {"op", "where"}, {"cond", 7}, {"a", 8}, {"b", 9}});
  Json doc = GraphDoc(nodes, {{"y", 10}}, 6);
  EXPECT_EQ(Values(doc), (std::vector<double>{5, 1, 7, 3, 6, 8, 2, 4}));
  auto c = pipeline::Compile(doc.dump(), ProdOptions());
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->module->kernels.size(), 1u);
  EXPECT_EQ(c->module->kernels[0].inputs, (std::vector<int>{0}));
  EXPECT_TRUE(kernel::ReadsShifted(c->module->kernels[0], 0));
  // The butterfly of a computed value reads it from a buffer: two kernels.
  Json computed = GraphDoc({InputNode(0, {4}, {1, 2, 3, 4}),
                            {{"id", 1}, {"op", "relu"}, {"a", 0}},
                            {{"id", 2}, {"op", "butterfly"}, {"a", 1}, {"mask", 1}},
                            {{"id", 3}, {"op", "add"}, {"a", 2}, {"b", 0}}},
                           {{"y", 3}}, 6);
  auto two = pipeline::Compile(computed.dump(), ProdOptions());
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->module->kernels.size(), 2u);
  EXPECT_EQ(Values(computed), (std::vector<double>{3, 3, 7, 7}));
}

TEST(BitOps, AreTorchsBitwiseOpsOnI32AndU32) {
  auto binary = [](const char* op, const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                   const char* dtype) {
    const int64_t n = static_cast<int64_t>(a.size());
    return Values(GraphDoc({IntInput(0, {n}, a, dtype), IntInput(1, {n}, b, dtype),
                            {{"id", 2}, {"op", op}, {"a", 0}, {"b", 1}}},
                           {{"y", 2}}, 6));
  };
  using V = std::vector<double>;
  EXPECT_EQ(binary("bitwise_and", {12, -1, -8}, {10, 5, 7}, "i32"), (V{8, 5, 0}));
  EXPECT_EQ(binary("bitwise_or", {12, -8, 0}, {10, 3, 0}, "i32"), (V{14, -5, 0}));
  EXPECT_EQ(binary("bitwise_xor", {12, -1, -2}, {10, 1, 1}, "i32"), (V{6, -2, -1}));
  EXPECT_EQ(binary("bitwise_xor", {12, 4294967295, 1}, {10, 1, 1}, "u32"),
            (V{6, 4294967294.0, 0}));
  // Left: bits past 32 drop; counts outside [0, 32) give 0 (torch.bitwise_left_shift).
  EXPECT_EQ(binary("shift_left", {3, 3, 1, -1, 5, 5}, {2, 30, 31, 4, 32, -1}, "i32"),
            (V{12, -1073741824.0, -2147483648.0, -16, 0, 0}));
  EXPECT_EQ(binary("shift_left", {3, 1, 7}, {31, 32, 100}, "u32"), (V{2147483648.0, 0, 0}));
  // Right: arithmetic for i32, counts outside [0, 32) fill with the sign; logical for u32.
  EXPECT_EQ(binary("shift_right", {-16, -16, 16, -1, -5, 5}, {2, 31, 31, 32, -3, 40}, "i32"),
            (V{-4, -1, 0, -1, -1, 0}));
  EXPECT_EQ(binary("shift_right", {4294967280, 4294967280, 8}, {2, 31, 32}, "u32"),
            (V{1073741820.0, 1, 0}));
}

TEST(BitOps, TakeIntegersOnly) {
  Json doc = GraphDoc({InputNode(0, {2}, {1, 2}), InputNode(1, {2}, {1, 2}),
                       {{"id", 2}, {"op", "bitwise_and"}, {"a", 0}, {"b", 1}}},
                      {{"y", 2}}, 6);
  EXPECT_EQ(Refusal(doc), "dtype-mismatch /nodes/2/a");
}

}  // namespace
}  // namespace scellis::webir
