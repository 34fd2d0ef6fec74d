#include "doc/document.h"

#include <algorithm>
#include <set>

#include "doc/input_lists.h"
#include "doc/keys.h"
#include "doc/user_ops.h"

namespace scellis::doc {

const std::vector<ops::OpSpec>& WorkflowBlockTypes() {
  static const std::vector<ops::OpSpec> types = [] {
    ops::OpSpec dataset;
    dataset.name = "dataset";
    dataset.kind = ops::OpKind::kSource;
    dataset.attrs = {{"source", ops::AttrType::kString, nullptr, true},
                     {"name", ops::AttrType::kString}};
    dataset.tolerance = policy::ToleranceClass::kExact;
    dataset.summary =
        "a labelled image dataset (\"fashion-mnist\", or \"idx:<images>,<labels>\"), read on "
        "the host; the train section's \"data\" feeds its batches to two input blocks";
    dataset.determinism = "batches in a seeded, counter-based order: the same on every backend";
    dataset.nan = "images are scaled to [0, 1]; labels are class indices";
    return std::vector<ops::OpSpec>{dataset};
  }();
  return types;
}

Json PaletteJson(const ops::OpTable& ops) {
  Json j = ops::ToJson(ops);
  for (const ops::OpSpec& s : WorkflowBlockTypes()) {
    Json e = ops::ToJson(s);
    // A dataset is no tensor: the train section names it; nothing is wired from it.
    e["outputs"] = Json::array();
    j["node_types"].push_back(e);
  }
  return j;
}

namespace {

// The fields of each object a document holds; any other is a mistake worth naming.
const std::vector<std::string> kGraphFields = {"version",     "nodes",     "outputs", "name",
                                               "determinism", "tolerance", "repeat",  "ops"};
const std::vector<std::string> kWorkflowFields = {"format",  "name",  "determinism", "tolerance",
                                                  "budget",  "dims",  "nodes",       "wires",
                                                  "outputs", "train", "repeat",      "ops"};
// A graph node's own fields; the rest are its op's ports and attributes.
const std::vector<std::string> kGraphNodeFields = {"id", "op", "name", "determinism", "tolerance"};
const std::vector<std::string> kWorkflowNodeFields = {"id",    "type",        "params",
                                                      "label", "determinism", "tolerance"};
const std::vector<std::string> kDeterminismFields = {"tier", "override",
                                                     "bit_exact_across_devices"};
const std::vector<std::string> kBudgetFields = {"memory_bytes"};
const std::vector<std::string> kWireFields = {"from", "to"};
// The params of a block type outside the op table.
std::vector<std::string> BlockParams(std::string_view type) {
  std::vector<std::string> out;
  for (const ops::OpSpec& s : WorkflowBlockTypes())
    if (s.name == type)
      for (const ops::Attr& a : s.attrs) out.push_back(a.name);
  return out;
}

bool IsIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

class Parser {
 public:
  // Inline `data` arrays are moved out of `root` into their nodes' params (ToJson puts them
  // back): the largest part of a large document is held once.
  Parser(Json& root, const ops::OpTable& ops) : root_(root), ops_(&ops) {}

  Result<Document> Run() {
    if (!root_.is_object()) {
      return UserError(
          "document-not-object", "",
          std::string("the document is a JSON ") + root_.type_name() + ", expected an object",
          "a graph is {\"version\": 1, \"nodes\": [...], \"outputs\": [...]}");
    }
    doc_.content_id = ContentId(root_);
    if (root_.contains("format"))
      ParseWorkflow();
    else
      ParseGraph();
    if (errors_.empty()) CheckReferences();
    if (errors_.empty()) SortByDependencies();
    if (!errors_.empty()) return Status(errors_);
    return std::move(doc_);
  }

 private:
  // `value` lies inside root_, which this parser may modify (the constructor's contract).
  static Json TakeData(const Json& value) { return std::move(const_cast<Json&>(value)); }

  void Error(std::string code, std::string pointer, std::string message, std::string help = "",
             const Node* node = nullptr) {
    Diagnostic d =
        UserError(std::move(code), std::move(pointer), std::move(message), std::move(help));
    if (node) d.where = node->Describe();
    errors_.push_back(std::move(d));
  }

  const Json* Field(const Json& obj, const char* key, const std::string& pointer, bool required) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required)
        Error("missing-field", pointer, std::string("the field \"") + key + "\" is missing");
      return nullptr;
    }
    return &*it;
  }

  // An optional string field: absent is "", any other type is an error.
  std::string StringField(const Json& obj, const char* key, const std::string& pointer,
                          const Node* node = nullptr) {
    auto it = obj.find(key);
    if (it == obj.end()) return "";
    if (!it->is_string()) {
      Error("bad-field-type", PointerJoin(pointer, key),
            std::string("\"") + key + "\" is " + it->dump() + ", expected a string", "", node);
      return "";
    }
    return it->get<std::string>();
  }

  const Json* NodesArray() {
    const Json* nodes = Field(root_, "nodes", "", true);
    if (!nodes) return nullptr;
    if (!nodes->is_array()) {
      Error("bad-field-type", "/nodes",
            std::string("\"nodes\" is a ") + nodes->type_name() + ", expected an array");
      return nullptr;
    }
    if (nodes->size() > kMaxNodes) {
      Error("too-many-nodes", "/nodes",
            "the document has " + std::to_string(nodes->size()) + " nodes, over the limit of " +
                std::to_string(kMaxNodes));
      return nullptr;
    }
    return nodes;
  }

  void ParseGraph() {
    doc_.form = Form::kGraph;
    CheckKeys(root_, "", kGraphFields, "a graph document", errors_);
    doc_.name = StringField(root_, "name", "");
    ParseDeterminism();
    const Json* version = Field(root_, "version", "", true);
    if (version) {
      if (!version->is_number_integer() || version->get<int64_t>() < 1) {
        Error("bad-version", "/version",
              "the version label is " + version->dump() + ", expected a positive integer");
      } else if (version->get<int64_t>() > kMaxGraphVersion) {
        Error("unsupported-version", "/version",
              "the graph is labelled version " + version->dump() +
                  " but this build reads up to "
                  "version " +
                  std::to_string(kMaxGraphVersion),
              "upgrade Scellis to run it");
      } else {
        doc_.version = version->get<int>();
      }
    }
    ParseRepeat();
    ParseUserOps();
    const Json* nodes = NodesArray();
    if (nodes) {
      for (size_t i = 0; i < nodes->size(); ++i) ParseGraphNode((*nodes)[i], i);
    }
    ParseOutputs("id");
  }

  // `"repeat": 512` (or, in a workflow, the name of a dim): the graph is a loop body. Its value is
  // resolved at BlockIR, where dims are bound.
  void ParseRepeat() {
    auto it = root_.find("repeat");
    if (it == root_.end()) return;
    if (doc_.form == Form::kGraph && doc_.version < kRepeatVersion) {
      Error("field-newer-than-version", "/repeat",
            "\"repeat\" is graph protocol version " + std::to_string(kRepeatVersion) +
                ", but the graph is labelled version " + std::to_string(doc_.version),
            "label the graph version " + std::to_string(kRepeatVersion));
      return;
    }
    const bool count =
        it->is_number_integer() && it->get<int64_t>() >= 1 && it->get<int64_t>() <= kMaxRepeat;
    const bool dim =
        doc_.form == Form::kWorkflow && it->is_string() && IsIdentifier(it->get<std::string>());
    if (!count && !dim) {
      Error("bad-repeat", "/repeat",
            "\"repeat\" is " + it->dump() + ", expected an integer from 1 to " +
                std::to_string(kMaxRepeat) +
                (doc_.form == Form::kWorkflow ? " or the name of a dim" : ""));
      return;
    }
    doc_.repeat = *it;
  }

  // `"ops"`: the document's own ops (version 6), added to a copy of the table before any node is
  // read, so nodes use them as any op.
  void ParseUserOps() {
    auto it = root_.find("ops");
    if (it == root_.end()) return;
    if (doc_.form == Form::kGraph && doc_.version < kUserOpsVersion) {
      Error("field-newer-than-version", "/ops",
            "\"ops\" is graph protocol version " + std::to_string(kUserOpsVersion) +
                ", but the graph is labelled version " + std::to_string(doc_.version),
            "label the graph version " + std::to_string(kUserOpsVersion));
      return;
    }
    auto table = std::make_shared<ops::OpTable>(*ops_);
    std::vector<Diagnostic> errors = doc::ParseUserOps(*it, *table);
    errors_.insert(errors_.end(), errors.begin(), errors.end());
    doc_.ops = table;
    ops_ = table.get();
  }

  void ParseGraphNode(const Json& j, size_t index) {
    std::string pointer = PointerJoin("/nodes", index);
    if (!j.is_object()) {
      Error("node-not-object", pointer,
            std::string("the node is a ") + j.type_name() + ", expected an object");
      return;
    }
    Node node;
    node.pointer = pointer;
    const Json* id = Field(j, "id", pointer, true);
    const Json* op = Field(j, "op", pointer, true);
    if (!id || !op) return;
    if (!id->is_number_integer() || id->get<int64_t>() < 0) {
      Error("bad-id", PointerJoin(pointer, "id"),
            "the id is " + id->dump() + ", expected a non-negative integer");
      return;
    }
    if (!op->is_string()) {
      Error("bad-field-type", PointerJoin(pointer, "op"),
            "the op is " + op->dump() + ", expected a string");
      return;
    }
    node.id = std::to_string(id->get<int64_t>());
    node.op = op->get<std::string>();
    node.params = Json::object();
    const ops::OpSpec* spec = ops_->Find(node.op);
    if (!spec) {
      Error("unknown-op", pointer, "the op \"" + node.op + "\" does not exist",
            "ops of version " + std::to_string(doc_.version) + ": " + ops_->NamesUpTo(doc_.version),
            &node);
    }
    node.label = StringField(j, "name", pointer, &node);
    if (spec) {
      // Fields that are neither the node's own, nor references, must be the op's attributes.
      Json attrs = Json::object();
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (std::find(kGraphNodeFields.begin(), kGraphNodeFields.end(), it.key()) ==
                kGraphNodeFields.end() &&
            !IsReference(spec, it.key()))
          attrs[it.key()] = nullptr;
      }
      CheckKeys(attrs, pointer, AttrNames(*spec), "the op \"" + node.op + "\"", errors_,
                "unknown-attribute", node.Describe());
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      if (key == "id" || key == "op" || key == "name") continue;
      if (key == "determinism" || key == "tolerance") {
        ParseNodeDeclaration(*it, key, node);
        continue;
      }
      // A list port's field, or a list given to an op without that port (refused by name a
      // rung down, as any port the op lacks).
      if (const ops::Port* port = spec ? spec->FindPort(key) : nullptr;
          (port && port->list) || (!port && it->is_array() && IsReference(spec, key))) {
        ParseListReference(*it, key, node);
        continue;
      }
      if (IsReference(spec, key)) {
        if (!it->is_number_integer() || it->get<int64_t>() < 0) {
          Error("bad-reference", PointerJoin(pointer, key),
                "the reference \"" + key + "\" is " + it->dump() + ", expected a node id", "",
                &node);
          continue;
        }
        node.inputs.push_back({key, std::to_string(it->get<int64_t>()), PointerJoin(pointer, key)});
        continue;
      }
      node.params[key] = key == "data" ? TakeData(*it) : *it;
    }
    AddNode(std::move(node));
  }

  // A list port's field: a non-empty array of node ids, one input per entry in list order, each
  // located at its own entry.
  void ParseListReference(const Json& j, const std::string& key, Node& node) {
    const std::string pointer = PointerJoin(node.pointer, key);
    if (!j.is_array()) {
      Error("bad-reference", pointer,
            "the input list \"" + key + "\" is " + j.dump() + ", expected an array of node ids", "",
            &node);
      return;
    }
    if (j.empty()) {
      Diagnostic d = EmptyInputList(pointer, key, node.op);
      d.where = node.Describe();
      errors_.push_back(std::move(d));
      return;
    }
    for (size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_number_integer() || j[i].get<int64_t>() < 0) {
        Error("bad-reference", PointerJoin(pointer, i),
              "the entry " + std::to_string(i) + " of \"" + key + "\" is " + j[i].dump() +
                  ", expected a node id",
              "", &node);
        continue;
      }
      node.inputs.push_back({key, std::to_string(j[i].get<int64_t>()), PointerJoin(pointer, i)});
    }
  }

  static std::vector<std::string> AttrNames(const ops::OpSpec& spec) {
    std::vector<std::string> names;
    for (const ops::Attr& a : spec.attrs) names.push_back(a.name);
    return names;
  }

  // A field names an input when it is a port of the node's op, or a port of another op and not an
  // attribute of this one: then it is still meant as an input, and the op refuses it by name one
  // rung down (a source given an input, an op given a port it lacks).
  bool IsReference(const ops::OpSpec* spec, const std::string& key) const {
    if (spec && spec->FindPort(key)) return true;
    return !(spec && spec->FindAttr(key)) && ops_->IsPortName(key);
  }

  void ParseWorkflow() {
    doc_.form = Form::kWorkflow;
    doc_.version = kMaxGraphVersion;  // workflows may use every op this build has
    const Json& format = root_["format"];
    if (!format.is_string() || format.get<std::string>() != kWorkflowFormat) {
      Error("unsupported-format", "/format",
            "the format is " + format.dump() + ", this build reads \"" + kWorkflowFormat + "\"");
      return;
    }
    CheckKeys(root_, "", kWorkflowFields, "a workflow document", errors_);
    doc_.name = StringField(root_, "name", "");
    ParseDeterminism();
    ParseBudget();
    ParseDims();
    ParseRepeat();
    ParseUserOps();
    if (auto t = root_.find("train"); t != root_.end()) {
      if (!t->is_object())
        Error("bad-field-type", "/train", "\"train\" must be an object");
      else
        doc_.train = *t;
    }

    const Json* nodes = NodesArray();
    if (nodes) {
      for (size_t i = 0; i < nodes->size(); ++i) ParseWorkflowNode((*nodes)[i], i);
    }
    if (!errors_.empty()) return;
    ParseWires();
    ParseOutputs("from");
  }

  struct DeterminismDeclaration {
    policy::Tier tier;
    bool override_tier = false;
    bool bit_exact_across_devices = false;
  };

  // A "determinism" declaration, in either form and at either level: a tier name, or
  // {"tier": ..., "override": true, "bit_exact_across_devices": true}. Overrides and device-wide
  // requests concern the whole run, so a node may declare only its tier.
  std::optional<DeterminismDeclaration> ParseDeterminismAt(const Json& j,
                                                           const std::string& pointer,
                                                           bool whole_document,
                                                           const Node* node = nullptr) {
    DeterminismDeclaration decl{policy::Tier::kProd};
    const Json* tier_json = &j;
    if (j.is_object()) {
      tier_json = Field(j, "tier", pointer, true);
      CheckKeys(j, pointer, kDeterminismFields, "a determinism declaration", errors_,
                "unknown-field", node ? node->Describe() : "");
      for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& key = it.key();
        bool* flag = key == "override"                   ? &decl.override_tier
                     : key == "bit_exact_across_devices" ? &decl.bit_exact_across_devices
                                                         : nullptr;
        if (!flag) {
          continue;
        } else if (!whole_document) {
          Error("bad-determinism-tier", PointerJoin(pointer, key),
                "\"" + key + "\" concerns the whole run; a node declares only its tier",
                "declare it in the document's \"determinism\"", node);
        } else if (!it->is_boolean()) {
          Error("bad-field-type", PointerJoin(pointer, key),
                "\"" + key + "\" is " + it->dump() + ", expected true or false", "", node);
        } else {
          *flag = it->get<bool>();
        }
      }
    }
    if (!tier_json) return std::nullopt;
    auto tier =
        tier_json->is_string() ? policy::ParseTier(tier_json->get<std::string>()) : std::nullopt;
    if (!tier) {
      Error("bad-determinism-tier", pointer,
            "the determinism tier is " + tier_json->dump() + ", expected one of debug, prod, fast",
            "", node);
      return std::nullopt;
    }
    decl.tier = *tier;
    return decl;
  }

  std::optional<policy::ToleranceClass> ParseToleranceAt(const Json& j, const std::string& pointer,
                                                         const Node* node = nullptr) {
    auto tol = j.is_string() ? policy::ParseTolerance(j.get<std::string>()) : std::nullopt;
    if (!tol) {
      Error("bad-tolerance-class", pointer,
            "the tolerance class is " + j.dump() + ", expected one of exact, tight, default, loose",
            "", node);
    }
    return tol;
  }

  void ParseDeterminism() {
    if (auto it = root_.find("determinism"); it != root_.end()) {
      if (auto decl = ParseDeterminismAt(*it, "/determinism", true)) {
        doc_.tier = decl->tier;
        doc_.tier_pointer = "/determinism";
        doc_.tier_override = decl->override_tier;
        doc_.bit_exact_across_devices = decl->bit_exact_across_devices;
      }
    }
    if (auto t = root_.find("tolerance"); t != root_.end())
      doc_.tolerance = ParseToleranceAt(*t, "/tolerance");
  }

  // A node's own "determinism" or "tolerance".
  void ParseNodeDeclaration(const Json& j, const std::string& key, Node& node) {
    std::string pointer = PointerJoin(node.pointer, key);
    if (key == "tolerance") {
      node.tolerance = ParseToleranceAt(j, pointer, &node);
    } else if (auto decl = ParseDeterminismAt(j, pointer, false, &node)) {
      node.tier = decl->tier;
    }
  }

  void ParseBudget() {
    auto it = root_.find("budget");
    if (it == root_.end()) return;
    if (!it->is_object()) {
      Error("bad-field-type", "/budget",
            "the budget is " + std::string(it->type_name()) +
                ", expected an object such as {\"memory_bytes\": 1e9}");
      return;
    }
    CheckKeys(*it, "/budget", kBudgetFields, "a budget", errors_);
    if (auto m = it->find("memory_bytes"); m != it->end()) {
      if (!m->is_number() || m->get<double>() <= 0 || m->get<double>() > 9e18) {
        Error("bad-budget", "/budget/memory_bytes",
              "the memory budget is " + m->dump() + ", expected a positive number of bytes");
      } else {
        doc_.budget_bytes = static_cast<int64_t>(m->get<double>());
      }
    }
  }

  void ParseDims() {
    auto it = root_.find("dims");
    if (it == root_.end()) return;
    if (!it->is_object()) {
      Error("bad-field-type", "/dims", "\"dims\" must be an object such as {\"N\": 64}");
      return;
    }
    for (auto d = it->begin(); d != it->end(); ++d) {
      std::string pointer = PointerJoin("/dims", d.key());
      if (!IsIdentifier(d.key())) {
        Error("bad-dim-name", pointer,
              "the dimension name \"" + d.key() + "\" is not an identifier");
      } else if (!d->is_number_integer() || d->get<int64_t>() < 0 ||
                 d->get<int64_t>() > kMaxElements) {
        Error(
            "bad-dim", pointer,
            "the dimension " + d.key() + " is " + d->dump() + ", expected a non-negative integer");
      } else {
        doc_.dims[d.key()] = d->get<int64_t>();
      }
    }
  }

  void ParseWorkflowNode(const Json& j, size_t index) {
    std::string pointer = PointerJoin("/nodes", index);
    if (!j.is_object()) {
      Error("node-not-object", pointer,
            std::string("the node is a ") + j.type_name() + ", expected an object");
      return;
    }
    Node node;
    node.pointer = pointer;
    const Json* id = Field(j, "id", pointer, true);
    const Json* type = Field(j, "type", pointer, true);
    if (!id || !type) return;
    if (!id->is_string() || !IsIdentifier(id->get<std::string>())) {
      Error("bad-id", PointerJoin(pointer, "id"),
            "the id is " + id->dump() + ", expected a name of letters, digits, '_' or '-'");
      return;
    }
    if (!type->is_string()) {
      Error("bad-field-type", PointerJoin(pointer, "type"),
            "the block type is " + type->dump() + ", expected a string");
      return;
    }
    node.id = id->get<std::string>();
    node.op = type->get<std::string>();
    node.params = Json::object();
    CheckKeys(j, pointer, kWorkflowNodeFields, "a workflow node", errors_, "unknown-field",
              node.Describe());
    if (auto p = j.find("params"); p != j.end()) {
      if (!p->is_object()) {
        Error("bad-field-type", PointerJoin(pointer, "params"), "params must be an object");
        return;
      }
      node.params = Json::object();
      for (auto q = p->begin(); q != p->end(); ++q)
        node.params[q.key()] = q.key() == "data" ? TakeData(*q) : *q;
    }
    const std::string params_pointer = PointerJoin(pointer, "params");
    if (node.op == "dataset") {
      CheckKeys(node.params, params_pointer, BlockParams("dataset"), "a dataset block", errors_,
                "unknown-attribute", node.Describe());
    } else if (const ops::OpSpec* spec = ops_->Find(node.op)) {
      // Every block may carry a display name; the rest are its op's attributes.
      std::vector<std::string> known = AttrNames(*spec);
      if (!spec->FindAttr("name")) known.push_back("name");
      CheckKeys(node.params, params_pointer, known, "the op \"" + node.op + "\"", errors_,
                "unknown-attribute", node.Describe());
    }
    node.label = StringField(j, "label", pointer, &node);
    if (std::string name = StringField(node.params, "name", params_pointer, &node);
        node.label.empty())
      node.label = name;
    for (const char* key : {"determinism", "tolerance"})
      if (auto t = j.find(key); t != j.end()) ParseNodeDeclaration(*t, key, node);
    AddNode(std::move(node));
  }

  // `"x"`, `"x.out"` → node x; `"y.a"` → node y, port a.
  static std::pair<std::string, std::string> SplitEndpoint(const std::string& s) {
    size_t dot = s.find('.');
    if (dot == std::string::npos) return {s, ""};
    return {s.substr(0, dot), s.substr(dot + 1)};
  }

  void ParseWires() {
    auto it = root_.find("wires");
    if (it == root_.end()) return;
    if (!it->is_array()) {
      Error("bad-field-type", "/wires", "\"wires\" must be an array");
      return;
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& w = (*it)[i];
      std::string pointer = PointerJoin("/wires", i);
      CheckKeys(w, pointer, kWireFields, "a wire", errors_);
      if (!w.is_object() || !w.contains("from") || !w.contains("to") || !w["from"].is_string() ||
          !w["to"].is_string()) {
        Error("bad-wire", pointer, "a wire is {\"from\": \"node\", \"to\": \"node.port\"}");
        continue;
      }
      auto [from, from_port] = SplitEndpoint(w["from"].get<std::string>());
      auto [to, to_port] = SplitEndpoint(w["to"].get<std::string>());
      if (!from_port.empty() && from_port != "out") {
        Error("bad-wire", PointerJoin(pointer, "from"),
              "blocks have one output port \"out\", the wire names \"" + from_port + "\"");
        continue;
      }
      auto target = index_.find(to);
      if (target == index_.end()) {
        Error("dangling-reference", PointerJoin(pointer, "to"),
              "the wire leads to \"" + to + "\", which is not a node");
        continue;
      }
      if (to_port.empty()) {
        Error("bad-wire", PointerJoin(pointer, "to"),
              "the wire must name the input port, e.g. \"" + to + ".a\"");
        continue;
      }
      Node& node = doc_.nodes[target->second];
      // A list port takes one wire per entry, in wire order.
      const ops::OpSpec* spec = ops_->Find(node.op);
      const ops::Port* port = spec ? spec->FindPort(to_port) : nullptr;
      for (const Input& in : node.inputs) {
        if (in.port == to_port && !(port && port->list)) {
          Error("duplicate-wire", PointerJoin(pointer, "to"),
                "the port " + to + "." + to_port + " already has a wire (" + in.pointer + ")");
        }
      }
      node.inputs.push_back({to_port, from, PointerJoin(pointer, "from")});
    }
  }

  // Outputs name a node: by integer id in a graph (`"id": 3`), by id or endpoint in a workflow
  // (`"from": "x"` or `"from": "x.out"`).
  void ParseOutputs(const char* source_key) {
    const Json* outputs = Field(root_, "outputs", "", true);
    if (!outputs) return;
    if (!outputs->is_array()) {
      Error("bad-field-type", "/outputs", "\"outputs\" must be an array");
      return;
    }
    const bool graph = doc_.form == Form::kGraph;
    const std::string shape = std::string("an output is {\"name\": \"values\", \"") + source_key +
                              "\": " + (graph ? "3}" : "\"node\"}");
    std::set<std::string> names;
    for (size_t i = 0; i < outputs->size(); ++i) {
      const Json& o = (*outputs)[i];
      std::string pointer = PointerJoin("/outputs", i);
      if (!o.is_object() || !o.contains("name") || !o["name"].is_string() ||
          !o.contains(source_key)) {
        Error("bad-output", pointer, shape);
        continue;
      }
      CheckKeys(o, pointer, {"name", source_key}, "an output", errors_);
      Output out;
      out.name = o["name"].get<std::string>();
      out.pointer = pointer;
      const Json& src = o[source_key];
      const std::string src_pointer = PointerJoin(pointer, source_key);
      if (graph && src.is_number_integer() && src.get<int64_t>() >= 0) {
        out.source = std::to_string(src.get<int64_t>());
      } else if (!graph && src.is_string()) {
        auto [node, port] = SplitEndpoint(src.get<std::string>());
        if (!port.empty() && port != "out") {
          Error("bad-output", src_pointer,
                "the output source is " + src.dump() + "; blocks have one output port \"out\"",
                "name the node, e.g. \"" + node + "\"");
          continue;
        }
        out.source = node;
      } else {
        Error("bad-output", src_pointer,
              "the output source is " + src.dump() + ", expected " +
                  (graph ? "a node id" : "a node name"),
              shape);
        continue;
      }
      if (!names.insert(out.name).second) {
        Error("duplicate-output", pointer, "two outputs are named \"" + out.name + "\"");
        continue;
      }
      doc_.outputs.push_back(std::move(out));
    }
  }

  void AddNode(Node node) {
    auto [it, inserted] = index_.emplace(node.id, doc_.nodes.size());
    if (!inserted) {
      Error("duplicate-id", node.pointer,
            "the id " + node.id + " is already used by " + doc_.nodes[it->second].pointer,
            "give every node its own id", &node);
      return;
    }
    doc_.nodes.push_back(std::move(node));
  }

  void CheckReferences() {
    for (const Node& n : doc_.nodes) {
      for (const Input& in : n.inputs) {
        if (!index_.count(in.source)) {
          Error("dangling-reference", in.pointer,
                "the input \"" + in.port + "\" refers to node " + in.source +
                    ", which does not exist",
                "", &n);
        }
      }
    }
    for (const Output& o : doc_.outputs) {
      if (!index_.count(o.source)) {
        Error(
            "dangling-reference", o.pointer,
            "the output \"" + o.name + "\" refers to node " + o.source + ", which does not exist");
      }
    }
  }

  // Kahn's algorithm, taking ready nodes in document order so the result is stable.
  void SortByDependencies() {
    size_t n = doc_.nodes.size();
    std::vector<int> pending(n, 0);
    std::vector<std::vector<size_t>> users(n);
    for (size_t i = 0; i < n; ++i) {
      for (const Input& in : doc_.nodes[i].inputs) {
        size_t src = index_[in.source];
        users[src].push_back(i);
        ++pending[i];
      }
    }
    std::set<size_t> ready;
    for (size_t i = 0; i < n; ++i)
      if (!pending[i]) ready.insert(i);
    std::vector<size_t> order;
    while (!ready.empty()) {
      size_t i = *ready.begin();
      ready.erase(ready.begin());
      order.push_back(i);
      for (size_t u : users[i])
        if (--pending[u] == 0) ready.insert(u);
    }
    if (order.size() != n) {
      for (size_t i = 0; i < n; ++i) {
        if (pending[i]) {
          Error("cycle", doc_.nodes[i].pointer,
                "node " + doc_.nodes[i].id + " depends on itself through a cycle of references",
                "a graph must be acyclic; loops are written as a repeat block", &doc_.nodes[i]);
          return;
        }
      }
    }
    std::vector<Node> sorted;
    sorted.reserve(n);
    for (size_t i : order) sorted.push_back(std::move(doc_.nodes[i]));
    doc_.nodes = std::move(sorted);
  }

  const Json& root_;
  // The table nodes are read against: the one Parse was given, or the document's own copy of it
  // with the ops its "ops" section defines.
  const ops::OpTable* ops_;
  Document doc_;
  std::map<std::string, size_t> index_;
  std::vector<Diagnostic> errors_;
};

}  // namespace

std::string Node::Describe() const {
  return label.empty() ? op + " #" + id : op + " \"" + label + "\"";
}

const Node* Document::Find(const std::string& id) const {
  for (const Node& n : nodes)
    if (n.id == id) return &n;
  return nullptr;
}

Result<Document> Parse(std::string_view text, const ops::OpTable& ops) {
  SCELLIS_ASSIGN_OR_RETURN(Json root, ParseUntrustedJson(text));
  SCELLIS_ASSIGN_OR_RETURN(Document d, Parser(root, ops).Run());
  d.source = std::move(root);  // the parsed tree itself: a large document is not held twice
  return d;
}

Json ToJson(const Document& d) {
  Json j = d.source;
  for (const Node& n : d.nodes) {
    auto data = n.params.find("data");
    if (data == n.params.end()) continue;
    std::string at = d.form == Form::kGraph ? n.pointer : PointerJoin(n.pointer, "params");
    j[Json::json_pointer(PointerJoin(at, "data"))] = *data;
  }
  return j;
}

std::string Print(const Document& d) {
  std::string out;
  if (d.form == Form::kGraph)
    out += "graph version " + std::to_string(d.version);
  else
    out += std::string("workflow \"") + d.name + "\" (" + kWorkflowFormat + ")";
  out += "  " + d.content_id + "\n";
  if (d.tier)
    out += std::string("  determinism ") + policy::TierName(*d.tier) +
           (d.tier_override ? " (override)" : "") + "\n";
  if (d.bit_exact_across_devices) out += "  bit-exact across devices\n";
  if (d.tolerance) out += std::string("  tolerance ") + policy::ToleranceName(*d.tolerance) + "\n";
  if (d.budget_bytes) out += "  budget " + std::to_string(*d.budget_bytes) + " bytes\n";
  for (const auto& [k, v] : d.dims) out += "  dim " + k + " = " + std::to_string(v) + "\n";
  for (const Node& n : d.nodes) {
    out += "  node " + n.id + " = " + n.op;
    // A list port's entries follow each other: `inputs=[3, 4]`.
    for (size_t i = 0; i < n.inputs.size();) {
      size_t end = i + 1;
      while (end < n.inputs.size() && n.inputs[end].port == n.inputs[i].port) ++end;
      out += (i ? ", " : " ") + n.inputs[i].port + "=";
      if (end - i == 1) {
        out += n.inputs[i].source;
      } else {
        for (size_t k = i; k < end; ++k) out += (k == i ? "[" : ", ") + n.inputs[k].source;
        out += "]";
      }
      i = end;
    }
    Json shown = n.params;
    if (shown.contains("data") && shown["data"].is_array() && shown["data"].size() > 8)
      shown["data"] = std::to_string(shown["data"].size()) + " values";
    if (!shown.empty()) out += " " + CanonicalJson(shown);
    out += "   " + n.pointer + "\n";
  }
  for (const Output& o : d.outputs) out += "  output " + o.name + " = " + o.source + "\n";
  return out;
}

Status Verify(const Document& d) {
  std::set<std::string> seen;
  for (const Node& n : d.nodes) {
    for (const Input& in : n.inputs) {
      if (!seen.count(in.source))
        return InternalError("doc.Verify", "node " + n.id + " precedes its input " + in.source);
    }
    if (!seen.insert(n.id).second) return InternalError("doc.Verify", "duplicate id " + n.id);
  }
  for (const Output& o : d.outputs)
    if (!seen.count(o.source)) return InternalError("doc.Verify", "dangling output " + o.name);
  return Status::Ok();
}

}  // namespace scellis::doc
