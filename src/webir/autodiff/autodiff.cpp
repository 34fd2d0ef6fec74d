#include "webir/autodiff/autodiff.h"

#include <algorithm>
#include <numeric>

#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

// Errors recorded by grad::Emit while Backward runs the rules (rules return plain ids).
thread_local std::vector<Diagnostic>* g_rule_errors = nullptr;

void RecordRuleError(std::string message) {
  if (g_rule_errors) g_rule_errors->push_back(InternalError("webir.Backward", std::move(message)));
}

bool IsDefaultName(const Node& n) {
  return n.name.size() > 1 && n.name[0] == 't' && n.name.substr(1) == std::to_string(n.id);
}

// Rules produce a gradient for every input; those of inputs off the path (the data operand of a
// matmul, say) are never used. Drops the appended nodes that no result needs and renumbers the
// rest, so no dead kernel is planned. Nodes before `first` are untouched.
void RemoveDeadGradients(Graph& g, int first, std::vector<int>& results) {
  const int total = static_cast<int>(g.nodes.size());
  std::vector<char> live(total, 0);
  for (int r : results) live[r] = 1;
  for (int i = total - 1; i >= first; --i)
    if (live[i])
      for (int a : g.nodes[i].args) live[a] = 1;
  std::vector<int> remap(total, -1);
  std::vector<Node> kept(g.nodes.begin(), g.nodes.begin() + first);
  for (int i = 0; i < first; ++i) remap[i] = i;
  for (int i = first; i < total; ++i) {
    if (!live[i]) continue;
    Node n = std::move(g.nodes[i]);
    bool default_name = IsDefaultName(n);
    n.id = static_cast<int>(kept.size());
    if (default_name) n.name = "t" + std::to_string(n.id);
    for (int& a : n.args) a = remap[a];
    remap[i] = n.id;
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  for (int& r : results) r = remap[r];
}

}  // namespace

namespace grad {

int Emit(Graph& g, const std::string& op, std::vector<int> args, Json attrs) {
  for (int a : args)
    if (a < 0 || a >= static_cast<int>(g.nodes.size())) return -1;
  const ops::OpSpec* spec = g.ops->Find(op);
  const OpRule* rule = spec ? RuleOf(*spec) : nullptr;
  if (!spec || !rule || spec->kind == OpKind::kSource || !spec->ArityFits(args.size())) {
    RecordRuleError("a gradient rule built an unknown op or the wrong arity: " + op);
    return -1;
  }
  InferContext c;
  for (int a : args) c.args.push_back(g.at(a).type);
  c.attrs = std::move(attrs);
  c.version = std::max(g.version, spec->min_version);
  c.spec = spec;
  auto type = InferChecked(op, *rule, c);
  if (!type.ok()) {
    // A user's gradient (a reference that computes another shape) is the document's error, told
    // at its definition; a built-in rule's is ours.
    if (spec->user && g_rule_errors) {
      for (const Diagnostic& d : type.errors()) g_rule_errors->push_back(d);
      return -1;
    }
    RecordRuleError("a gradient rule built an ill-typed " + op + ": " +
                    type.errors().front().message);
    return -1;
  }
  Node n;
  n.op = op;
  n.args = std::move(args);
  n.attrs = std::move(c.attrs);
  n.type = type.value();
  n.purpose = Purpose::kGradient;
  return g.Add(std::move(n));
}

int Constant(Graph& g, double value, const std::vector<int64_t>& sizes) {
  Node n;
  n.op = "full";
  n.role = Role::kConst;
  n.type = MakeType(sizes);
  n.attrs["value"] = value;
  n.purpose = Purpose::kGradient;
  return g.Add(std::move(n));
}

int SumToShape(Graph& g, int grad, TensorType target) {
  if (grad < 0) return -1;
  std::vector<int64_t> have = g.at(grad).type.sizes();
  std::vector<int64_t> want = target.sizes();
  if (have == want) return grad;
  if (want.size() > have.size()) {
    RecordRuleError("cannot sum a gradient of rank " + std::to_string(have.size()) + " to rank " +
                    std::to_string(want.size()));
    return -1;
  }
  size_t lead = have.size() - want.size();
  int x = grad;
  // Axes the target has with size 1 are summed in place (keepdim); the extra leading axes are
  // summed away (no keepdim), so the common bias gradient is one sum with no reshape after it.
  for (size_t i = lead; i < have.size(); ++i) {
    if (want[i - lead] == 1 && have[i] != 1)
      x = Emit(g, "sum", {x}, {{"axis", static_cast<int>(i)}, {"keepdim", true}});
  }
  for (size_t i = 0; i < lead && x >= 0; ++i)
    x = Emit(g, "sum", {x}, {{"axis", 0}, {"keepdim", false}});
  if (x >= 0 && g.at(x).type.sizes() != want) {
    Json shape = Json::array();
    for (int64_t s : want) shape.push_back(s);
    x = Emit(g, "reshape", {x}, {{"shape", shape}});
  }
  return x;
}

int BroadcastTo(Graph& g, int value, TensorType target) {
  if (value < 0) return -1;
  if (g.at(value).type.SameShape(target)) return value;
  return Emit(g, "mul", {Constant(g, 1.0, target.sizes()), value});
}

int SwapLastTwo(Graph& g, int x) {
  if (x < 0) return -1;
  int rank = g.at(x).type.rank();
  if (rank == 2) return Emit(g, "transpose", {x});
  Json dims = Json::array();
  for (int i = 0; i < rank - 2; ++i) dims.push_back(i);
  dims.push_back(rank - 1);
  dims.push_back(rank - 2);
  return Emit(g, "permute", {x}, {{"dims", dims}});
}

}  // namespace grad

Result<std::vector<int>> Backward(Graph& g, int loss, const std::vector<int>& wrt, double seed) {
  const int count = static_cast<int>(g.nodes.size());
  if (loss < 0 || loss >= count)
    return InternalError("webir.Backward", "the loss node does not exist");
  for (int w : wrt)
    if (w < 0 || w >= count) return InternalError("webir.Backward", "a wrt node does not exist");
  const Node loss_node = g.at(loss);
  if (loss_node.type.elements() != 1) {
    Diagnostic d = UserError("loss-not-scalar", loss_node.origin,
                             "the loss has shape " + loss_node.type.ShapeStringWithSizes() +
                                 ", a gradient needs a loss with a single element",
                             "reduce it first, e.g. with sum or mean");
    d.where = loss_node.Describe();
    return d;
  }

  // Only nodes on a path from some wrt node to the loss carry gradients.
  std::vector<char> from_wrt(count, 0), to_loss(count, 0);
  for (int w : wrt) from_wrt[w] = 1;
  for (int i = 0; i < count; ++i)
    for (int a : g.at(i).args)
      if (from_wrt[a]) from_wrt[i] = 1;
  to_loss[loss] = 1;
  for (int i = loss; i >= 0; --i)
    if (to_loss[i])
      for (int a : g.at(i).args) to_loss[a] = 1;
  auto on_path = [&](int i) { return from_wrt[i] && to_loss[i]; };

  g.version = std::max(g.version, 2);
  std::vector<Diagnostic> errors;
  g_rule_errors = &errors;
  struct Reset {
    ~Reset() { g_rule_errors = nullptr; }
  } reset;

  std::vector<std::vector<int>> contributions(count);
  std::vector<int> grad_of(count, -1);
  if (on_path(loss)) contributions[loss].push_back(grad::Constant(g, seed, loss_node.type.sizes()));
  for (int i = loss; i >= 0; --i) {
    if (!on_path(i) || contributions[i].empty()) continue;
    int total = contributions[i][0];
    for (size_t k = 1; k < contributions[i].size(); ++k)
      total = grad::Emit(g, "add", {total, contributions[i][k]});
    grad_of[i] = total;
    const Node n = g.at(i);  // a copy: rules append to g.nodes
    bool feeds_wrt = std::any_of(n.args.begin(), n.args.end(), on_path);
    if (!feeds_wrt) continue;
    const ops::OpSpec* spec = g.ops->Find(n.op);
    const OpRule* rule = spec ? RuleOf(*spec) : FindRule(n.op);
    const char* no_gradient =
        rule && rule->grad && rule->no_gradient ? rule->no_gradient(n) : nullptr;
    if (!rule || !rule->grad || no_gradient) {
      Diagnostic d = UserError(
          "not-differentiable", n.origin,
          "the op \"" + n.op + "\" has no gradient" +
              (no_gradient ? std::string(" ") + no_gradient : std::string()) +
              ", but the loss depends on a differentiated value through it",
          "differentiate with respect to values that reach the loss through differentiable ops "
          "only");
      d.where = n.Describe();
      return d;
    }
    std::vector<int> grads = rule->grad(g, n, total);
    if (!errors.empty()) return Status(errors);
    if (grads.size() != n.args.size())
      return InternalError("webir.Backward",
                           "the gradient rule of " + n.op + " has the wrong arity");
    for (size_t k = 0; k < n.args.size(); ++k) {
      int a = n.args[k];
      if (on_path(a) && grads[k] < 0 && spec && spec->user && k < spec->ports.size()) {
        // A user op differentiates the ports its definition gives a gradient for, and no other.
        Diagnostic d = UserError(
            "not-differentiable", n.origin,
            "the op \"" + n.op + "\" has no gradient for its input \"" + spec->ports[k].name +
                "\", but the loss depends on a differentiated value through it",
            "give the op a gradient for \"" + spec->ports[k].name + "\" (\"gradient\": {\"" +
                spec->ports[k].name +
                "\": {\"wgsl\": ..., \"reference\": ...}}), or differentiate "
                "with respect to values that do not reach it there");
        d.where = n.Describe();
        return d;
      }
      if (!on_path(a) || grads[k] < 0) continue;
      if (!g.at(grads[k]).type.SameShape(g.at(a).type))
        return InternalError("webir.Backward", "the gradient rule of " + n.op + " gave input " +
                                                   std::to_string(k) + " a gradient of shape " +
                                                   g.at(grads[k]).type.ShapeStringWithSizes() +
                                                   ", the input has " +
                                                   g.at(a).type.ShapeStringWithSizes());
      contributions[a].push_back(grads[k]);
    }
  }
  if (!errors.empty()) return Status(errors);

  std::vector<int> result;
  for (int w : wrt)
    result.push_back(grad_of[w] >= 0 ? grad_of[w] : grad::Constant(g, 0.0, g.at(w).type.sizes()));
  RemoveDeadGradients(g, count, result);
  for (size_t k = 0; k < wrt.size(); ++k) {
    Node& n = g.nodes[result[k]];
    if (IsDefaultName(n)) n.name = "d_" + g.at(wrt[k]).name;
  }
  for (int i = count; i < static_cast<int>(g.nodes.size()); ++i)
    g.nodes[i].purpose = Purpose::kGradient;
  SCELLIS_TRY(Verify(g));
  return result;
}

}  // namespace scellis::webir
