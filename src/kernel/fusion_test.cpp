// Rung 3: fusion. A chain of elementwise ops is one kernel; a value read twice, a named output or a
// value read by a non-elementwise op is a kernel of its own; constants become literals. Every
// kernel carries WGSL, and the verifier catches a corrupted module.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/sha256.h"
#include "kernel/emit/wgsl/codegen.h"
#include "kernel/module.h"
#include "support/graph.h"

namespace scellis::kernel {
namespace {

using scellis::testing::CompileAndRun;
using scellis::testing::FindOutput;
using scellis::testing::GraphDoc;
using scellis::testing::InputNode;
using scellis::testing::ProdOptions;

Result<Module> LowerToKernel(const Json& doc) {
  pipeline::CompileOptions o = ProdOptions();
  o.up_to = pipeline::Rung::kKernel;
  auto c = pipeline::Compile(doc.dump(), o);
  if (!c.ok()) return c.status();
  return std::move(*c->module);
}

std::vector<std::string> StepOps(const Kernel& k) {
  std::vector<std::string> ops;
  for (const ExprStep& s : k.expr) ops.push_back(s.op);
  return ops;
}

TEST(Fusion, ChainOfFiveElementwiseOpsIsOneKernel) {
  Json doc = GraphDoc({InputNode(0, {4}, {-1, 2, -3, 4}),
                       InputNode(1, {4}, {5, 6, 7, 8}),
                       {{"id", 2}, {"op", "mul"}, {"a", 0}, {"b", 1}},
                       {{"id", 3}, {"op", "relu"}, {"a", 2}},
                       {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 0}},
                       {{"id", 5}, {"op", "sub"}, {"a", 4}, {"b", 1}},
                       {{"id", 6}, {"op", "positive"}, {"a", 5}}},
                      {{"y", 6}});
  auto m = LowerToKernel(doc);
  ASSERT_TRUE(m.ok()) << m.errors().front().Format();
  ASSERT_EQ(m->kernels.size(), 1u) << Print(m.value());
  const Kernel& k = m->kernels[0];
  EXPECT_EQ(k.kind, KernelKind::kElementwise);
  EXPECT_EQ(StepOps(k), (std::vector<std::string>{"mul", "relu", "add", "sub", "positive"}));
  EXPECT_EQ(k.inputs, (std::vector<int>{0, 1}));  // each input bound once, though read twice
  EXPECT_EQ(k.output, 6);
  EXPECT_EQ(k.name, "k0_fused_mul_relu_add_sub_positive");
  // Steps only read inputs and earlier steps.
  EXPECT_TRUE(Verify(m.value()).ok());

  // And it computes: positive(relu(a*b) + a - b).
  auto r = CompileAndRun(doc.dump());
  std::vector<float> want;
  float a[4] = {-1, 2, -3, 4}, b[4] = {5, 6, 7, 8};
  for (int i = 0; i < 4; ++i) {
    float t = a[i] * b[i];
    t = t > 0 ? t : 0;
    want.push_back(t + a[i] - b[i] > 0 ? 1.0f : 0.0f);
  }
  ASSERT_NE(FindOutput(r, "y"), nullptr);
  EXPECT_EQ(FindOutput(r, "y")->ToFloats(), want);
}

TEST(Fusion, ValueWithTwoConsumersIsNotFolded) {
  Json doc = GraphDoc({InputNode(0, {3}, {1, -2, 3}),
                       {{"id", 1}, {"op", "relu"}, {"a", 0}},  // read by 2 and 3
                       {{"id", 2}, {"op", "add"}, {"a", 1}, {"b", 0}},
                       {{"id", 3}, {"op", "mul"}, {"a", 1}, {"b", 0}},
                       {{"id", 4}, {"op", "sub"}, {"a", 2}, {"b", 3}}},
                      {{"y", 4}});
  auto m = LowerToKernel(doc);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->kernels.size(), 2u) << Print(m.value());
  EXPECT_EQ(m->kernels[0].output, 1);  // relu alone
  EXPECT_EQ(StepOps(m->kernels[0]), (std::vector<std::string>{"relu"}));
  // add and mul each have one consumer: folded into the sub, reading relu from its buffer.
  EXPECT_EQ(StepOps(m->kernels[1]), (std::vector<std::string>{"add", "mul", "sub"}));
  EXPECT_EQ(m->kernels[1].inputs, (std::vector<int>{1, 0}));
}

TEST(Fusion, NamedOutputsAndNonElementwiseConsumersEndAKernel) {
  Json doc = GraphDoc({InputNode(0, {2, 2}, {1, 2, 3, 4}),
                       {{"id", 1}, {"op", "relu"}, {"a", 0}},  // a named output
                       {{"id", 2}, {"op", "mul"}, {"a", 1}, {"b", 0}},
                       {{"id", 3}, {"op", "matmul"}, {"a", 2}, {"b", 0}},
                       {{"id", 4}, {"op", "positive"}, {"a", 3}}},
                      {{"r", 1}, {"y", 4}});
  auto m = LowerToKernel(doc);
  ASSERT_TRUE(m.ok());
  // The elementwise kernel after the matmul is its epilogue (fuse-matmul-epilogue).
  ASSERT_EQ(m->kernels.size(), 3u) << Print(m.value());
  EXPECT_EQ(StepOps(m->kernels[0]), (std::vector<std::string>{"relu"}));
  EXPECT_EQ(StepOps(m->kernels[1]), (std::vector<std::string>{"mul"}));
  EXPECT_EQ(m->kernels[2].kind, KernelKind::kOp);
  EXPECT_EQ(m->kernels[2].op, "matmul");
  EXPECT_EQ(StepOps(m->kernels[2]), (std::vector<std::string>{"matmul", "positive"}));
}

TEST(Fusion, ConstantsAreFoldedAsLiterals) {
  Json doc = GraphDoc({InputNode(0, {3}, {1, 2, 3}),
                       {{"id", 1}, {"op", "full"}, {"shape", {3}}, {"value", 0.25}},
                       {{"id", 2}, {"op", "mul"}, {"a", 0}, {"scalar", 2}},
                       {{"id", 3}, {"op", "sub"}, {"a", 2}, {"b", 1}},
                       {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 1}}},  // the constant, twice
                      {{"y", 4}});
  auto m = LowerToKernel(doc);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->kernels.size(), 1u) << Print(m.value());
  const Kernel& k = m->kernels[0];
  EXPECT_EQ(k.inputs, (std::vector<int>{0}));  // no buffer for either constant
  int literals = 0;
  for (const ExprStep& s : k.expr) {
    if (s.op != "full") continue;
    ++literals;
    EXPECT_TRUE(s.value == 2.0 || s.value == 0.25) << s.value;
    EXPECT_TRUE(s.operands.empty());
  }
  EXPECT_EQ(literals, 2);  // each constant once, however often it is read
  EXPECT_NE(k.Wgsl().source.find("f32(2.0)"), std::string::npos) << k.Wgsl().source;
  EXPECT_NE(k.Wgsl().source.find("f32(0.25)"), std::string::npos) << k.Wgsl().source;
  EXPECT_EQ(k.Wgsl().source.find("in1"), std::string::npos)
      << k.Wgsl().source;  // one input binding only
  auto r = CompileAndRun(doc.dump());
  ASSERT_NE(FindOutput(r, "y"), nullptr);
  EXPECT_EQ(FindOutput(r, "y")->ToFloats(), (std::vector<float>{2, 4, 6}));
}

TEST(Fusion, BroadcastInsideAFusedKernel) {
  // relu(a[3]) + b[2,3], scaled: the folded relu runs per output element with a's broadcast index.
  Json doc = GraphDoc({InputNode(0, {3}, {-1, 2, -3}),
                       InputNode(1, {2, 3}, {10, 20, 30, 40, 50, 60}),
                       {{"id", 2}, {"op", "relu"}, {"a", 0}},
                       {{"id", 3}, {"op", "add"}, {"a", 2}, {"b", 1}},
                       {{"id", 4}, {"op", "mul"}, {"a", 3}, {"scalar", 0.5}}},
                      {{"y", 4}}, 2);
  auto m = LowerToKernel(doc);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->kernels.size(), 1u);
  EXPECT_NE(m->kernels[0].Wgsl().source.find("d1 * 1u"), std::string::npos)
      << m->kernels[0].Wgsl().source;
  auto r = CompileAndRun(doc.dump());
  ASSERT_NE(FindOutput(r, "y"), nullptr);
  EXPECT_EQ(FindOutput(r, "y")->ToFloats(), (std::vector<float>{5, 11, 15, 20, 26, 30}));
}

// A fused chain as long as a document can be: lowering must not recurse once per step.
TEST(Fusion, HundredThousandStepChain) {
  const int n = static_cast<int>(doc::kMaxNodes);
  std::vector<Json> nodes = {InputNode(0, {2}, {1.5f, -1})};
  for (int i = 1; i < n; ++i)
    nodes.push_back({{"id", i}, {"op", i % 2 ? "relu" : "positive"}, {"a", i - 1}});
  Json doc = GraphDoc(nodes, {{"y", n - 1}});
  auto m = LowerToKernel(doc);
  ASSERT_TRUE(m.ok()) << m.errors().front().Format();
  ASSERT_EQ(m->kernels.size(), 1u);
  EXPECT_EQ(m->kernels[0].expr.size(), static_cast<size_t>(n - 1));
  // relu, positive, relu, ... : 1.5 -> 1.5 -> 1 -> 1 ...; -1 -> 0 -> 0 ...
  auto r = CompileAndRun(doc.dump());
  ASSERT_NE(FindOutput(r, "y"), nullptr);
  EXPECT_EQ(FindOutput(r, "y")->ToFloats(), (std::vector<float>{1, 0}));
}

// ---- WGSL for every kernel of every example ----

TEST(Wgsl, EveryKernelOfEveryExampleHasWgsl) {
  int kernels = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(SCELLIS_SOURCE_DIR) + "/examples")) {
    if (e.path().extension() != ".json") continue;
    SCOPED_TRACE(e.path().filename().string());
    std::ifstream in(e.path());
    std::stringstream s;
    s << in.rdbuf();
    auto c = pipeline::Compile(s.str(), ProdOptions());
    ASSERT_TRUE(c.ok()) << c.errors().front().Format();
    for (const Kernel& k : c->module->kernels) {
      ++kernels;
      EXPECT_FALSE(k.Wgsl().source.empty()) << k.name;
      EXPECT_NE(k.Wgsl().source.find("@compute"), std::string::npos) << k.name;
      EXPECT_NE(k.Wgsl().source.find("fn " + k.Wgsl().entry_point + "("), std::string::npos)
          << k.name;
      EXPECT_EQ(k.Wgsl().source_hash, Sha256Hex(k.Wgsl().source)) << k.name;
      // One binding per input: read-only, read and written where an output replaces it in
      // place, or a uniform (an optimizer's step); then the output, unless it is written in place.
      for (size_t i = 0; i < k.inputs.size(); ++i) {
        const bool replaced =
            std::count(k.in_place.begin(), k.in_place.end(), static_cast<int>(i)) > 0;
        const std::string decl = k.UniformInput(i) ? "var<uniform> in"
                                 : replaced        ? "var<storage, read_write> in"
                                                   : "var<storage, read> in";
        EXPECT_NE(k.Wgsl().source.find("@binding(" + std::to_string(i) + ") " + decl +
                                       std::to_string(i) + ":"),
                  std::string::npos)
            << k.name << " input " << i;
      }
      if (k.InPlaceOf(0) < 0)
        EXPECT_NE(k.Wgsl().source.find("@binding(" + std::to_string(k.inputs.size()) +
                                       ") var<storage, read_write> out"),
                  std::string::npos)
            << k.Wgsl().source;
      else
        EXPECT_EQ(k.Wgsl().source.find("var<storage, read_write> out:"), std::string::npos)
            << k.Wgsl().source;
      EXPECT_GE(k.workgroups[0], 1u);
    }
    std::string all = PrintWgsl(*c->module);
    for (const Kernel& k : c->module->kernels)
      EXPECT_NE(all.find("// ---- " + k.name + " ----"), std::string::npos);
  }
  EXPECT_GE(kernels, 8);
}

TEST(Wgsl, LargeGridsFoldIntoTwoDimensions) {
  auto g = wgsl::LinearGrid(int64_t{64} * 65535 + 1);
  EXPECT_EQ(g[0], 65535u);
  EXPECT_EQ(g[1], 2u);
  EXPECT_EQ(wgsl::LinearGrid(0)[0], 1u);
  EXPECT_EQ(wgsl::LinearGrid(65)[0], 2u);
}

// ---- the verifier ----

TEST(KernelVerify, CatchesCorruptedModules) {
  Json doc = GraphDoc({InputNode(0, {3}, {1, 2, 3}),
                       {{"id", 1}, {"op", "relu"}, {"a", 0}},
                       {{"id", 2}, {"op", "mul"}, {"a", 1}, {"scalar", 3}},
                       {{"id", 3}, {"op", "sum"}, {"a", 2}}},
                      {{"y", 3}});
  auto m = LowerToKernel(doc);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->kernels.size(), 2u);
  ASSERT_TRUE(Verify(m.value()).ok());

  Module forward = m.value();
  ASSERT_GE(forward.kernels[0].expr.size(), 2u);
  forward.kernels[0].expr[0].operands[0] = StepRef(1);  // a step reading a later step
  EXPECT_FALSE(Verify(forward).ok());

  Module out_of_range = m.value();
  out_of_range.kernels[0].expr[0].operands[0] = 5;  // no such input
  EXPECT_FALSE(Verify(out_of_range).ok());

  Module order = m.value();
  std::swap(order.kernels[0], order.kernels[1]);  // sum before the value it reads is written
  EXPECT_FALSE(Verify(order).ok());

  Module no_wgsl = m.value();
  no_wgsl.kernels[1].Wgsl().source.clear();
  Status s = Verify(no_wgsl);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.first().message.find("empty or mismatched wgsl source"), std::string::npos);

  Module edited = m.value();
  edited.kernels[1].Wgsl().source += "// edited after emission\n";  // no longer its hash
  EXPECT_FALSE(Verify(edited).ok());

  Module unwritten = m.value();
  unwritten.kernels.pop_back();  // the output is never written
  EXPECT_FALSE(Verify(unwritten).ok());

  // The next rung refuses it.
  EXPECT_FALSE(execplan::FromKernel(std::make_shared<const Module>(forward), {}).ok());
}

}  // namespace
}  // namespace scellis::kernel
