// Gradient checks: for every differentiable op in the registry, a small graph with seeded random
// inputs (never zeros, inside the op's domain), a scalar loss sum(op(...) * R) with a fixed random
// R, the backward pass from Backward, lowered and run in float64 on the CPU reference, and each
// analytic gradient element compared with a central finite difference of the same forward plan
// (eps 1e-6, float64, thresholds tighter than policy::GradcheckThresholds()). The suite fails when
// an op that is differentiable by nature has no gradient rule, or has one that no case below
// exercises.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "base/random.h"
#include "execplan/plan.h"
#include "kernel/module.h"
#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"
#include "webir/autodiff/autodiff.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

enum class Domain {
  kSigned,    // ±[0.2, 1.0]: away from the kinks of relu and the zeros of everything
  kPositive,  // [0.5, 1.5]: log, sqrt
  kLabels,    // integer class indices in [0, C), C = the last size of the first input; no gradient
  kMask,      // a bool input, 0 or 1 at random; no gradient
  kConstant,  // a rank-0 `full` of Arg::value (clamp's bounds, masked_fill's value); no gradient
  kIndex,     // an i32 input of indices in [0, Arg::value), repeats likely; no gradient
};

struct Arg {
  std::vector<int64_t> shape;
  Domain domain = Domain::kSigned;
  double value = 0;  // kConstant; kIndex: the size of the indexed axis
};

bool GetsGradient(const Arg& a) {
  return a.domain == Domain::kSigned || a.domain == Domain::kPositive;
}

struct Case {
  std::string op;
  std::vector<Arg> args;
  Json attrs = Json::object();
};

// Ops with no gradient by nature: step functions, integer stencils, optimizer updates.
bool NotDifferentiable(const ops::OpSpec& d) {
  return d.kind == OpKind::kSource || d.kind == OpKind::kOptimizer || d.kind == OpKind::kStencil ||
         d.name == "positive" || d.name == "max_share" || d.name == "eq" || d.name == "ne" ||
         d.name == "lt" || d.name == "le" || d.name == "gt" || d.name == "ge" ||
         d.name == "uniform" || d.name == "matmul_q" || d.name == "matmul_fixed" ||
         d.kind == OpKind::kPosition || d.name.starts_with("bitwise_") ||
         d.name.starts_with("shift_");
}

std::vector<Case> Cases() {
  using D = Domain;
  const Arg s23{{2, 3}}, s34{{3, 4}}, s234{{2, 3, 4}};
  return {
      {"add", {s23, s23}},
      {"add", {s234, {{3, 1}}}},
      {"add", {{{1, 3}}, {{2, 1}}}},
      {"add", {s23, {{}}}},
      {"sub", {s234, {{4}}}},
      {"sub", {{{3, 1}}, s34}},
      {"mul", {s23, s23}},
      {"mul", {{{2, 1, 4}}, {{3, 1}}}},
      {"div", {s23, {{2, 3}, D::kPositive}}},
      {"div", {s234, {{4}, D::kPositive}}},
      {"maximum", {s23, s23}},
      {"maximum", {s234, {{4}}}},
      {"minimum", {s23, s23}},
      {"minimum", {{{3, 1}}, s34}},
      {"where", {{{2, 3}, D::kMask}, s23, s23}},
      {"where", {{{3, 1}, D::kMask}, {{4}}, s34}},
      {"masked_fill", {s34, {{3, 4}, D::kMask}, {{}, D::kConstant, -2.5}}},
      {"masked_fill", {s234, {{4}, D::kMask}, {{}, D::kConstant, 0.0}}},
      // Inputs are +-[0.2, 1]: bounds inside that range clip some elements and pass others.
      {"clamp", {s34, {{}, D::kConstant, -0.5}, {{}, D::kConstant, 0.6}}},
      {"clamp", {s234, {{}, D::kConstant, -0.4}, {{}, D::kConstant, INFINITY}}},
      {"cast", {s34}, {{"dtype", "f32"}}},
      // The step is a constant: the mask is the same in every run of the forward plan.
      {"dropout", {s34, {{}, D::kConstant, 3}}, {{"p", 0.4}, {"seed", 17}}},
      {"dropout", {s234, {{}, D::kConstant, 1}}, {{"p", 0.1}}},
      {"relu", {s34}},
      {"neg", {s34}},
      {"exp", {s34}},
      {"log", {{{3, 4}, D::kPositive}}},
      {"sqrt", {{{3, 4}, D::kPositive}}},
      {"tanh", {s34}},
      {"sigmoid", {s34}},
      {"gelu", {s234}},
      {"gelu_grad", {s34, s34}},
      {"gelu_grad", {s34, {{4}}}},
      {"transpose", {s34}},
      {"permute", {s234}, {{"dims", {2, 0, 1}}}},
      {"permute", {{{2, 3, 2, 2}}}, {{"dims", {0, 3, 1, 2}}}},
      {"reshape", {s234}, {{"shape", {4, -1}}}},
      {"reshape", {s34}, {{"shape", {2, 1, 6}}}},
      {"slice",
       {s234},
       {{"starts", {1, -1, 0}}, {"stops", {nullptr, nullptr, 4}}, {"steps", {1, -2, 3}}}},
      {"slice", {s34}, {{"starts", {2, 1}}, {"stops", {0, 3}}, {"steps", {-1, 1}}}},
      {"slice_scatter",
       {s234, {{1, 2, 2}}},
       {{"starts", {1, -1, 0}}, {"stops", {nullptr, nullptr, 4}}, {"steps", {1, -2, 3}}}},
      {"slice_scatter",
       {s34, {{2, 2}}},
       {{"starts", {2, 1}}, {"stops", {0, 3}}, {"steps", {-1, 1}}}},
      {"flip", {s234}, {{"axes", {0, -1}}}},
      {"flip", {s34}, {{"axes", {1}}}},
      {"pad", {s234}, {{"pads", {{1, 0}, {0, 2}, {1, 1}}}, {"value", 0.75}}},
      {"pad", {s34}, {{"pads", {{0, 0}, {3, 0}}}}},
      // Entries of different lengths along the axis, an empty one, and one alone.
      {"concat", {s234, {{2, 1, 4}}, {{2, 0, 4}}, {{2, 2, 4}}}, {{"axis", 1}}},
      {"concat", {s34, {{3, 2}}}, {{"axis", -1}}},
      {"concat", {s34}, {{"axis", 0}}},
      {"stack", {s34, s34, s34}, {{"axis", 1}}},
      {"stack", {s234, s234}, {{"axis", -1}}},
      {"stack", {Arg{std::vector<int64_t>{}}, Arg{std::vector<int64_t>{}}}, {{"axis", 0}}},
      {"shift", {s34}, {{"shifts", {1, -2}}, {"boundary", "zero"}}},
      {"shift", {s234}, {{"shifts", {-3, 1, 5}}, {"boundary", "wrap"}}},
      {"butterfly", {s34}, {{"mask", 3}, {"axis", 1}}},
      {"butterfly", {s234}, {{"mask", 1}, {"axis", 0}}},
      // Indices longer than their axis: positions repeat, so gradients sum several terms.
      {"index_select", {s34, {{5}, D::kIndex, 3}}, {{"axis", 0}}},
      {"index_select", {s234, {{6}, D::kIndex, 4}}, {{"axis", -1}}},
      {"gather", {s34, {{5, 4}, D::kIndex, 3}}, {{"axis", 0}}},
      {"gather", {s234, {{2, 2, 7}, D::kIndex, 4}}, {{"axis", 2}}},
      {"index_add", {s34, {{5}, D::kIndex, 3}, {{5, 4}}}, {{"axis", 0}}},
      {"index_add", {s234, {{2}, D::kIndex, 3}, {{2, 2, 4}}}, {{"axis", 1}}},
      {"scatter_add", {s34, {{5, 4}, D::kIndex, 3}, {{5, 4}}}, {{"axis", 0}}},
      {"scatter_add", {s234, {{2, 3, 6}, D::kIndex, 4}, {{2, 3, 6}}}, {{"axis", -1}}},
      {"matmul", {s34, {{4, 5}}}},
      {"matmul", {s234, {{4, 5}}}},
      {"matmul", {{{3, 4}}, {{2, 4, 5}}}},
      {"matmul", {{{2, 1, 3, 4}}, {{3, 4, 2}}}},
      {"sum", {s234}},
      {"sum", {s234}, {{"axis", 1}}},
      {"sum", {s234}, {{"axis", -1}, {"keepdim", true}}},
      {"sum", {s34}, {{"keepdim", true}}},
      {"cumsum", {s234}, {{"axis", 1}}},
      {"cumsum", {s34}, {{"axis", -1}}},
      {"mean", {s234}},
      {"mean", {s234}, {{"axis", 0}}},
      {"mean", {s34}, {{"axis", 1}, {"keepdim", true}}},
      {"softmax", {{{5}}}},
      {"softmax", {s234}},
      {"log_softmax", {{{3, 5}}}},
      {"log_softmax", {s234}},
      {"cross_entropy", {{{4, 5}}, {{4}, D::kLabels}}},
      {"cross_entropy", {{{1, 3}}, {{1}, D::kLabels}}},
      {"cross_entropy_grad", {{{4, 5}}, {{4}, D::kLabels}, {{}}}},
  };
}

int AddNode(Graph& g, const std::string& op, std::vector<int> args, Json attrs) {
  const OpRule* rule = FindRule(op);
  InferContext c;
  for (int a : args) c.args.push_back(g.at(a).type);
  c.attrs = std::move(attrs);
  c.version = 2;
  auto t = rule->infer(c);
  EXPECT_TRUE(t.ok()) << op << ": " << (t.ok() ? "" : t.errors()[0].message);
  if (!t.ok()) return -1;
  Node n;
  n.op = op;
  n.args = std::move(args);
  n.attrs = c.attrs;
  n.type = t.value();
  return g.Add(std::move(n));
}

int AddInput(Graph& g, const std::string& name, const std::vector<int64_t>& shape,
             DType dtype = DType::kF32) {
  Node n;
  n.op = "input";
  n.role = Role::kInput;
  n.label = name;
  n.name = name;
  n.type = MakeType(shape, dtype);
  return g.Add(std::move(n));
}

int AddConstant(Graph& g, double value) {
  Node n;
  n.op = "full";
  n.role = Role::kConst;
  n.type = MakeType({});
  n.attrs["value"] = value;
  return g.Add(std::move(n));
}

std::vector<double> Values(const TensorType& t, Domain d, int64_t classes, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(t.elements()));
  for (size_t i = 0; i < v.size(); ++i) {
    double u = CounterUniform(seed, i), sign_u = CounterUniform(seed ^ 0x5bd1e995, i);
    switch (d) {
      case Domain::kSigned:
        v[i] = (0.2 + 0.8 * u) * (sign_u < 0.5 ? -1 : 1);
        break;
      case Domain::kPositive:
        v[i] = 0.5 + u;
        break;
      case Domain::kLabels:
        v[i] = std::floor(u * static_cast<double>(classes));
        break;
      case Domain::kMask:
        v[i] = u < 0.5 ? 1 : 0;
        break;
      case Domain::kIndex:
        v[i] = std::floor(u * static_cast<double>(classes));
        break;
      case Domain::kConstant:
        break;
    }
  }
  return v;
}

// Tighter than policy::GradcheckThresholds(): in float64 the rules here agree with central
// differences to about 1e-9.
policy::Thresholds Limits() {
  policy::Thresholds t{1e-8, 1e-6};
  EXPECT_LE(t.atol, policy::GradcheckThresholds().atol);
  EXPECT_LE(t.rtol, policy::GradcheckThresholds().rtol);
  return t;
}

Result<execplan::Plan> Lower(const Graph& g) {
  pipeline::CompileOptions options;
  options.plan.budget_bytes = int64_t{1} << 30;
  SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled c, pipeline::CompileGraph(g, options));
  return std::move(*c.plan);
}

struct Worst {
  double abs = 0, rel = 0;
  int checked = 0;
};

std::map<std::string, Worst>& Report() {
  static std::map<std::string, Worst> report;
  return report;
}

std::string Describe(const Status& s) {
  std::string out;
  for (const Diagnostic& d : s.errors()) out += d.Format() + "\n";
  return out;
}

void Check(const Case& c, uint64_t seed) {
  SCOPED_TRACE(c.op + " " + c.attrs.dump());
  Graph g;
  g.version = 2;
  g.tier = policy::Tier::kDebug;
  std::vector<int> inputs;
  runtime::cpu::ExactFeeds<double> feeds;
  int64_t classes = c.args[0].shape.empty() ? 1 : c.args[0].shape.back();
  for (size_t i = 0; i < c.args.size(); ++i) {
    std::string name = std::string("x").append(std::to_string(i));
    const Arg& arg = c.args[i];
    if (arg.domain == Domain::kConstant) {
      inputs.push_back(AddConstant(g, arg.value));
      continue;
    }
    const DType dtype = arg.domain == Domain::kMask    ? DType::kBool
                        : arg.domain == Domain::kIndex ? DType::kI32
                                                       : DType::kF32;
    inputs.push_back(AddInput(g, name, arg.shape, dtype));
    const int64_t bound = arg.domain == Domain::kIndex ? static_cast<int64_t>(arg.value) : classes;
    feeds[name] = Values(g.at(inputs.back()).type, arg.domain, bound, seed * 31 + i);
  }
  int out = AddNode(g, c.op, inputs, c.attrs);
  ASSERT_GE(out, 0);
  int r = AddInput(g, "r", g.at(out).type.sizes());
  feeds["r"] = Values(g.at(r).type, Domain::kSigned, 1, seed * 31 + 17);
  int loss = AddNode(g, "sum", {AddNode(g, "mul", {out, r}, Json::object())}, Json::object());

  Graph forward = g;
  forward.outputs = {{"loss", loss}};
  std::vector<int> wrt;
  for (size_t i = 0; i < c.args.size(); ++i)
    if (GetsGradient(c.args[i])) wrt.push_back(inputs[i]);
  auto grads = Backward(g, loss, wrt);
  ASSERT_TRUE(grads.ok()) << Describe(grads.status());
  for (size_t k = 0; k < wrt.size(); ++k) {
    g.outputs.push_back({std::string("d").append(std::to_string(k)), grads.value()[k]});
    // A rule may not give up on an input: the zero constant marks "no path".
    EXPECT_NE(g.at(grads.value()[k]).op, "full") << "no gradient reached input " << k;
  }

  auto backward_plan = Lower(g);
  ASSERT_TRUE(backward_plan.ok()) << Describe(backward_plan.status());
  auto forward_plan = Lower(forward);
  ASSERT_TRUE(forward_plan.ok()) << Describe(forward_plan.status());
  kernel::ref::Parallel serial(1);
  auto analytic = runtime::cpu::RunPlan<double>(backward_plan.value(), {}, serial, feeds);
  ASSERT_TRUE(analytic.ok()) << Describe(analytic.status());

  const double eps = 1e-6;
  const policy::Thresholds limits = Limits();
  Worst& worst = Report()[c.op];
  for (size_t k = 0; k < wrt.size(); ++k) {
    std::string name = g.at(wrt[k]).label;
    const std::vector<double>& got = analytic.value()[k];
    for (size_t e = 0; e < got.size(); ++e) {
      auto at = [&](double delta) {
        runtime::cpu::ExactFeeds<double> shifted = feeds;
        shifted[name][e] += delta;
        auto l = runtime::cpu::RunPlan<double>(forward_plan.value(), {}, serial, shifted);
        EXPECT_TRUE(l.ok());
        return l.ok() ? l.value()[0][0] : NAN;
      };
      double numeric = (at(eps) - at(-eps)) / (2 * eps);
      EXPECT_TRUE(limits.Accepts(got[e], numeric))
          << "d loss / d " << name << "[" << e << "]: analytic " << got[e] << ", numeric "
          << numeric;
      double err = std::fabs(got[e] - numeric);
      worst.abs = std::max(worst.abs, err);
      worst.rel = std::max(worst.rel, err / std::max(std::fabs(numeric), 1e-3));
      ++worst.checked;
    }
  }
}

TEST(Gradcheck, EveryDifferentiableOpHasARuleAndACase) {
  std::set<std::string> covered;
  for (const Case& c : Cases()) covered.insert(c.op);
  for (const ops::OpSpec& d : ops::BuiltinOps()->ops()) {
    const OpRule* rule = FindRule(d.name);
    if (NotDifferentiable(d)) {
      EXPECT_FALSE(d.differentiable) << d.name << " is marked differentiable in the op table";
      EXPECT_TRUE(!rule || !rule->grad)
          << d.name << " has a gradient rule but is listed as not differentiable";
      continue;
    }
    EXPECT_TRUE(d.differentiable) << d.name << " is not marked differentiable in the op table";
    EXPECT_TRUE(rule && rule->grad)
        << "the op " << d.name << " is differentiable but has no gradient rule";
    EXPECT_TRUE(covered.count(d.name)) << "the op " << d.name << " has no gradient check case";
  }
}

TEST(Gradcheck, AnalyticMatchesFiniteDifferences) {
  std::vector<Case> cases = Cases();
  for (size_t i = 0; i < cases.size(); ++i) Check(cases[i], 1000 + i);
  std::printf("gradcheck (float64, central differences, eps 1e-6):\n");
  for (const auto& [op, w] : Report())
    std::printf("  %-20s %4d elements  max abs err %.2e  max rel err %.2e\n", op.c_str(), w.checked,
                w.abs, w.rel);
}

// The document path lowers a long list into a tree (webir/graph_test.cpp); a WebIR graph built
// past that with one list op of more entries than a kernel binds is refused when its WGSL is
// made, never handed to a device whose bind group would not hold it.
TEST(ListOps, AKernelOverMoreEntriesThanBindIsRefused) {
  for (size_t entries : {kMaxListArgs, kMaxListArgs + 1}) {
    Graph g;
    g.version = 4;
    int x = AddInput(g, "x", {2});
    int y = AddNode(g, "concat", std::vector<int>(entries, x), {{"axis", 0}});
    g.outputs = {{"y", y}};
    pipeline::CompileOptions options;
    auto c = pipeline::CompileGraph(g, options);
    if (entries == kMaxListArgs) {
      EXPECT_TRUE(c.ok()) << c.errors().front().Format();
    } else {
      ASSERT_FALSE(c.ok());
      EXPECT_NE(c.errors().front().message.find("more than one kernel binds"), std::string::npos)
          << c.errors().front().Format();
    }
  }
}

TEST(Backward, SumsGradientsOfSharedValuesInAFixedOrder) {
  // y = x * x + x: dy/dx = 2x + 1, with x used three times.
  Graph g;
  g.version = 2;
  int x = AddInput(g, "x", {3});
  int y = AddNode(g, "add", {AddNode(g, "mul", {x, x}, Json::object()), x}, Json::object());
  int loss = AddNode(g, "sum", {y}, Json::object());
  auto grads = Backward(g, loss, {x});
  ASSERT_TRUE(grads.ok());
  g.outputs = {{"dx", grads.value()[0]}};
  EXPECT_EQ(g.at(grads.value()[0]).name, "d_x");
  EXPECT_EQ(g.at(grads.value()[0]).purpose, Purpose::kGradient);
  EXPECT_NE(Print(g).find("(grad)"), std::string::npos);
  auto plan = Lower(g);
  ASSERT_TRUE(plan.ok());
  auto out = runtime::cpu::RunPlan<double>(plan.value(), {}, kernel::ref::Parallel(1),
                                           {{"x", {1.0, -2.0, 0.5}}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.value()[0], (std::vector<double>{3.0, -3.0, 2.0}));
}

TEST(Backward, UnreachedInputGetsZeros) {
  Graph g;
  int x = AddInput(g, "x", {2});
  int z = AddInput(g, "z", {2, 2});
  int loss = AddNode(g, "sum", {x}, Json::object());
  auto grads = Backward(g, loss, {z});
  ASSERT_TRUE(grads.ok());
  EXPECT_EQ(g.at(grads.value()[0]).op, "full");
  EXPECT_EQ(g.at(grads.value()[0]).type.sizes(), (std::vector<int64_t>{2, 2}));
}

TEST(Backward, RefusesANonScalarLoss) {
  Graph g;
  int x = AddInput(g, "x", {2});
  auto grads = Backward(g, AddNode(g, "exp", {x}, Json::object()), {x});
  ASSERT_FALSE(grads.ok());
  EXPECT_EQ(grads.errors()[0].code, "loss-not-scalar");
}

// A clamped shift sends the gradient of every element past an edge to the edge element, which
// no shift expresses: refused by name, with the reason, never a wrong gradient.
TEST(Backward, RefusesAClampedShift) {
  Graph g;
  int x = AddInput(g, "x", {5});
  int shifted = AddNode(g, "shift", {x}, {{"shifts", {2}}, {"boundary", "clamp"}});
  auto grads = Backward(g, AddNode(g, "sum", {shifted}, Json::object()), {x});
  ASSERT_FALSE(grads.ok());
  EXPECT_EQ(grads.errors()[0].code, "not-differentiable");
  EXPECT_NE(grads.errors()[0].message.find("\"clamp\""), std::string::npos);
}

TEST(Backward, NamesTheOpWithoutAGradient) {
  Graph g;
  int x = AddInput(g, "x", {2});
  int loss = AddNode(g, "sum", {AddNode(g, "positive", {x}, Json::object())}, Json::object());
  auto grads = Backward(g, loss, {x});
  ASSERT_FALSE(grads.ok());
  EXPECT_EQ(grads.errors()[0].code, "not-differentiable");
  EXPECT_NE(grads.errors()[0].message.find("positive"), std::string::npos);
}

}  // namespace
}  // namespace scellis::webir
