#include "conform/user_gradcheck.h"

#include <cmath>

#include "base/random.h"
#include "doc/user_ops.h"
#include "execplan/plan.h"
#include "ops/user_op.h"
#include "runtime/backends/cpu/executor.h"

namespace scellis::conform {
namespace {

using Shape = std::vector<int64_t>;

// Few elements: each costs two runs of the forward reference.
std::vector<Shape> SmallShapesOfRank(int rank) {
  switch (rank) {
    case 0:
      return {{}};
    case 1:
      return {{1}, {7}};
    case 2:
      return {{1, 1}, {4, 5}};
    case 3:
      return {{2, 3, 2}};
    default: {
      Shape ragged(static_cast<size_t>(rank), 1);
      ragged.front() = 2;
      ragged.back() = 3;
      return {ragged};
    }
  }
}

std::string ShapeName(const Shape& s) {
  std::string n = "r" + std::to_string(s.size());
  for (size_t i = 0; i < s.size(); ++i) n += (i ? "x" : "_") + std::to_string(s[i]);
  return n;
}

// A document defining the op (by the definition of `defined`) and applying `op` once, each port
// an input of `shape` named after it, the result the output "out". An op defined through the API,
// whose callables no document carries, is read against `table` instead.
Case OneUse(const std::string& defined, const Json& definition, const ops::OpSpec& op,
            const Shape& shape, const std::shared_ptr<const ops::OpTable>& table) {
  Case c;
  c.group = op.name;
  c.name = ShapeName(shape);
  c.ops = {op.name};
  Json nodes = Json::array();
  Json use = {{"id", static_cast<int>(op.ports.size())}, {"op", op.name}};
  for (size_t i = 0; i < op.ports.size(); ++i) {
    nodes.push_back({{"id", i}, {"op", "input"}, {"name", op.ports[i].name}, {"shape", shape}});
    use[op.ports[i].name] = i;
  }
  nodes.push_back(use);
  c.doc = {{"version", doc::kUserOpsVersion},
           {"name", op.name + "/" + c.name},
           {"nodes", nodes},
           {"outputs", Json::array({{{"name", "out"}, {"id", op.ports.size()}}})}};
  if (op.user->callable)
    c.table = table;
  else
    c.doc["ops"] = {{defined, definition}};
  return c;
}

// Magnitudes in [0.25, 1.5], either sign: away from zero, where references tend to have kinks.
std::vector<double> Values(uint64_t seed, int64_t count) {
  std::vector<double> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) {
    const double u = CounterUniform(seed, i), sign = CounterUniform(seed ^ 0x5bd1e995u, i);
    v[i] = (0.25 + 1.25 * u) * (sign < 0.5 ? -1 : 1);
  }
  return v;
}

class Runner {
 public:
  explicit Runner(const kernel::ref::Parallel& parallel) : parallel_(parallel) {}

  // The plan of `c` on the CPU reference, or why it has none.
  Result<execplan::Plan> Plan(const Case& c) {
    auto plan = CompileCase(c, policy::Tier::kDebug,
                            execplan::HostMemoryLimits("cpu", "the CPU reference"));
    if (!plan.ok()) return plan.status();
    if (plan->verdict == execplan::Verdict::kRed)
      return InternalError("conform.GradcheckUserOp", "the plan of " + c.id() + " is red");
    return plan;
  }

  // The plan's output in float64 for these values of its inputs.
  Result<std::vector<double>> Run(const execplan::Plan& plan,
                                  const runtime::cpu::ExactFeeds<double>& values) {
    runtime::Feeds feeds;
    const webir::Graph& g = plan.graph();
    for (const webir::Node& n : g.nodes) {
      auto it = values.find(n.label);
      if (n.role == webir::Role::kInput && it != values.end())
        feeds[n.label] = runtime::HostTensor::FromValues(n.type, it->second);
    }
    SCELLIS_ASSIGN_OR_RETURN(auto out,
                             runtime::cpu::RunPlan<double>(plan, feeds, parallel_, values));
    return std::move(out.at(0));
  }

 private:
  const kernel::ref::Parallel& parallel_;
};

std::string FirstMessage(const Status& s) {
  return s.errors().empty() ? "unknown error" : s.errors().front().Format();
}

// d port against finite differences of the forward for one shape, into `cr`.
void CheckOne(const ops::OpSpec& forward, const ops::OpSpec& gradient, const Shape& shape,
              uint64_t seed, const std::shared_ptr<const ops::OpTable>& table,
              const kernel::ref::Parallel& parallel, CaseResult& cr) {
  const ops::UserKernel& user = *forward.user;
  // A forward callable run in f32 would make the differences measure its rounding.
  if (user.callable && !user.callable_f64) {
    cr.error = "the forward reference has no float64 form to differentiate";
    return;
  }
  Runner runner(parallel);
  auto forward_plan = runner.Plan(OneUse(forward.name, user.definition, forward, shape, table));
  auto gradient_plan = runner.Plan(OneUse(forward.name, user.definition, gradient, shape, table));
  for (const auto* p : {&forward_plan, &gradient_plan}) {
    if (!p->ok()) {
      cr.error = "does not compile: " + FirstMessage(p->status());
      return;
    }
  }
  const TensorType type = forward_plan->graph().at(forward_plan->graph().outputs.at(0).node).type;
  const int64_t count = type.elements();
  runtime::cpu::ExactFeeds<double> values;
  for (size_t i = 0; i < forward.ports.size(); ++i)
    values[forward.ports[i].name] = Values(seed + 7919 * (i + 1), count);
  const std::vector<double> upstream = Values(seed ^ 0x2545f4914f6cdd1dull, count);

  auto loss = [&](const runtime::cpu::ExactFeeds<double>& at) -> Result<double> {
    SCELLIS_ASSIGN_OR_RETURN(std::vector<double> y, runner.Run(*forward_plan, at));
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += upstream[i] * y[i];
    return l;
  };
  runtime::cpu::ExactFeeds<double> with_grad = values;
  with_grad[ops::kUpstreamGradientPort] = upstream;
  auto analytic = runner.Run(*gradient_plan, with_grad);
  if (!analytic.ok()) {
    cr.error = "the gradient's reference failed: " + FirstMessage(analytic.status());
    return;
  }
  const std::string& port = gradient.user->gradient_port;
  Comparison& c = cr.comparison;
  c.elements = count;
  for (int64_t j = 0; j < count; ++j) {
    runtime::cpu::ExactFeeds<double> plus = values, minus = values;
    plus[port][j] += kGradcheckStep;
    minus[port][j] -= kGradcheckStep;
    auto lp = loss(plus), lm = loss(minus);
    if (!lp.ok() || !lm.ok()) {
      cr.error =
          "the forward reference failed: " + FirstMessage(lp.ok() ? lm.status() : lp.status());
      return;
    }
    const double want = (*lp - *lm) / (2 * kGradcheckStep);
    const double got = analytic->at(j);
    const double abs = std::fabs(got - want);
    if (std::isfinite(abs)) {
      c.max_abs = std::max(c.max_abs, abs);
      if (want != 0) c.max_rel = std::max(c.max_rel, abs / std::fabs(want));
    }
    const double allowed = cr.thresholds.atol + cr.thresholds.rtol * std::fabs(want);
    c.max_bound_ratio = std::max(c.max_bound_ratio, std::isfinite(abs) ? abs / allowed : INFINITY);
    if (cr.thresholds.Accepts(got, want)) continue;
    if (c.mismatches++ == 0) {
      c.first_bad = j;
      c.first_got = static_cast<float>(got);
      c.first_want = static_cast<float>(want);
      cr.first_bad_at = PositionText(j, shape);
    }
  }
}

// The checks of a user op: per gradient, per small shape of the declared rank.
struct Check {
  std::string id;
  const ops::UserKernel::Gradient* gradient;
  Shape shape;
};

std::vector<Check> ChecksOf(const ops::OpSpec& spec) {
  std::vector<Check> out;
  if (!spec.user || !spec.user->gradient_of.empty()) return out;
  const ops::UserKernel& user = *spec.user;
  std::vector<int> ranks = {1, 2};
  for (const ops::UserPortRank& r : user.ranks)
    if (r.port == user.shape_of) ranks = {r.rank};
  for (const ops::UserKernel::Gradient& g : user.gradients)
    for (int rank : ranks)
      for (const Shape& shape : SmallShapesOfRank(rank))
        out.push_back({spec.name + "/gradcheck_" + g.port + "_" + ShapeName(shape), &g, shape});
  return out;
}

}  // namespace

std::vector<std::string> GradcheckIds(const std::string& op, const ops::OpTable& table) {
  std::vector<std::string> ids;
  if (const ops::OpSpec* spec = table.Find(op))
    for (const Check& c : ChecksOf(*spec)) ids.push_back(c.id);
  return ids;
}

std::vector<CaseResult> GradcheckUserOp(const ops::OpSpec& spec, const ops::OpTable& table,
                                        uint64_t seed, const kernel::ref::Parallel& parallel) {
  std::vector<CaseResult> out;
  const std::vector<Check> checks = ChecksOf(spec);
  // The cases of an op with callables read against a table of the built-ins and its ops.
  std::shared_ptr<ops::OpTable> callables;
  if (spec.user && spec.user->callable) {
    callables = std::make_shared<ops::OpTable>(*ops::BuiltinOps());
    callables->Add(spec);
    for (const ops::UserKernel::Gradient& g : spec.user->gradients)
      if (const ops::OpSpec* d = table.Find(g.op)) callables->Add(*d);
  }
  for (size_t k = 0; k < checks.size(); ++k) {
    const Check& check = checks[k];
    CaseResult cr;
    cr.id = check.id;
    cr.shape = MakeType(check.shape).ShapeString();
    cr.tolerance = spec.tolerance;  // the group's class stays the device cases'
    cr.thresholds = policy::GradcheckThresholds();
    const ops::OpSpec* gradient = table.Find(check.gradient->op);
    if (!gradient)
      cr.error = "the gradient's op " + check.gradient->op + " is missing";
    else
      CheckOne(spec, *gradient, check.shape, seed + 1000003 * k, callables, parallel, cr);
    out.push_back(std::move(cr));
  }
  return out;
}

}  // namespace scellis::conform
