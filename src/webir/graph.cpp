#include "webir/graph.h"

#include <algorithm>
#include <cmath>

#include "webir/op_rules.h"

namespace scellis::webir {

std::string Node::Describe() const {
  return label.empty() ? op + " %" + name : op + " \"" + label + "\"";
}

int Graph::Add(Node n) {
  n.id = static_cast<int>(nodes.size());
  if (n.name.empty()) {
    n.name = "t";  // appended separately: `"t" + std::string&&` draws a false -Wrestrict (GCC 12)
    n.name += std::to_string(n.id);
  }
  nodes.push_back(std::move(n));
  return nodes.back().id;
}

std::vector<std::vector<int>> Graph::Users() const {
  std::vector<std::vector<int>> users(nodes.size());
  for (const Node& n : nodes)
    for (int a : n.args)
      if (users[a].empty() || users[a].back() != n.id) users[a].push_back(n.id);
  return users;
}

namespace {

std::string AttrText(const Node& n) {
  std::string s;
  for (auto it = n.attrs.begin(); it != n.attrs.end(); ++it) {
    if (it->is_null() || (it.key() == "keepdim" && !it->get<bool>())) continue;
    s += " " + it.key() + "=" + CanonicalJson(*it);
  }
  return s;
}

}  // namespace

std::string Print(const Graph& g) {
  std::string out = "graph";
  if (!g.name.empty()) out += " \"" + g.name + "\"";
  out += std::string("  tier=") + policy::TierName(g.tier) +
         "  tolerance=" + policy::ToleranceName(g.tolerance) +
         (g.bit_exact_across_devices ? "  bit-exact-across-devices" : "") + "\n";
  size_t width = 0;
  for (const Node& n : g.nodes) width = std::max(width, n.name.size() + 1);
  std::vector<std::string> lhs, rhs;
  size_t rhs_width = 0;
  for (const Node& n : g.nodes) {
    std::string r = n.op;
    if (n.role == Role::kInput || n.role == Role::kParam) {
      if (!n.label.empty()) r += " \"" + n.label + "\"";
    } else if (n.op == "full") {
      r += " ";  // appended separately: `" " + std::string&&` draws a false -Wrestrict (GCC 12)
      // An operand attribute's stand-in may be infinite (clamp's missing bound); JSON has no
      // infinity, so it is spelled out.
      const Json& v = n.attrs["value"];
      r += v.is_number() && std::isinf(v.get<double>()) ? (v.get<double>() > 0 ? "inf" : "-inf")
                                                        : CanonicalJson(v);
    }
    for (size_t i = 0; i < n.args.size(); ++i) {
      const Node& a = g.at(n.args[i]);
      const ops::OpSpec* spec = g.ops->Find(n.op);
      bool broadcast = n.args.size() > 1 && !a.type.SameShape(n.type) && spec &&
                       spec->kind == OpKind::kElementwise;
      r += (i ? ", " : " ") + std::string(broadcast ? "broadcast " : "") + "%" + a.name;
    }
    if (n.op != "full") r += AttrText(n);
    if (n.purpose == Purpose::kGradient) r += "  (grad)";
    if (n.purpose == Purpose::kOptimizerState) r += "  (optimizer state)";
    if (n.purpose == Purpose::kDataset) r += "  (dataset)";
    // Long attribute lists would push every shape far right; past 60 columns a line just runs on.
    if (r.size() <= 60) rhs_width = std::max(rhs_width, r.size());
    rhs.push_back(r);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::string name = "%" + n.name;
    out += "  " + name + std::string(width - name.size() + 1, ' ') + "= " + rhs[i] +
           std::string(rhs_width > rhs[i].size() ? rhs_width - rhs[i].size() + 2 : 2, ' ') +
           "shape " + n.type.ShapeString() + "  dtype " + DTypeName(n.type.dtype) + "\n";
  }
  for (const Output& o : g.outputs) out += "  output " + o.name + " = %" + g.at(o.node).name + "\n";
  return out;
}

Json ToJson(const Graph& g) {
  Json j;
  j["name"] = g.name;
  j["tier"] = policy::TierName(g.tier);
  j["tolerance"] = policy::ToleranceName(g.tolerance);
  if (g.bit_exact_across_devices) j["bit_exact_across_devices"] = true;
  j["nodes"] = Json::array();
  for (const Node& n : g.nodes) {
    Json jn;
    jn["id"] = n.id;
    jn["name"] = n.name;
    jn["op"] = n.op;
    jn["args"] = n.args;
    jn["attrs"] = n.attrs;
    jn["shape"] = n.type.sizes();
    jn["dtype"] = DTypeName(n.type.dtype);
    jn["origin"] = n.origin;
    if (n.purpose == Purpose::kGradient) jn["purpose"] = "gradient";
    if (n.purpose == Purpose::kOptimizerState) jn["purpose"] = "optimizer_state";
    if (n.purpose == Purpose::kDataset) jn["purpose"] = "dataset";
    j["nodes"].push_back(jn);
  }
  for (const Output& o : g.outputs) j["outputs"].push_back({{"name", o.name}, {"node", o.node}});
  return j;
}

Status Verify(const Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.id != static_cast<int>(i)) return InternalError("webir.Verify", "node ids out of order");
    for (int a : n.args)
      if (a < 0 || a >= n.id)
        return InternalError("webir.Verify", "node %" + n.name + " reads a later node");
    const ops::OpSpec* spec = g.ops->Find(n.op);
    if (!spec) return InternalError("webir.Verify", "unknown op " + n.op);
    if (spec->kind == OpKind::kSource) continue;
    const OpRule* rule = RuleOf(*spec);
    if (!rule) return InternalError("webir.Verify", "no type rule for " + n.op);
    if (!spec->ArityFits(n.args.size()))
      return InternalError("webir.Verify", "node %" + n.name + " has the wrong number of args");
    InferContext c;
    for (int a : n.args) c.args.push_back(g.at(a).type);
    c.attrs = n.attrs;
    c.version = std::max(g.version, spec->min_version);
    c.spec = spec;
    auto t = InferChecked(n.op, *rule, c);
    if (!t.ok() || !t->SameShape(n.type) || t->dtype != n.type.dtype)
      return InternalError("webir.Verify",
                           "node %" + n.name + " does not match its op's type rule");
  }
  for (const Output& o : g.outputs)
    if (o.node < 0 || o.node >= static_cast<int>(g.nodes.size()))
      return InternalError("webir.Verify", "output " + o.name + " is dangling");
  return Status::Ok();
}

bool IsCarried(const Graph& g, int node) {
  for (const Carry& c : g.carries)
    if (c.to == node) return true;
  return false;
}

std::vector<int> FedInputs(const Graph& g) {
  std::vector<int> fed;
  for (const Node& n : g.nodes) {
    if (n.role != Role::kInput || n.data) continue;
    if (!IsCarried(g, n.id)) fed.push_back(n.id);
  }
  return fed;
}

}  // namespace scellis::webir
