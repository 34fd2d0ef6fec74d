#include "webir/type_node.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "doc/input_lists.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

class NodeTyping {
 public:
  NodeTyping(const ops::OpTable& ops, const OpNode& node, int version)
      : ops_(ops), node_(node), version_(version) {}

  Result<TypedNode> Run() {
    const ops::OpSpec* def = ops_.Find(node_.op);
    // A source (input, param, full) takes no arguments to type: a graph declares it as a node of
    // its own kind, never as an op over others.
    if (def && def->kind == OpKind::kSource) {
      return Error("unknown-op", node_.pointer,
                   "\"" + node_.op +
                       "\" is a source of values (input, param, full), not an op "
                       "over arguments",
                   "declare it as a node of its own: the graph protocol's \"" + node_.op +
                       "\" node, Graph.input / Graph.param / Graph.full in Python");
    }
    if (!def) {
      return Error("unknown-op", node_.pointer, "the op \"" + node_.op + "\" does not exist",
                   "ops of version " + std::to_string(version_) + ": " + ops_.NamesUpTo(version_));
    }
    const OpRule* rule = RuleOf(*def);
    if (!rule) {
      return Error("op-not-lowerable", node_.pointer,
                   "the op \"" + node_.op + "\" is declared but this build has no type rule for it",
                   "an op added to a session's table needs its rules before it can run");
    }
    if (def->min_version > version_) {
      return Error("op-newer-than-version", node_.pointer,
                   "the op \"" + node_.op + "\" needs graph protocol version " +
                       std::to_string(def->min_version) + ", the graph is labelled version " +
                       std::to_string(version_),
                   "label the graph \"version\": " + std::to_string(def->min_version));
    }
    out_.spec = def;

    // Attributes: what the op's table entry declares, of the declared types.
    Json attrs = node_.params;
    attrs.erase("name");
    auto attr_errors = ops::CheckAttributes(
        *def, attrs, node_.pointer, [&](const std::string& key) { return ParamPointer(key); },
        node_.where);
    if (!attr_errors.empty()) return Status(std::move(attr_errors));
    out_.attrs = Json::object();
    for (auto it = attrs.begin(); it != attrs.end(); ++it)
      if (it.key() != "scalar") out_.attrs[it.key()] = *it;

    SCELLIS_TRY(TypePorts(*def));
    SCELLIS_TRY(AddOperandAttributes(*def));

    InferContext c;
    for (const TypedArg& a : out_.args) {
      c.args.push_back(a.type);
      c.arg_pointers.push_back(a.pointer);
    }
    c.attrs = out_.attrs;
    c.version = version_;
    c.pointer = node_.pointer;
    c.where = node_.where;
    c.spec = def;
    SCELLIS_ASSIGN_OR_RETURN(out_.type, InferChecked(def->name, *rule, c));
    out_.attrs = c.attrs;
    return std::move(out_);
  }

 private:
  Diagnostic Error(std::string code, std::string pointer, std::string message,
                   std::string help = "") const {
    Diagnostic d =
        UserError(std::move(code), std::move(pointer), std::move(message), std::move(help));
    d.where = node_.where;
    return d;
  }

  bool IsGraph() const { return node_.form == doc::Form::kGraph; }

  // Where a node names the producer of `port`: the port's key in a graph document; a workflow
  // wires ports by edges, so its block's own pointer.
  std::string PortPointer(const std::string& port) const {
    return IsGraph() ? PointerJoin(node_.pointer, port) : node_.pointer;
  }

  // Entry `e` of a list port: its own place in a graph node, the block in a workflow (whose wires
  // carry the pointers one rung up).
  std::string EntryPointer(const std::string& port, size_t e) const {
    return IsGraph() ? PointerJoin(PointerJoin(node_.pointer, port), e) : node_.pointer;
  }

  std::string ParamPointer(const std::string& key) const {
    return IsGraph() ? PointerJoin(node_.pointer, key)
                     : PointerJoin(PointerJoin(node_.pointer, "params"), key);
  }

  // Arguments by port name, in the op's order; a list port's entries in list order. A port given
  // no input may be the scalar form's `b`.
  Status TypePorts(const ops::OpSpec& def) {
    if (!node_.empty_lists.empty()) {
      const std::string& port = node_.empty_lists.front();
      Diagnostic d = doc::EmptyInputList(PortPointer(port), port, def.name);
      d.where = node_.where;
      return d;
    }
    std::map<std::string, std::vector<int>> ports;
    for (size_t i = 0; i < node_.inputs.size(); ++i) {
      const std::string& port = node_.inputs[i].port;
      if (!def.FindPort(port)) {
        return Error("unknown-port", node_.pointer,
                     "the op \"" + def.name + "\" has no input \"" + port + "\"");
      }
      ports[port].push_back(static_cast<int>(i));
    }
    for (const ops::Port& p : def.ports) {
      auto it = ports.find(p.name);
      if (it != ports.end()) {
        for (size_t e = 0; e < it->second.size(); ++e)
          SCELLIS_TRY(AddInput(def, p, it->second[e], e));
        continue;
      }
      if (p.name == "b" && node_.params.contains("scalar")) {
        SCELLIS_TRY(AddScalar(p));
        continue;
      }
      return Error("missing-input", node_.pointer,
                   "the op \"" + def.name + "\" needs its input \"" + p.name + "\"",
                   p.name == "b" && def.FindAttr("scalar")
                       ? "give \"b\" a node id, or \"scalar\" a number"
                       : "");
    }
    return Status::Ok();
  }

  Status AddInput(const ops::OpSpec& def, const ops::Port& p, int input, size_t e) {
    const std::string at = p.list ? EntryPointer(p.name, e) : PortPointer(p.name);
    const std::string what = p.list ? "the entry " + std::to_string(e) + " of \"" + p.name + "\""
                                    : "the input \"" + p.name + "\"";
    const TensorType& type = node_.inputs[input].type;
    if (std::find(p.dtypes.begin(), p.dtypes.end(), type.dtype) == p.dtypes.end()) {
      std::string takes;
      for (DType t : p.dtypes) takes += (takes.empty() ? "" : " or ") + std::string(DTypeName(t));
      return Error(
          "dtype-mismatch", at,
          what + " of \"" + def.name + "\" is " + DTypeName(type.dtype) + ", the op takes " + takes,
          IsBlockDType(type.dtype)
              ? "k-quant blocks are read by matmul_q alone, which decodes them as it "
                "multiplies"
              : "convert it with cast{a, dtype}: no op mixes dtypes on its own");
    }
    out_.args.push_back({.input = input, .type = type, .value = nullptr, .pointer = at});
    return Status::Ok();
  }

  // The scalar form (`{"a": 0, "scalar": 2}`) gives `b` as a rank-0 constant, so one
  // broadcasting mechanism serves both forms.
  Status AddScalar(const ops::Port& p) {
    const Json& s = node_.params["scalar"];
    const std::string at = ParamPointer("scalar");
    if (!s.is_number())
      return Error("bad-attribute", at, "the scalar is " + s.dump() + ", expected a number");
    if (std::fabs(s.get<double>()) > std::numeric_limits<float>::max())
      return Error("data-out-of-range", at, "the scalar " + s.dump() + " does not fit in f32");
    // The scalar takes the dtype of `a` where the port accepts it (a mask compared with 0 or 1),
    // so a scalar never mixes dtypes; a bool holds only those two values.
    DType scalar_dtype = DType::kF32;
    if (!out_.args.empty()) {
      const DType a_dtype = out_.args[0].type.dtype;
      if (std::find(p.dtypes.begin(), p.dtypes.end(), a_dtype) != p.dtypes.end())
        scalar_dtype = a_dtype;
    }
    if (scalar_dtype == DType::kBool && s.get<double>() != 0 && s.get<double>() != 1) {
      return Error("bad-attribute", at,
                   "the scalar " + s.dump() + " is compared with a bool, which is 0 or 1",
                   "compare with 0 or 1, or cast the mask to f32 first");
    }
    if (!FitsIntegerDType(s.get<double>(), scalar_dtype)) {
      return Error("bad-attribute", at,
                   "the scalar " + s.dump() + " meets an " + DTypeName(scalar_dtype) +
                       " operand, and is not an integer in its range " +
                       IntegerRangeText(scalar_dtype),
                   "give an integer scalar, or cast the operand to f32 first");
    }
    out_.args.push_back(
        {.input = -1, .type = MakeType({}, scalar_dtype), .value = s, .pointer = at});
    return Status::Ok();
  }

  // Operand attributes follow the ports as rank-0 constants (see ops::Attr::as_operand); the
  // attribute check has already held them to finite numbers, and f32 holds them. Beside an
  // integer first operand they are integers of its dtype, compared and stored as integers; one
  // left out is the dtype's extreme, which bounds nothing as an infinity does for f32.
  Status AddOperandAttributes(const ops::OpSpec& def) {
    const DType operand_dtype = out_.args.empty() ? DType::kF32 : out_.args[0].type.dtype;
    const bool integer_operand = operand_dtype == DType::kI32 || operand_dtype == DType::kU32;
    for (const ops::Attr& a : def.attrs) {
      if (!a.as_operand) continue;
      auto it = node_.params.find(a.name);
      const bool given = it != node_.params.end() && !it->is_null();
      double value = given ? it->get<double>() : a.absent;
      if (given && std::fabs(value) > std::numeric_limits<float>::max()) {
        return Error("data-out-of-range", ParamPointer(a.name),
                     "the value " + it->dump() + " does not fit in f32");
      }
      if (integer_operand && given && !FitsIntegerDType(value, operand_dtype)) {
        return Error(
            "bad-attribute", ParamPointer(a.name),
            "\"" + a.name + "\" is " + it->dump() + " beside an " + DTypeName(operand_dtype) +
                " operand, and is not an integer in its range " + IntegerRangeText(operand_dtype),
            "give an integer, or cast the operand to f32 first");
      }
      if (integer_operand && !given)
        value = value < 0 ? (operand_dtype == DType::kI32 ? -2147483648.0 : 0.0)
                          : (operand_dtype == DType::kI32 ? 2147483647.0 : 4294967295.0);
      out_.args.push_back({.input = -1,
                           .type = MakeType({}, integer_operand ? operand_dtype : DType::kF32),
                           .value = value,
                           .pointer = given ? ParamPointer(a.name) : node_.pointer});
      out_.attrs.erase(a.name);
    }
    return Status::Ok();
  }

  const ops::OpTable& ops_;
  const OpNode& node_;
  const int version_;
  TypedNode out_;
};

}  // namespace

Result<TypedNode> TypeOpNode(const ops::OpTable& ops, const OpNode& node, int version) {
  return NodeTyping(ops, node, version).Run();
}

Result<NodeTypes> InferNode(const ops::OpTable& ops, const OpNode& node) {
  SCELLIS_ASSIGN_OR_RETURN(TypedNode newest, TypeOpNode(ops, node, doc::kMaxGraphVersion));
  // The version rules live in the table entry and the type rules, each refusing a form newer
  // than the graph's label: the lowest label they all accept is the node's.
  for (int version = newest.spec->min_version; version < doc::kMaxGraphVersion; ++version)
    if (TypeOpNode(ops, node, version).ok()) return NodeTypes{newest.type, version};
  return NodeTypes{newest.type, doc::kMaxGraphVersion};
}

}  // namespace scellis::webir
