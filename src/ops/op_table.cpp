#include "ops/op_table.h"

#include <cmath>

#include "base/enum_table.h"

namespace scellis::ops {
namespace {

constexpr EnumTable<OpKind, 14> kOpKinds({{{OpKind::kSource, "source"},
                                           {OpKind::kElementwise, "elementwise"},
                                           {OpKind::kReduce, "reduce"},
                                           {OpKind::kMatmul, "matmul"},
                                           {OpKind::kLayout, "layout"},
                                           {OpKind::kStencil, "stencil"},
                                           {OpKind::kNormalize, "normalize"},
                                           {OpKind::kLoss, "loss"},
                                           {OpKind::kOptimizer, "optimizer"},
                                           {OpKind::kRandom, "random"},
                                           {OpKind::kNeighbour, "neighbour"},
                                           {OpKind::kIndex, "index"},
                                           {OpKind::kPosition, "position"},
                                           {OpKind::kUser, "user"}}});
constexpr EnumTable<PortRole, 6> kPortRoles({{{PortRole::kOperand, "operand"},
                                              {PortRole::kLabels, "labels"},
                                              {PortRole::kGradient, "gradient"},
                                              {PortRole::kState, "state"},
                                              {PortRole::kStep, "step"},
                                              {PortRole::kIndex, "index"}}});
constexpr EnumTable<AttrType, 10> kAttrTypes({{{AttrType::kInt, "integer"},
                                               {AttrType::kNumber, "number"},
                                               {AttrType::kBool, "boolean"},
                                               {AttrType::kString, "string"},
                                               {AttrType::kIntList, "integer array"},
                                               {AttrType::kBounds, "array of integers or nulls"},
                                               {AttrType::kPairs, "array of integer pairs"},
                                               {AttrType::kShape, "shape"},
                                               {AttrType::kNumbers, "number array"},
                                               {AttrType::kObject, "object"}}});

bool IsFiniteNumber(const Json& v) {
  return v.is_number() && std::isfinite(v.get<double>());
}

bool HasType(const Json& v, AttrType t) {
  auto all = [&](auto pred) {
    if (!v.is_array()) return false;
    for (const Json& e : v)
      if (!pred(e)) return false;
    return true;
  };
  switch (t) {
    case AttrType::kInt:
      return v.is_number_integer();
    case AttrType::kNumber:
      return IsFiniteNumber(v);
    case AttrType::kBool:
      return v.is_boolean();
    case AttrType::kString:
      return v.is_string();
    case AttrType::kIntList:
      return all([](const Json& e) { return e.is_number_integer(); });
    case AttrType::kBounds:
      return all([](const Json& e) { return e.is_number_integer() || e.is_null(); });
    case AttrType::kPairs:
      return all([](const Json& e) {
        return e.is_array() && e.size() == 2 && e[0].is_number_integer() &&
               e[1].is_number_integer();
      });
    case AttrType::kShape:
      return all([](const Json& e) { return e.is_number_integer() || e.is_string(); });
    case AttrType::kNumbers:
      return all(IsFiniteNumber);
    case AttrType::kObject:
      return v.is_object();
  }
  return false;
}

}  // namespace

const char* OpKindName(OpKind k) {
  return kOpKinds.Name(k);
}
const char* PortRoleName(PortRole r) {
  return kPortRoles.Name(r);
}
const char* AttrTypeName(AttrType t) {
  return kAttrTypes.Name(t);
}

const Port* OpSpec::FindPort(std::string_view port) const {
  for (const Port& p : ports)
    if (p.name == port) return &p;
  return nullptr;
}

size_t OpSpec::Arity() const {
  size_t n = ports.size();
  for (const Attr& a : attrs) n += a.as_operand ? 1 : 0;
  return n;
}

const Port* OpSpec::ListPort() const {
  for (const Port& p : ports)
    if (p.list) return &p;
  return nullptr;
}

bool OpSpec::ArityFits(size_t args) const {
  return ListPort() ? args >= Arity() : args == Arity();
}

const Attr* OpSpec::FindAttr(std::string_view attr) const {
  for (const Attr& a : attrs)
    if (a.name == attr) return &a;
  return nullptr;
}

bool OpTable::Add(OpSpec spec) {
  if (Find(spec.name)) return false;
  ops_.push_back(std::move(spec));
  return true;
}

const OpSpec* OpTable::Find(std::string_view name) const {
  for (const OpSpec& s : ops_)
    if (s.name == name) return &s;
  return nullptr;
}

bool OpTable::IsPortName(std::string_view port) const {
  for (const OpSpec& s : ops_)
    if (s.FindPort(port)) return true;
  return false;
}

std::string OpTable::NamesUpTo(int version) const {
  std::string known;
  for (const OpSpec& s : ops_)
    if (s.kind != OpKind::kSource && s.min_version <= version)
      known += (known.empty() ? "" : ", ") + s.name;
  return known;
}

bool NumberRange::Contains(double v) const {
  if (std::isnan(v)) return false;
  bool above = low_open ? v > low : v >= low;
  bool below = high_open ? v < high : v <= high;
  return above && below;
}

std::string NumberRange::Text() const {
  return std::string(low_open ? "(" : "[") + CanonicalJson(Json(low)) + ", " +
         CanonicalJson(Json(high)) + (high_open ? ")" : "]");
}

std::vector<Diagnostic> CheckAttributes(
    const OpSpec& spec, const Json& attrs, const std::string& node_pointer,
    const std::function<std::string(const std::string&)>& pointer_of, const std::string& where) {
  std::vector<Diagnostic> errors;
  auto error = [&](std::string code, std::string pointer, std::string message) {
    Diagnostic d = UserError(std::move(code), std::move(pointer), std::move(message));
    d.where = where;
    errors.push_back(std::move(d));
  };
  for (auto it = attrs.begin(); it != attrs.end(); ++it) {
    const Attr* a = spec.FindAttr(it.key());
    if (!a) {
      std::string accepted;
      for (const Attr& x : spec.attrs) accepted += (accepted.empty() ? "" : ", ") + x.name;
      Diagnostic d =
          UserError("unknown-attribute", pointer_of(it.key()),
                    "the op \"" + spec.name + "\" has no attribute \"" + it.key() + "\"",
                    accepted.empty() ? "it takes no attributes" : "it takes " + accepted);
      d.where = where;
      errors.push_back(std::move(d));
      continue;
    }
    if (it->is_null() && !a->required) continue;
    if (!HasType(*it, a->type)) {
      error("bad-attribute", pointer_of(it.key()),
            "the attribute \"" + it.key() + "\" is " + it->dump() + ", expected " +
                (a->type == AttrType::kInt ? "an " : "a ") + AttrTypeName(a->type));
    } else if (a->range && !a->range->Contains(it->get<double>())) {
      error("bad-attribute", pointer_of(it.key()),
            "the attribute \"" + it.key() + "\" is " + it->dump() + ", expected a value in " +
                a->range->Text());
    }
  }
  for (const Attr& a : spec.attrs) {
    auto it = attrs.find(a.name);
    if (a.required && (it == attrs.end() || it->is_null())) {
      error("missing-attribute", node_pointer,
            "the op \"" + spec.name + "\" needs its attribute \"" + a.name + "\" (" +
                AttrTypeName(a.type) + ")");
    }
  }
  return errors;
}

namespace {

std::string Code(const std::string& s) {
  return "`" + s + "`";
}

std::string DTypes(const std::vector<DType>& dtypes) {
  std::string out;
  for (DType d : dtypes) out += (out.empty() ? "" : ", ") + std::string(DTypeName(d));
  return out;
}

void PortsSection(const OpSpec& s, std::string& out) {
  if (s.ports.empty()) return;
  out += "\n| port | role | dtypes |\n|---|---|---|\n";
  for (const Port& p : s.ports) {
    out += "| " + Code(p.name) + (p.list ? " (a list of node ids)" : "") + " | " +
           PortRoleName(p.role) + " | " + DTypes(p.dtypes) + " |\n";
  }
}

void AttrsSection(const OpSpec& s, std::string& out) {
  if (s.attrs.empty()) return;
  out += "\n| attribute | type | range | default | required |\n|---|---|---|---|---|\n";
  for (const Attr& a : s.attrs) {
    out += "| " + Code(a.name) + " | " + AttrTypeName(a.type) + " | " +
           (a.range ? Code(a.range->Text()) : "—") + " | " +
           (a.default_value.is_null() ? "—" : Code(CanonicalJson(a.default_value))) + " | " +
           (a.required ? "yes" : "no") + " |\n";
  }
}

}  // namespace

std::string ToMarkdown(const OpTable& table) {
  std::string out =
      "# Ops\n\n"
      "Generated from the op table (`src/ops/builtin.cpp`) by `scellis ops --markdown`; a test "
      "fails when this file differs from the table.\n\n"
      "Graph-protocol nodes name their inputs by port (`{\"id\": 2, \"op\": \"add\", \"a\": 0, "
      "\"b\": 1}`); workflows wire them (`\"to\": \"node.a\"`). A list port takes an array of node "
      "ids (`\"inputs\": [0, 1]`), which a workflow wires once per entry, in wire order. The "
      "tolerance class is what the op is held to against the CPU reference on a GPU; the "
      "reference itself is exact by definition.\n\n"
      "| op | since version | kind | differentiable | tolerance |\n|---|---|---|---|---|\n";
  for (const OpSpec& s : table.ops()) {
    out += "| [" + Code(s.name) + "](#" + s.name + ") | " + std::to_string(s.min_version) + " | " +
           OpKindName(s.kind) + " | " + (s.differentiable ? "yes" : "no") + " | " +
           policy::ToleranceName(s.tolerance) + " |\n";
  }
  for (const OpSpec& s : table.ops()) {
    out += "\n## " + s.name + "\n\n" + s.summary + "\n\n";
    out += "- since graph protocol version " + std::to_string(s.min_version) + "; kind " +
           OpKindName(s.kind) + "; " +
           (s.differentiable ? "differentiable" : "not differentiable") + "\n";
    out += std::string("- tolerance class: ") + policy::ToleranceName(s.tolerance) + "\n";
    out += "- determinism: " + s.determinism + "\n";
    out += "- NaN and infinities: " + s.nan + "\n";
    PortsSection(s, out);
    AttrsSection(s, out);
  }
  return out;
}

namespace {

// JSON has no infinities: an unbounded end is null.
Json FiniteOrNull(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

}  // namespace

Json ToJson(const OpSpec& spec) {
  Json inputs = Json::array();
  for (const Port& p : spec.ports) {
    Json dtypes = Json::array();
    for (DType d : p.dtypes) dtypes.push_back(DTypeName(d));
    inputs.push_back(
        {{"name", p.name}, {"role", PortRoleName(p.role)}, {"dtypes", dtypes}, {"list", p.list}});
  }
  Json attrs = Json::array();
  for (const Attr& a : spec.attrs) {
    Json range = nullptr;
    if (a.range) {
      range = {{"low", FiniteOrNull(a.range->low)},
               {"high", FiniteOrNull(a.range->high)},
               {"low_open", a.range->low_open},
               {"high_open", a.range->high_open},
               {"text", a.range->Text()}};
    }
    attrs.push_back({{"name", a.name},
                     {"type", AttrTypeName(a.type)},
                     {"default", a.default_value},
                     {"required", a.required},
                     {"range", range}});
  }
  // Every block has one output port, "out" (the workflow format wires from it).
  Json outputs = Json::array({Json{{"name", "out"}}});
  return {{"name", spec.name},
          {"family", OpKindName(spec.kind)},
          {"min_version", spec.min_version},
          {"summary", spec.summary},
          {"inputs", inputs},
          {"attrs", attrs},
          {"outputs", outputs},
          {"differentiable", spec.differentiable},
          {"tolerance", policy::ToleranceName(spec.tolerance)},
          {"determinism", spec.determinism},
          {"nan", spec.nan}};
}

Json ToJson(const OpTable& table) {
  Json ops = Json::array(), node_types = Json::array();
  for (const OpSpec& s : table.ops())
    (s.kind == OpKind::kSource ? node_types : ops).push_back(ToJson(s));
  return {{"ops", ops}, {"node_types", node_types}};
}

}  // namespace scellis::ops
