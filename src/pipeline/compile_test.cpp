// The descent's pass table: order, print-after, disabling, and the bad-pass diagnostics.
#include "pipeline/compile.h"

#include <gtest/gtest.h>

#include "support/graph.h"

namespace scellis::pipeline {
namespace {

using scellis::testing::GraphDoc;
using scellis::testing::InputNode;
using scellis::testing::ProdOptions;

std::string Chain() {
  return GraphDoc({InputNode(0, {2, 2}, {1, -2, 3, -4}),
                   {{"id", 1}, {"op", "transpose"}, {"a", 0}},
                   {{"id", 2}, {"op", "matmul"}, {"a", 1}, {"b", 0}},
                   {{"id", 3}, {"op", "exp"}, {"a", 2}},
                   {{"id", 4}, {"op", "neg"}, {"a", 3}}},
                  {{"y", 4}}, 2)
      .dump();
}

TEST(Passes, TheDescentInOrder) {
  std::vector<std::string> names;
  for (const Pass& p : Passes()) names.emplace_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"append-train-step",
                                             "partition",
                                             "fuse-elementwise",
                                             "fuse-generators",
                                             "fold-transposes",
                                             "fuse-matmul-epilogue",
                                             "merge-optimizer-outputs",
                                             "merge-loss-gradient",
                                             "merge-bias-gradient",
                                             "fold-constant-inputs",
                                             "write-state-in-place",
                                             "merge-optimizer-kernels",
                                             "fuse-optimizer-into-gradient",
                                             "hoist-loop-invariants",
                                             "fuse-gradient-product-into-loss",
                                             "schedule-matmul",
                                             "schedule-elementwise",
                                             "schedule-sum",
                                             "fold-row-gathers",
                                             "emit-wgsl",
                                             "block-butterfly-stages",
                                             "block-temporally",
                                             "liveness",
                                             "memory-classes",
                                             "assign-buffers",
                                             "verdict",
                                             "check-guarantees"}));
  for (const Pass& p : Passes())
    EXPECT_EQ(p.optional,
              p.name == "fuse-elementwise" || p.name == "fuse-generators" ||
                  p.name == "fold-transposes" || p.name == "fuse-matmul-epilogue" ||
                  p.name == "merge-optimizer-outputs" || p.name == "merge-loss-gradient" ||
                  p.name == "merge-bias-gradient" || p.name == "fold-constant-inputs" ||
                  p.name == "write-state-in-place" || p.name == "merge-optimizer-kernels" ||
                  p.name == "fuse-optimizer-into-gradient" || p.name == "hoist-loop-invariants" ||
                  p.name == "fuse-gradient-product-into-loss" || p.name == "block-temporally" ||
                  p.name == "schedule-elementwise" || p.name == "schedule-sum" ||
                  p.name == "fold-row-gathers" || p.name == "block-butterfly-stages")
        << p.name;
}

TEST(Passes, PrintAfterStopsThere) {
  CompileOptions o = ProdOptions();
  o.print_after = "fuse-elementwise";
  auto c = Compile(Chain(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  EXPECT_EQ(c->stopped_after, "fuse-elementwise");
  ASSERT_NE(c->module, nullptr);
  EXPECT_FALSE(c->plan.has_value());
  // transpose, matmul, fused exp+neg; not yet folded, not yet emitted.
  std::string printed = PrintRung(*c, Rung::kKernel);
  EXPECT_NE(printed.find("k0_transpose"), std::string::npos) << printed;
  EXPECT_NE(printed.find("k2_fused_exp_neg"), std::string::npos) << printed;
  EXPECT_NE(printed.find("(not emitted)"), std::string::npos) << printed;

  auto rung = RungOfPass("liveness");
  ASSERT_TRUE(rung.ok());
  EXPECT_EQ(rung.value(), Rung::kExecplan);
}

TEST(Passes, DisablingOptionalPassesChangesKernelsNotOutputs) {
  CompileOptions o = ProdOptions();
  auto all = Compile(Chain(), o);
  o.disabled_passes = {"fuse-elementwise", "fold-transposes", "fuse-matmul-epilogue"};
  auto none = Compile(Chain(), o);
  ASSERT_TRUE(all.ok());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(all->module->kernels.size(), 1u);   // matmul(x^T, x) with exp+neg as its epilogue
  EXPECT_EQ(none->module->kernels.size(), 4u);  // transpose, matmul, exp, neg
  auto a = scellis::testing::CompileAndRun(Chain());
  auto b = scellis::testing::CompileAndRun(Chain(), 1, o);
  ASSERT_NE(scellis::testing::FindOutput(a, "y"), nullptr);
  ASSERT_NE(scellis::testing::FindOutput(b, "y"), nullptr);
  EXPECT_EQ(scellis::testing::FindOutput(a, "y")->bytes,
            scellis::testing::FindOutput(b, "y")->bytes);
}

TEST(Passes, BadPassNamesTheValidOnes) {
  CompileOptions o = ProdOptions();
  o.disabled_passes = {"verdict"};
  auto required = Compile(Chain(), o);
  ASSERT_FALSE(required.ok());
  EXPECT_EQ(required.errors().front().code, "bad-pass");
  EXPECT_NE(required.errors().front().message.find("required"), std::string::npos);
  EXPECT_NE(
      required.errors().front().help.find("fuse-elementwise, fuse-generators, fold-transposes"),
      std::string::npos);

  o.disabled_passes = {"fuse"};
  auto unknown = Compile(Chain(), o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.errors().front().code, "bad-pass");

  o.disabled_passes = {};
  o.print_after = "fusion";
  auto bad_print = Compile(Chain(), o);
  ASSERT_FALSE(bad_print.ok());
  EXPECT_EQ(bad_print.errors().front().code, "bad-pass");
  EXPECT_NE(bad_print.errors().front().help.find("append-train-step, partition"),
            std::string::npos);
  EXPECT_FALSE(RungOfPass("fusion").ok());
}

TEST(Passes, RungDumpsNameEveryFile) {
  auto c = Compile(Chain(), ProdOptions());
  ASSERT_TRUE(c.ok());
  std::vector<std::string> names;
  for (const auto& [name, text] : RungDumps(*c)) {
    names.push_back(name);
    EXPECT_FALSE(text.empty()) << name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"0.doc.json", "1.block.txt", "2.webir.txt",
                                             "3.kernel.txt", "3.kernel.wgsl", "4.execplan.txt"}));
}

// Each rung is held once: the module and the plan refer to the graph the Compiled owns.
TEST(Passes, RungsShareTheirPredecessors) {
  auto c = Compile(Chain(), ProdOptions());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->module->graph_ref.get(), c->graph.get());
  EXPECT_EQ(c->plan->module_ref.get(), c->module.get());
  EXPECT_EQ(&c->plan->graph(), c->graph.get());
}

}  // namespace
}  // namespace scellis::pipeline
