#include "doc/user_ops.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <regex>

#include "base/sha256.h"
#include "doc/document.h"
#include "doc/keys.h"

namespace scellis::doc {
namespace {

const std::vector<std::string> kUserOpFields = {"inputs", "shape",     "dtype",   "tolerance",
                                                "wgsl",   "reference", "gradient"};
const std::vector<std::string> kGradientFields = {"wgsl", "reference"};
// An op defined through the API brings its references (the forward's and each gradient's) as
// callables, not as fields.
const std::vector<std::string> kCallableOpFields = {"inputs",    "shape", "dtype",
                                                    "tolerance", "wgsl",  "gradient"};
const std::vector<std::string> kCallableGradientFields = {"wgsl"};
const std::vector<std::string> kPortFields = {"name", "dtype", "rank"};
const std::vector<std::string> kReferenceFields = {"nodes", "output"};
// A graph node's own fields: a port of that name could not be told from them.
const std::vector<std::string> kReservedPortNames = {"id", "op", "name", "determinism",
                                                     "tolerance"};

// A WGSL identifier the engine may also build names from (`<port>_at`, `<PORT>_SHAPE_0`):
// ASCII letters, digits and '_', not starting with a digit or "__".
bool IsWgslIdentifier(const std::string& s) {
  static const std::regex kIdentifier("[A-Za-z_][A-Za-z0-9_]{0,63}");
  return std::regex_match(s, kIdentifier) && s.rfind("__", 0) != 0 && s != "_";
}

// The WGSL with its comments blanked (line breaks kept), so that a word inside a comment is not
// taken for code.
std::string WithoutComments(const std::string& wgsl) {
  std::string out = wgsl;
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] == '/' && out[i + 1] == '/') {
      for (; i < out.size() && out[i] != '\n'; ++i) out[i] = ' ';
    } else if (out[i] == '/' && out[i + 1] == '*') {
      size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; i < end; ++i)
        if (out[i] != '\n') out[i] = ' ';
      --i;
    }
  }
  return out;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The 1-based line of `offset` in `text`.
int LineOf(const std::string& text, size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
}

class UserOpParser {
 public:
  UserOpParser(ops::OpTable& table, std::vector<Diagnostic>& errors)
      : table_(table), errors_(errors) {}
  // The next ops parsed take `callable` as their reference, and `gradients` (by port) as their
  // gradients' references, each named by its version in the definition.
  void UseCallable(const ops::UserCallable& callable,
                   const std::map<std::string, ops::UserCallable>& gradients) {
    callable_ = &callable;
    gradient_callables_ = &gradients;
  }

  void Parse(const std::string& name, const Json& j) {
    const std::string pointer = PointerJoin("/ops", name);
    const size_t errors_before = errors_.size();
    // `main` is the entry point the engine wraps around the user's function.
    if (!IsWgslIdentifier(name) || name == "main") {
      Error("bad-op-name", pointer,
            "the op name \"" + name + "\" is " +
                (name == "main" ? "the kernel's entry point" : "not a WGSL identifier"),
            "name it with ASCII letters, digits and '_' (not starting with a digit or \"__\")");
      return;
    }
    if (table_.Find(name)) {
      Error("op-name-taken", pointer,
            "the op \"" + name + "\" already exists" +
                (table_.Find(name)->user ? " (defined earlier)" : " (it is built in)"),
            "give the document's op a name of its own");
      return;
    }
    if (!j.is_object()) {
      Error("bad-field-type", pointer,
            std::string("the op's definition is a ") + j.type_name() + ", expected an object");
      return;
    }
    CheckKeys(j, pointer, callable_ ? kCallableOpFields : kUserOpFields, "a user op", errors_);

    ops::OpSpec spec;
    spec.name = name;
    spec.min_version = kUserOpsVersion;
    spec.kind = ops::OpKind::kUser;
    spec.tolerance = policy::ToleranceClass::kDefault;
    spec.summary = "defined by the document (" + pointer + ")";
    spec.determinism = "one invocation per output element, as the user's WGSL computes it";
    auto user = std::make_shared<ops::UserKernel>();
    user->pointer = pointer;
    ParsePorts(j, pointer, spec, *user);
    ParseShapeRule(j, pointer, spec, *user);
    if (auto it = j.find("dtype"); it != j.end())
      user->dtype = ParseDTypeField(*it, PointerJoin(pointer, "dtype")).value_or(DType::kF32);
    if (auto it = j.find("tolerance"); it != j.end()) {
      auto tol = it->is_string() ? policy::ParseTolerance(it->get<std::string>()) : std::nullopt;
      if (!tol)
        Error("bad-tolerance-class", PointerJoin(pointer, "tolerance"),
              "the tolerance class is " + it->dump() +
                  ", expected one of exact, tight, default, loose");
      else
        spec.tolerance = *tol;
    }
    ParseWgsl(j, pointer, name, *user);
    if (callable_) {
      SetCallable(*callable_, *user);
    } else {
      ParseReference(j, pointer, spec, *user);
    }
    if (errors_.size() != errors_before) return;
    user->definition = CallablesNamed(j);
    user->definition_hash = "sha256:" + Sha256Hex(CanonicalJson(user->definition));
    std::vector<ops::OpSpec> gradients = ParseGradients(j, pointer, spec, *user);
    spec.differentiable = !user->gradients.empty();
    spec.user = std::move(user);
    if (!callable_) CheckReferenceStructure(spec);
    if (errors_.size() != errors_before) return;
    table_.Add(std::move(spec));
    for (ops::OpSpec& g : gradients) table_.Add(std::move(g));
  }

 private:
  void Error(std::string code, std::string pointer, std::string message, std::string help = "") {
    errors_.push_back(
        UserError(std::move(code), std::move(pointer), std::move(message), std::move(help)));
  }

  static void SetCallable(const ops::UserCallable& c, ops::UserKernel& user) {
    user.callable = c.f32;
    user.callable_f64 = c.f64;
    user.reference_version = c.version;
  }

  // The definition as its hash covers it: for an op defined through the API, each callable
  // (forward and gradients) named by its version, {"reference": {"callable": VERSION}}, since a
  // function has no content to hash.
  Json CallablesNamed(const Json& j) const {
    Json out = j;
    if (!callable_) return out;
    out["reference"] = {{"callable", callable_->version}};
    if (auto g = out.find("gradient"); g != out.end() && g->is_object())
      for (auto it = g->begin(); it != g->end(); ++it)
        if (auto c = gradient_callables_->find(it.key());
            it->is_object() && c != gradient_callables_->end())
          (*it)["reference"] = {{"callable", c->second.version}};
    return out;
  }

  // A dtype name; user kernels compute in f32 (their accessors return f32), so only f32 is taken.
  std::optional<DType> ParseDTypeField(const Json& v, const std::string& pointer) {
    auto t = v.is_string() ? ParseDType(v.get<std::string>()) : std::nullopt;
    if (!t) {
      Error("unknown-dtype", pointer, "the dtype is " + v.dump() + ", which is no dtype",
            "user ops take f32");
      return std::nullopt;
    }
    if (*t != DType::kF32) {
      Error("unsupported-dtype", pointer,
            std::string("the dtype is ") + DTypeName(*t) + "; user ops take and give f32 only",
            "cast to f32 before the op and back after it");
      return std::nullopt;
    }
    return t;
  }

  void ParsePorts(const Json& j, const std::string& pointer, ops::OpSpec& spec,
                  ops::UserKernel& user) {
    const std::string at = PointerJoin(pointer, "inputs");
    auto it = j.find("inputs");
    if (it == j.end() || !it->is_array() || it->empty()) {
      Error("bad-user-op-inputs", at,
            "a user op lists its inputs as a non-empty array of {\"name\", \"dtype\"}");
      return;
    }
    // One storage binding per port and one for the output, within WebGPU's minimum of 8.
    if (it->size() > 7) {
      Error("bad-user-op-inputs", at,
            "the op has " + std::to_string(it->size()) + " inputs, more than the 7 a kernel binds");
      return;
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& p = (*it)[i];
      const std::string port_at = PointerJoin(at, i);
      if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) {
        Error("bad-port-name", port_at, "an input is {\"name\": ..., \"dtype\": \"f32\"}");
        continue;
      }
      CheckKeys(p, port_at, kPortFields, "a user op's input", errors_);
      const std::string port = p["name"].get<std::string>();
      // The generated shape constants are named after the port in capitals (and OUT's after
      // the output), so ports must differ in more than case.
      const bool reserved = std::find(kReservedPortNames.begin(), kReservedPortNames.end(), port) !=
                                kReservedPortNames.end() ||
                            Upper(port) == "OUT" || port == spec.name;
      bool taken = false;
      for (const ops::Port& other : spec.ports) taken |= Upper(other.name) == Upper(port);
      if (!IsWgslIdentifier(port) || reserved || taken) {
        Error("bad-port-name", PointerJoin(port_at, "name"),
              "the input name \"" + port + "\" is " +
                  (taken      ? std::string("given twice (up to case)")
                   : reserved ? "reserved"
                              : "not a WGSL identifier"),
              "name inputs with ASCII letters, digits and '_', each once up to case (not id, op, "
              "name, determinism, tolerance, out or the op's own name)");
        continue;
      }
      DType dtype = DType::kF32;
      if (auto d = p.find("dtype"); d != p.end())
        dtype = ParseDTypeField(*d, PointerJoin(port_at, "dtype")).value_or(DType::kF32);
      if (auto r = p.find("rank"); r != p.end()) {
        if (!r->is_number_integer() || r->get<int64_t>() < 0 || r->get<int64_t>() > 8)
          Error("bad-rank", PointerJoin(port_at, "rank"),
                "the rank is " + r->dump() + ", expected an integer from 0 to 8");
        else
          user.ranks.push_back({port, r->get<int>()});
      }
      spec.ports.emplace_back(port, ops::PortRole::kOperand, std::vector<DType>{dtype});
    }
  }

  void ParseShapeRule(const Json& j, const std::string& pointer, const ops::OpSpec& spec,
                      ops::UserKernel& user) {
    auto it = j.find("shape");
    if (it != j.end() && it->is_string() && spec.FindPort(it->get<std::string>())) {
      user.shape_of = it->get<std::string>();
      return;
    }
    Error("bad-shape-rule", PointerJoin(pointer, "shape"),
          it == j.end() ? std::string("the op gives no shape rule")
                        : "the shape rule is " + it->dump() + ", which names none of its inputs",
          "\"shape\": the name of the input whose shape the output takes");
  }

  void ParseWgsl(const Json& j, const std::string& pointer, const std::string& name,
                 ops::UserKernel& user) {
    const std::string at = PointerJoin(pointer, "wgsl");
    auto it = j.find("wgsl");
    if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) {
      Error("missing-wgsl", at, "the op \"" + name + "\" has no WGSL",
            "\"wgsl\": \"fn " + name + "(index: u32) -> f32 { ... }\"");
      return;
    }
    user.wgsl = it->get<std::string>();
    const std::string code = WithoutComments(user.wgsl);
    // The engine owns the bindings and the entry point; a kernel of the user's own would bypass
    // the accessors, the bounds check and the buffers the plan assigns.
    static const std::regex kBinding(R"(@\s*(group|binding)\b|\bvar\s*<\s*(storage|uniform))");
    static const std::regex kEntry(R"(@\s*(compute|vertex|fragment|workgroup_size)\b)");
    std::smatch m;
    if (std::regex_search(code, m, kBinding)) {
      Error("user-wgsl-binding", at,
            "line " + std::to_string(LineOf(code, m.position(0))) + " of the WGSL of \"" + name +
                "\" declares a binding (" + m.str(0) + ")",
            "read the inputs through the generated accessors (<input>_at(index)); the engine "
            "binds the buffers");
      return;
    }
    if (std::regex_search(code, m, kEntry)) {
      Error("user-wgsl-entry-point", at,
            "line " + std::to_string(LineOf(code, m.position(0))) + " of the WGSL of \"" + name +
                "\" declares an entry point (" + m.str(0) + ")",
            "write fn " + name +
                "(index: u32) -> f32; the engine adds the entry point and the bounds check");
      return;
    }
    if (!std::regex_search(code, std::regex("\\bfn\\s+" + name + "\\s*\\("))) {
      Error("user-wgsl-missing-function", at,
            "the WGSL of \"" + name + "\" defines no function " + name,
            "define fn " + name + "(index: u32) -> f32, computing the output element at index");
    }
  }

  void ParseReference(const Json& j, const std::string& pointer, const ops::OpSpec& spec,
                      ops::UserKernel& user) {
    const std::string at = PointerJoin(pointer, "reference");
    auto it = j.find("reference");
    if (it == j.end() || !it->is_object() || !it->value("nodes", Json()).is_array() ||
        !it->contains("output")) {
      Error("missing-reference", at,
            "the op \"" + spec.name + "\" has no reference of built-in ops",
            "\"reference\": {\"nodes\": [{\"id\": 0, \"op\": \"input\", \"name\": ...}, ...], "
            "\"output\": <id>}: conformance proves the WGSL against it");
      return;
    }
    CheckKeys(*it, at, kReferenceFields, "a reference", errors_);
    const Json& nodes = it->at("nodes");
    std::vector<std::string> seen;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Json& n = nodes[i];
      if (!n.is_object() || n.value("op", Json()) != "input") continue;
      const std::string node_at = PointerJoin(PointerJoin(at, "nodes"), i);
      const Json& port = n.value("name", Json());
      if (!port.is_string() || !spec.FindPort(port.get<std::string>())) {
        Error("bad-reference-input", node_at,
              "the reference's input " + port.dump() + " is none of the op's inputs",
              "name each input node of the reference after one of the op's inputs");
        continue;
      }
      for (const char* key : {"shape", "dtype", "data"})
        if (n.contains(key))
          Error("bad-reference-input", PointerJoin(node_at, key),
                "the reference's input \"" + port.get<std::string>() + "\" declares its " + key,
                "leave it out: the input takes the shape and dtype of what the op is given");
      seen.push_back(port.get<std::string>());
    }
    for (const ops::Port& p : spec.ports)
      if (std::find(seen.begin(), seen.end(), p.name) == seen.end())
        Error("bad-reference-input", PointerJoin(at, "nodes"),
              "the reference has no input node named \"" + p.name + "\"",
              "add {\"id\": ..., \"op\": \"input\", \"name\": \"" + p.name + "\"}");
    user.reference = *it;
  }

  // The optional "gradient": per port, the WGSL and reference of its vector-Jacobian product, each
  // held to the forward's rules. Each becomes an op of its own (ops::UserGradientOpName), which
  // autodiff emits and conformance proves like the forward; returned to be added after it.
  std::vector<ops::OpSpec> ParseGradients(const Json& j, const std::string& pointer,
                                          const ops::OpSpec& forward, ops::UserKernel& user) {
    std::vector<ops::OpSpec> out;
    auto it = j.find("gradient");
    if (it == j.end()) return out;
    const std::string at = PointerJoin(pointer, "gradient");
    if (!it->is_object() || it->empty()) {
      Error("bad-gradient", at,
            "the gradient is " + it->dump() + ", expected an object of gradients by input",
            "\"gradient\": {\"<input>\": {\"wgsl\": ..., \"reference\": ...}}");
      return out;
    }
    for (const ops::Port& p : forward.ports)
      if (Upper(p.name) == Upper(ops::kUpstreamGradientPort))
        Error("bad-port-name", at,
              "the op has an input named \"" + p.name +
                  "\", the name its gradient gives the upstream gradient",
              "rename the input");
    for (auto g = it->begin(); g != it->end(); ++g) {
      const std::string port = g.key();
      const std::string port_at = PointerJoin(at, port);
      if (!forward.FindPort(port)) {
        Error("bad-gradient-port", port_at,
              "the gradient is given for \"" + port + "\", which is none of the op's inputs",
              "key each gradient by the name of the input it differentiates");
        continue;
      }
      if (!g->is_object()) {
        Error("bad-field-type", port_at,
              std::string("the gradient is a ") + g->type_name() + ", expected an object");
        continue;
      }
      CheckKeys(*g, port_at, callable_ ? kCallableGradientFields : kGradientFields, "a gradient",
                errors_);
      ops::OpSpec spec;
      spec.name = ops::UserGradientOpName(forward.name, port);
      spec.min_version = kUserOpsVersion;
      spec.kind = ops::OpKind::kUser;
      spec.tolerance = forward.tolerance;
      spec.summary = "the gradient of \"" + forward.name + "\" for its input \"" + port + "\" (" +
                     port_at + ")";
      spec.determinism = forward.determinism;
      spec.ports = forward.ports;
      spec.ports.emplace_back(ops::kUpstreamGradientPort, ops::PortRole::kGradient);
      if (const ops::OpSpec* taken = table_.Find(spec.name))
        Error("op-name-taken", port_at,
              "the gradient's op \"" + spec.name + "\" already exists" +
                  (taken->user ? " (defined earlier)" : " (it is built in)"),
              "rename the op whose name it takes");
      auto kernel = std::make_shared<ops::UserKernel>();
      kernel->pointer = port_at;
      kernel->shape_of = port;
      kernel->ranks = user.ranks;
      for (const ops::UserPortRank& r : user.ranks)
        if (r.port == user.shape_of) kernel->ranks.push_back({ops::kUpstreamGradientPort, r.rank});
      const size_t errors_before = errors_.size();
      ParseWgsl(*g, port_at, spec.name, *kernel);
      if (callable_)
        ParseGradientCallable(port, port_at, *kernel);
      else
        ParseReference(*g, port_at, spec, *kernel);
      if (errors_.size() != errors_before) continue;
      kernel->definition = user.definition;
      kernel->definition_hash =
          "sha256:" + Sha256Hex(CanonicalJson(user.definition) + "\ngradient " + port);
      kernel->gradient_of = forward.name;
      kernel->gradient_port = port;
      spec.user = std::move(kernel);
      if (!callable_) CheckReferenceStructure(spec);
      user.gradients.push_back({port, spec.name});
      out.push_back(std::move(spec));
    }
    return out;
  }

  // The callable an op defined through the API gives for the gradient of `port`. Its grad-check
  // differentiates the forward in float64 (conform/user_gradcheck.h), so the forward must come
  // with its float64 form.
  void ParseGradientCallable(const std::string& port, const std::string& port_at,
                             ops::UserKernel& kernel) {
    auto c = gradient_callables_->find(port);
    if (c == gradient_callables_->end() || !c->second.f32) {
      Error("missing-reference", PointerJoin(port_at, "reference"),
            "the gradient for \"" + port + "\" is given no reference callable",
            "pass a function computing the gradient on the CPU from the op's inputs and grad");
      return;
    }
    if (!callable_->f64) {
      Error("missing-reference-f64", PointerJoin(port_at, "reference"),
            "the op gives a gradient for \"" + port +
                "\" but no float64 form of its forward reference, which the gradient check "
                "differentiates",
            "give the forward's reference_f64: the same function on float64 values");
      return;
    }
    SetCallable(c->second, kernel);
  }

  // The reference's nodes as the document rung checks any graph's (ops that exist, references
  // that resolve, no cycles), against the built-in ops only.
  void CheckReferenceStructure(const ops::OpSpec& spec) {
    auto parsed = doc::Parse(CanonicalJson(ReferenceDocument(spec, {})), *ops::BuiltinOps());
    if (parsed.ok()) return;
    for (const Diagnostic& d : parsed.errors()) errors_.push_back(AtReference(spec, d));
  }

  ops::OpTable& table_;
  std::vector<Diagnostic>& errors_;
  const ops::UserCallable* callable_ = nullptr;
  const std::map<std::string, ops::UserCallable>* gradient_callables_ = nullptr;
};

}  // namespace

std::vector<Diagnostic> ParseUserOps(const Json& section, ops::OpTable& table) {
  std::vector<Diagnostic> errors;
  if (!section.is_object()) {
    errors.push_back(UserError("bad-field-type", "/ops",
                               std::string("\"ops\" is a ") + section.type_name() +
                                   ", expected an object of op definitions by name"));
    return errors;
  }
  UserOpParser parser(table, errors);
  for (auto it = section.begin(); it != section.end(); ++it) parser.Parse(it.key(), *it);
  return errors;
}

std::vector<Diagnostic> ParseCallableUserOp(
    const std::string& name, const Json& definition, const ops::UserCallable& reference,
    const std::map<std::string, ops::UserCallable>& gradients, ops::OpTable& table) {
  std::vector<Diagnostic> errors;
  if (!reference.f32) {
    errors.push_back(UserError("missing-reference", PointerJoin("/ops", name),
                               "the op \"" + name + "\" is given no reference callable",
                               "pass a function computing the op on the CPU"));
    return errors;
  }
  UserOpParser parser(table, errors);
  parser.UseCallable(reference, gradients);
  parser.Parse(name, definition);
  return errors;
}

Json ReferenceDocument(const ops::OpSpec& spec, const std::vector<TensorType>& args,
                       policy::Tier tier) {
  const ops::UserKernel& user = *spec.user;
  Json nodes = Json::array();
  for (const Json& n : user.reference.value("nodes", Json::array())) {
    Json node = n;
    if (n.is_object() && n.value("op", Json()) == "input" && n.value("name", Json()).is_string()) {
      for (size_t i = 0; i < spec.ports.size() && i < args.size(); ++i) {
        if (spec.ports[i].name != n["name"].get<std::string>()) continue;
        node["shape"] = args[i].sizes();
        node["dtype"] = DTypeName(args[i].dtype);
      }
    }
    nodes.push_back(std::move(node));
  }
  return {{"version", kMaxGraphVersion},
          {"name", spec.name + " (reference)"},
          {"determinism", policy::TierName(tier)},
          {"nodes", nodes},
          {"outputs",
           Json::array({{{"name", "out"}, {"id", user.reference.value("output", Json())}}})}};
}

Diagnostic AtReference(const ops::OpSpec& spec, Diagnostic d) {
  const std::string base = PointerJoin(spec.user->pointer, "reference");
  if (d.pointer.rfind("/outputs", 0) == 0)
    d.pointer = PointerJoin(base, "output");
  else
    d.pointer = base + d.pointer;
  d.where = "the reference of \"" + spec.name + "\"" + (d.where.empty() ? "" : ", " + d.where);
  return d;
}

}  // namespace scellis::doc
