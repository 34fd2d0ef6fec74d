// Guarantees a target cannot keep are refused before dispatch; the CPU reference keeps them all.
#include "execplan/passes/check_guarantees.h"

#include <gtest/gtest.h>

#include "support/graph.h"

namespace scellis::execplan {
namespace {

using testing::GraphDoc;
using testing::InputNode;

// x -> exp -> relu, or x -> relu alone; with a declared tolerance and determinism.
std::string Doc(bool with_exp, const std::string& tolerance, const Json& determinism = nullptr) {
  std::vector<Json> nodes = {InputNode(0, {4}, {-1, 0, 1, 2})};
  if (with_exp) {
    nodes.push_back({{"id", 3}, {"op", "exp"}, {"a", 0}});
    nodes.push_back({{"id", 1}, {"op", "sum"}, {"a", 3}});
  } else {
    nodes.push_back({{"id", 1}, {"op", "relu"}, {"a", 0}});
  }
  Json doc = GraphDoc(nodes, {{"y", 1}}, 2);
  doc["tolerance"] = tolerance;
  if (!determinism.is_null()) doc["determinism"] = determinism;
  return doc.dump();
}

Plan PlanFor(const std::string& text) {
  auto c = pipeline::Compile(text, testing::ProdOptions());  // the CPU target keeps everything
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return *c->plan;
}

Plan On(Plan p, const std::string& backend) {
  p.limits.backend = backend;
  return p;
}

TEST(CheckGuarantees, ExactOverAnInexactOpIsRefusedOnWebgpuOnly) {
  Plan p = PlanFor(Doc(true, "exact"));
  EXPECT_TRUE(CheckGuarantees(On(p, "cpu")).ok());
  Status s = CheckGuarantees(On(p, "webgpu"));
  ASSERT_FALSE(s.ok());
  const Diagnostic& d = s.errors().front();
  EXPECT_EQ(d.code, "tolerance-unachievable");
  EXPECT_EQ(d.pointer, "/nodes/1");  // the exp node, declared second in the document
  EXPECT_EQ(d.where, "exp #3");
  EXPECT_NE(d.help.find("--backend=cpu"), std::string::npos) << d.help;
  // exp is `default` in the op table, and sum too: that is the strictest class they allow.
  EXPECT_NE(d.help.find("\"tolerance\": \"default\""), std::string::npos) << d.help;
}

TEST(CheckGuarantees, ExactOverExactOpsIsKeptOnWebgpu) {
  EXPECT_TRUE(CheckGuarantees(On(PlanFor(Doc(false, "exact")), "webgpu")).ok());
}

TEST(CheckGuarantees, LooserClassesAreKeptOnWebgpu) {
  EXPECT_TRUE(CheckGuarantees(On(PlanFor(Doc(true, "default")), "webgpu")).ok());
}

TEST(CheckGuarantees, BitExactnessAcrossDevicesOnlyOnTheCpu) {
  Plan p = PlanFor(Doc(false, "default", {{"tier", "debug"}, {"bit_exact_across_devices", true}}));
  ASSERT_TRUE(p.graph().bit_exact_across_devices) << "the request reaches the plan";
  EXPECT_TRUE(CheckGuarantees(On(p, "cpu")).ok());
  Status s = CheckGuarantees(On(p, "webgpu"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.errors().front().code, "cross-device-bit-exactness");
  EXPECT_EQ(s.errors().front().pointer, "/determinism");
}

TEST(CheckGuarantees, CompileRefusesForAWebgpuTarget) {
  pipeline::CompileOptions o = testing::ProdOptions();
  o.plan.limits.backend = "webgpu";
  auto c = pipeline::Compile(Doc(true, "exact"), o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.errors().front().code, "tolerance-unachievable");
  o.plan.limits.backend = "cpu";
  EXPECT_TRUE(pipeline::Compile(Doc(true, "exact"), o).ok());
}

}  // namespace
}  // namespace scellis::execplan
