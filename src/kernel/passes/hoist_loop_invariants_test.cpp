// hoist-loop-invariants: in a repeated graph, the kernels that read nothing carried (directly or
// through other kernels) move ahead of the loop body, marked hoisted; carried values' updates and
// everything downstream of a carried input stay in the body.
#include <gtest/gtest.h>

#include "kernel/passes/passes.h"
#include "support/graph.h"

namespace scellis::kernel {
namespace {

using scellis::testing::InputNode;

// u and v are carried; q is not. %2 = matmul(q, q) and %6 = sum(q) are invariant (%6 comes after
// the body in graph order); %3, %4 read u; v_next reads only q, yet is a carry's source.
Json LoopDocument(int repeat) {
  Json u = InputNode(0, {2, 2}, {1, 2, 3, 4});
  u["name"] = "u";
  u["carry"] = "u_next";
  Json v = InputNode(5, {2, 2}, {0, 0, 0, 0});
  v["name"] = "v";
  v["carry"] = "v_next";
  return {{"version", 5},
          {"repeat", repeat},
          {"nodes",
           {u,
            InputNode(1, {2, 2}, {0.5, 0, 0, 0.5}),
            {{"id", 2}, {"op", "matmul"}, {"a", 1}, {"b", 1}},
            {{"id", 3}, {"op", "add"}, {"a", 0}, {"b", 2}},
            {{"id", 4}, {"op", "matmul"}, {"a", 3}, {"b", 2}},
            v,
            {{"id", 6}, {"op", "sum"}, {"a", 1}, {"axis", 1}},
            {{"id", 7}, {"op", "mul"}, {"a", 1}, {"b", 1}}}},
          {"outputs", {{{"name", "u_next"}, {"id", 4}}, {{"name", "rows"}, {"id", 6}},
                       {{"name", "v_next"}, {"id", 7}}}}};
}

Module Fused(const Json& doc) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.up_to = pipeline::Rung::kWebir;
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  Module m = FromWebir(c->graph).value();
  EXPECT_TRUE(Partition(m).ok());
  EXPECT_TRUE(FuseElementwise(m).ok());
  return m;
}

TEST(HoistLoopInvariantsPass, MovesInvariantKernelsAheadOfTheBody) {
  Module m = Fused(LoopDocument(5));
  ASSERT_EQ(m.kernels.size(), 5u) << Print(m);
  ASSERT_TRUE(HoistLoopInvariants(m).ok());
  ASSERT_TRUE(Verify(m).ok());
  std::vector<int> outputs;
  std::vector<bool> hoisted;
  for (const Kernel& k : m.kernels) {
    outputs.push_back(k.output);
    hoisted.push_back(k.hoisted);
  }
  // The invariants first, in graph order; then the body, in graph order.
  EXPECT_EQ(outputs, (std::vector<int>{2, 6, 3, 4, 7})) << Print(m);
  EXPECT_EQ(hoisted, (std::vector<bool>{true, true, false, false, false}));
  EXPECT_EQ(m.HoistedKernels(), 2);
  EXPECT_EQ(m.kernels[0].name, "k0_matmul");
  EXPECT_EQ(m.kernels[1].name, "k1_sum");
  EXPECT_EQ(m.kernels[2].name, "k2_fused_add");
  EXPECT_NE(Print(m).find("k1_sum: %"), std::string::npos);
  EXPECT_NE(Print(m).find("hoisted"), std::string::npos);
}

TEST(HoistLoopInvariantsPass, LeavesAGraphWithoutALoopAlone) {
  Module m = Fused(LoopDocument(1));
  std::vector<std::string> before;
  for (const Kernel& k : m.kernels) before.push_back(k.name);
  ASSERT_TRUE(HoistLoopInvariants(m).ok());
  std::vector<std::string> after;
  for (const Kernel& k : m.kernels) {
    after.push_back(k.name);
    EXPECT_FALSE(k.hoisted) << k.name;
  }
  EXPECT_EQ(after, before);
  EXPECT_EQ(m.HoistedKernels(), 0);
}

TEST(HoistLoopInvariantsPass, VerifyRefusesAHoistedKernelAfterTheBody) {
  Module m = Fused(LoopDocument(5));
  ASSERT_TRUE(HoistLoopInvariants(m).ok());
  m.kernels[3].hoisted = true;  // a body kernel claimed invariant, after the body began
  EXPECT_FALSE(Verify(m).ok());
}

}  // namespace
}  // namespace scellis::kernel
