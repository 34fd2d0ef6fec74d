// Walks the op table: every op that computes something must have a type rule, a gradient rule
// exactly when the table calls it differentiable, a CPU reference, a WGSL generator and
// conformance cases that exercise it. Adding an op without all of them fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "conform/cases.h"
#include "conform/compare.h"
#include "kernel/emit/wgsl/codegen.h"
#include "kernel/ref/ref.h"
#include "pipeline/compile.h"
#include "webir/op_rules.h"

namespace scellis::conform {
namespace {

std::string Describe(const std::vector<Diagnostic>& errors) {
  std::string out;
  for (const Diagnostic& d : errors) out += d.Format() + "\n";
  return out;
}

Result<pipeline::Compiled> CompileToKernels(const Case& c) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kProd;
  o.up_to = pipeline::Rung::kKernel;
  return pipeline::Compile(CanonicalJson(c.doc), o);
}

// The ops a module's kernels compute.
std::set<std::string> KernelOps(const kernel::Module& m) {
  std::set<std::string> ops;
  for (const kernel::Kernel& k : m.kernels) {
    if (k.kind == kernel::KernelKind::kOp) ops.insert(k.op);
    for (const kernel::ExprStep& s : k.expr) ops.insert(s.op);
  }
  return ops;
}

TEST(ConformRegistry, EveryOpHasItsRulesAReferenceAWgslGeneratorAndCases) {
  std::vector<std::string> groups = Groups();
  int ops = 0;
  for (const ops::OpSpec& def : ops::BuiltinOps()->ops()) {
    if (def.kind == ops::OpKind::kSource) continue;
    ++ops;
    SCOPED_TRACE(def.name);
    EXPECT_NE(std::find(groups.begin(), groups.end(), def.name), groups.end());

    // The rules WebIR applies.
    const webir::OpRule* rule = webir::FindRule(def.name);
    ASSERT_NE(rule, nullptr) << "no type rule (webir/ops/<family>.cpp)";
    EXPECT_NE(rule->infer, nullptr) << "no type rule (webir/ops/<family>.cpp)";
    if (def.differentiable)
      EXPECT_NE(rule->grad, nullptr) << "differentiable, but no gradient rule";
    else
      EXPECT_EQ(rule->grad, nullptr) << "a gradient rule, but the table says not differentiable";

    // The oracle.
    const bool integer_only =
        !def.ports.empty() &&
        def.ports[0].dtypes == std::vector<DType>{DType::kI32, DType::kU32};
    if (def.kind == ops::OpKind::kElementwise && integer_only) {
      // Bit operations: an integer reference; their WGSL is checked on the cases below.
      EXPECT_NE(kernel::ref::FindIntegerScalar(def.name), nullptr)
          << "no CPU reference (kernel/ref/elementwise.cpp)";
    } else if (def.kind == ops::OpKind::kElementwise) {
      const kernel::ref::ScalarImpl* s = kernel::ref::FindScalar(def.name);
      ASSERT_NE(s, nullptr) << "no CPU reference (kernel/ref/elementwise.cpp)";
      EXPECT_EQ(static_cast<size_t>(s->arity), def.Arity());
      EXPECT_TRUE(s->f32 && s->f64);
      // The fused-kernel generator knows the op's expression.
      EXPECT_NE(kernel::wgsl::ElementwiseExpr(def.name, "a", "b", "c"), "")
          << "no WGSL expression (kernel/emit/wgsl/elementwise.cpp)";
    } else if (def.kind == ops::OpKind::kNeighbour || def.kind == ops::OpKind::kPosition) {
      // Fused kernels load permuted, or compute the index, for these ops by name
      // (kernel/ref/ref.cpp, emit/wgsl).
      EXPECT_TRUE(def.name == "shift" || def.name == "butterfly" || def.name == "arange")
          << "a positional op the fused kernels do not know";
    } else {
      const kernel::ref::OpImpl* o = kernel::ref::FindOp(def.name);
      ASSERT_NE(o, nullptr) << "no CPU reference (kernel/ref/<family>.cpp)";
      EXPECT_TRUE(o->f32 && o->f64);
    }

    // Cases, each compiling through the real ladder to WGSL that computes the op.
    std::vector<Case> cases = CasesFor(def.name);
    ASSERT_FALSE(cases.empty()) << "no conformance cases (conform/cases.cpp)";
    std::set<std::string> names;
    for (const Case& c : cases) {
      SCOPED_TRACE(c.id());
      EXPECT_TRUE(names.insert(c.name).second) << "duplicate case name";
      EXPECT_EQ(c.group, def.name);
      EXPECT_GE(c.doc["version"].get<int>(), def.min_version);
      auto compiled = CompileToKernels(c);
      ASSERT_TRUE(compiled.ok()) << Describe(compiled.errors()) << CanonicalJson(c.doc);
      EXPECT_TRUE(KernelOps(*compiled->module).count(def.name))
          << "the case does not compute the op";
      for (const kernel::Kernel& k : compiled->module->kernels) {
        EXPECT_NE(k.Wgsl().source.find("fn main"), std::string::npos) << k.name;
        EXPECT_EQ(k.Wgsl().source.find("let s0 = ;"), std::string::npos)
            << k.name << " has an empty expression";
      }
    }
  }
  EXPECT_GT(ops, 0);
  EXPECT_EQ(groups.back(), kFusedGroup);
  EXPECT_EQ(static_cast<int>(groups.size()), ops + 1);
}

// Fused cases really fuse: one kernel chaining 3 to 5 ops.
TEST(ConformRegistry, FusedCasesCompileToOneKernelOfThreeToFiveOps) {
  std::vector<Case> cases = CasesFor(kFusedGroup);
  ASSERT_GE(cases.size(), 3u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id());
    auto compiled = CompileToKernels(c);
    ASSERT_TRUE(compiled.ok()) << Describe(compiled.errors());
    ASSERT_EQ(compiled->module->kernels.size(), 1u);
    const kernel::Kernel& k = compiled->module->kernels.front();
    EXPECT_EQ(k.kind, kernel::KernelKind::kElementwise);
    size_t steps = std::count_if(k.expr.begin(), k.expr.end(),
                                 [](const kernel::ExprStep& s) { return s.op != "full"; });
    EXPECT_GE(steps, 3u);
    EXPECT_LE(steps, 5u);
    // The loosest class of the chain governs it, and never tighter than `tight`: a GPU compiler
    // may contract a multiply and an add of the chain into one FMA.
    policy::ToleranceClass loosest = policy::ToleranceClass::kTight;
    for (const std::string& op : c.ops)
      loosest = std::max(loosest, ops::BuiltinOps()->Find(op)->tolerance);
    EXPECT_EQ(c.tolerance, loosest);
  }
}

// The suite covers what the brief of conformance asks for: sizes of 1, sizes that are not
// multiples of the workgroup size, a grid over 65535 workgroups, broadcasting both ways.
TEST(ConformRegistry, CasesCoverEdgeSizesAndLargeGrids) {
  int big = 0;
  for (const std::string& g : Groups()) {
    bool size1 = false, ragged = false;
    for (const Case& c : CasesFor(g)) {
      for (const CaseInput& in : c.inputs) {
        int64_t n = 1;
        for (int64_t s : in.shape) n *= s;
        size1 = size1 || n == 1;
        ragged = ragged || n % 64 != 0;
        if (n > int64_t{65535} * 64) ++big;
      }
    }
    // matmul_q's inputs hold whole blocks of 256 values per row, so neither is ever one element
    // or ragged; its outputs (7x13, 2x67, ...) are.
    if (g == "matmul_q") continue;
    EXPECT_TRUE(ragged) << g;
    if (g != kFusedGroup) {
      EXPECT_TRUE(size1) << g;
    }
  }
  EXPECT_GE(big, 5);
  std::set<std::string> add_cases;
  for (const Case& c : CasesFor("add")) add_cases.insert(c.name);
  for (const char* n : {"bcast_row", "bcast_col", "scalar", "rank3_rank1", "grid_over_65535"})
    EXPECT_TRUE(add_cases.count(n)) << n;
}

TEST(ConformData, FreshSeedsGiveFreshDataInTheOpsDomain) {
  Case log_case = CasesFor("log").at(4);  // 1009 elements
  runtime::Feeds a = MakeFeeds(log_case, 1), b = MakeFeeds(log_case, 1), c = MakeFeeds(log_case, 2);
  EXPECT_EQ(a["x"].ToFloats(), b["x"].ToFloats());  // a seed reproduces its data
  EXPECT_NE(a["x"].ToFloats(), c["x"].ToFloats());
  for (float v : a["x"].view<float>()) EXPECT_GT(v, 0.0f);
  for (const Case& k : CasesFor("div")) {
    runtime::Feeds feeds = MakeFeeds(k, 3);
    // A case with a constant operand feeds only the other one.
    if (feeds.count("b")) {
      for (float v : feeds["b"].view<float>()) EXPECT_GE(std::fabs(v), 0.5f);
    }
    if (feeds.count("a")) {
      for (float v : feeds["a"].view<float>()) EXPECT_NE(v, 0.0f);
    }
  }
  for (const Case& k : CasesFor("life")) {
    std::vector<float> cells = MakeFeeds(k, 4)["x"].ToFloats();
    for (float v : cells) EXPECT_TRUE(v == 0.0f || v == 1.0f);
    if (!cells.empty()) {
      EXPECT_NE(std::count(cells.begin(), cells.end(), 1.0f), 0) << k.id();
    }
  }
}

TEST(ConformCompare, CountsUnwrittenAndOutOfToleranceElements) {
  const uint32_t poison = 0x7fc0deadu;
  float p;
  std::memcpy(&p, &poison, sizeof p);
  std::vector<float> want = {1.0f, 2.0f, 3.0f, NAN};
  policy::Thresholds exact{0, 0};
  EXPECT_TRUE(Compare(want, want, exact, poison).ok());
  std::vector<float> got = {1.0f, 2.5f, p, NAN};
  Comparison c = Compare(got, want, exact, poison);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.unwritten, 1);
  EXPECT_EQ(c.first_bad, 1);
  EXPECT_EQ(c.first_got, 2.5f);
  EXPECT_TRUE(std::isinf(c.max_abs));  // a NaN where 3 was expected
  // A poisoned element is unwritten even where the reference is NaN.
  EXPECT_EQ(Compare(std::vector<float>{p}, std::vector<float>{NAN}, exact, poison).unwritten, 1);
  policy::Thresholds loose{0.1, 0.1};
  Comparison d = Compare(std::vector<float>{1.05f}, std::vector<float>{1.0f}, loose, poison);
  EXPECT_TRUE(d.ok());
  EXPECT_NEAR(d.max_abs, 0.05, 1e-6);
  EXPECT_NEAR(d.max_rel, 0.05, 1e-6);
  EXPECT_FALSE(BitIdentical(std::vector<float>{0.0f}, std::vector<float>{-0.0f}));
}

}  // namespace
}  // namespace scellis::conform
