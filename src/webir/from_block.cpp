// Lowers BlockIR to WebIR: each op block becomes one node typed by its op's rule; the scalar form
// of binary ops (`{"a": 0, "scalar": 2}`) becomes a rank-0 constant operand so one broadcasting
// mechanism serves both.
//
// A training step becomes forward + Backward + one optimizer update per trained param, all in the
// one graph. Its state travels by name: every value carried to the next step is an output named
// after the feed it replaces there — the param's own name for its new value, "<param>.m",
// "<param>.v" (Adam) or "<param>.velocity" (SGD with momentum) for the optimizer state, "step" for
// the step counter. The state inputs start from inline zeros and the step from 1, so the first
// step runs with no feeds at all; a session feeds each output back under its own name.
#include <set>

#include "webir/autodiff/autodiff.h"
#include "webir/graph.h"
#include "webir/op_registry.h"

namespace scellis::webir {
namespace {

class Lowering {
 public:
  explicit Lowering(const block::Program& p) : prog_(p) {}

  Result<Graph> Run() {
    g_.name = prog_.name;
    g_.version = prog_.version;
    g_.tier = prog_.tier;
    g_.tier_source = prog_.tier_source;
    g_.tolerance = prog_.tolerance;
    g_.budget_bytes = prog_.budget_bytes;
    g_.notes = prog_.notes;
    for (const block::Block& b : prog_.blocks) {
      int id = LowerBlock(b);
      node_of_.push_back(id);
    }
    for (const block::Output& o : prog_.outputs) {
      if (node_of_[o.block] >= 0) g_.outputs.push_back({o.name, node_of_[o.block]});
    }
    if (prog_.train && errors_.empty()) LowerTrain(*prog_.train);
    if (!errors_.empty()) return Status(errors_);
    return std::move(g_);
  }

 private:
  void Error(const block::Block& b, std::string code, std::string pointer, std::string message,
             std::string help = "") {
    Diagnostic d = UserError(std::move(code), std::move(pointer), std::move(message),
                             std::move(help));
    d.where = b.Describe();
    errors_.push_back(std::move(d));
  }

  std::string ParamPointer(const block::Block& b, const std::string& key) {
    return prog_.form == doc::Form::kGraph ? PointerJoin(b.pointer, key)
                                           : PointerJoin(PointerJoin(b.pointer, "params"), key);
  }

  int LowerBlock(const block::Block& b) {
    Node n;
    n.name = b.id;
    n.label = b.label;
    n.origin = b.pointer;
    switch (b.kind) {
      case block::BlockKind::kInput:
        n.op = "input";
        n.role = Role::kInput;
        n.type = b.tensor_type;
        n.data = b.data;
        return g_.Add(std::move(n));
      case block::BlockKind::kParam:
        n.op = "param";
        n.role = Role::kParam;
        n.type = b.tensor_type;
        n.init = b.init;
        return g_.Add(std::move(n));
      case block::BlockKind::kFull:
        n.op = "full";
        n.role = Role::kConst;
        n.type = b.tensor_type;
        n.attrs["value"] = b.params["value"];
        return g_.Add(std::move(n));
      case block::BlockKind::kOp:
        return LowerOp(b, std::move(n));
    }
    return -1;
  }

  int LowerOp(const block::Block& b, Node n) {
    const OpDef* def = FindOp(b.type);
    if (!def || def->kind == OpKind::kSource) {
      std::string known;
      for (const OpDef& d : Registry())
        if (d.min_version <= prog_.version) known += (known.empty() ? "" : ", ") + d.name;
      Error(b, "unknown-op", b.pointer, "the op \"" + b.type + "\" does not exist",
            "ops of version " + std::to_string(prog_.version) + ": " + known);
      return -1;
    }
    if (def->min_version > prog_.version) {
      Error(b, "op-newer-than-version", b.pointer,
            "the op \"" + b.type + "\" needs graph protocol version " +
                std::to_string(def->min_version) + ", the graph is labelled version " +
                std::to_string(prog_.version),
            "label the graph \"version\": " + std::to_string(def->min_version));
      return -1;
    }
    n.op = def->name;

    // Attributes: everything the op accepts; anything else is a mistake worth naming.
    for (auto it = b.params.begin(); it != b.params.end(); ++it) {
      if (it.key() == "name") continue;
      if (std::find(def->attrs.begin(), def->attrs.end(), it.key()) == def->attrs.end()) {
        Error(b, "unknown-attribute", ParamPointer(b, it.key()),
              "the op \"" + def->name + "\" has no attribute \"" + it.key() + "\"");
        return -1;
      }
      if (it.key() != "scalar") n.attrs[it.key()] = *it;
    }

    // Arguments by port name, in the op's order.
    std::map<std::string, int> ports;
    for (const auto& [port, src] : b.inputs) {
      if (std::find(def->inputs.begin(), def->inputs.end(), port) == def->inputs.end()) {
        Error(b, "unknown-port", b.pointer,
              "the op \"" + def->name + "\" has no input \"" + port + "\"");
        return -1;
      }
      if (node_of_[src] < 0) return -1;  // its producer already failed and was reported
      ports[port] = node_of_[src];
    }
    for (const std::string& port : def->inputs) {
      auto it = ports.find(port);
      if (it != ports.end()) {
        n.args.push_back(it->second);
        continue;
      }
      if (port == "b" && b.params.contains("scalar")) {
        const Json& s = b.params["scalar"];
        if (!s.is_number()) {
          Error(b, "bad-attribute", ParamPointer(b, "scalar"),
                "the scalar is " + s.dump() + ", expected a number");
          return -1;
        }
        Node c;
        c.op = "full";
        c.role = Role::kConst;
        c.type = MakeType({}, DType::kF32);
        c.attrs["value"] = s;
        c.origin = ParamPointer(b, "scalar");
        n.args.push_back(g_.Add(std::move(c)));
        continue;
      }
      Error(b, "missing-input", b.pointer,
            "the op \"" + def->name + "\" needs its input \"" + port + "\"",
            port == "b" && def->attrs.size() && def->attrs[0] == "scalar"
                ? "give \"b\" a node id, or \"scalar\" a number"
                : "");
      return -1;
    }

    InferContext c;
    for (int a : n.args) c.args.push_back(g_.at(a).type);
    c.attrs = n.attrs;
    c.version = prog_.version;
    c.pointer = b.pointer;
    c.where = b.Describe();
    auto type = def->infer(c);
    if (!type.ok()) {
      for (const Diagnostic& d : type.errors()) errors_.push_back(d);
      return -1;
    }
    n.type = type.value();
    n.attrs = c.attrs;
    return g_.Add(std::move(n));
  }

  void TrainError(const block::TrainStep& t, std::string code, std::string pointer,
                  std::string message, std::string help = "") {
    errors_.push_back(UserError(std::move(code), pointer.empty() ? t.pointer : std::move(pointer),
                                std::move(message), std::move(help)));
  }

  static std::string FeedNameOf(const Node& n) { return n.label.empty() ? n.name : n.label; }

  // A state tensor carried between steps: an input fed by name, zeros until then.
  int StateInput(const std::string& name, const TensorType& type, const std::string& origin,
                 std::vector<float> initial) {
    Node n;
    n.op = "input";
    n.role = Role::kInput;
    n.purpose = Purpose::kOptimizerState;
    n.name = n.label = name;
    n.type = type;
    n.data = std::move(initial);
    n.origin = origin;
    return g_.Add(std::move(n));
  }

  // An update op typed by its registry rule; attribute errors point at the optimizer settings.
  int Update(const block::TrainStep& t, const std::string& op, std::vector<int> args,
             const Json& attrs, const std::string& name, Purpose purpose) {
    const OpDef* def = FindOp(op);
    InferContext c;
    for (int a : args) c.args.push_back(g_.at(a).type);
    c.attrs = attrs;
    c.version = std::max(g_.version, def->min_version);
    c.pointer = PointerJoin(t.pointer, "optimizer");
    c.where = "train";
    auto type = def->infer(c);
    if (!type.ok()) {
      for (const Diagnostic& d : type.errors()) errors_.push_back(d);
      return -1;
    }
    Node n;
    n.op = op;
    n.args = std::move(args);
    n.attrs = c.attrs;
    n.type = type.value();
    n.name = name;
    n.origin = t.pointer;
    n.purpose = purpose;
    return g_.Add(std::move(n));
  }

  void LowerTrain(const block::TrainStep& t) {
    int loss = node_of_[t.loss];
    std::vector<int> params;
    for (int b : t.params) params.push_back(node_of_[b]);
    if (loss < 0 || std::find(params.begin(), params.end(), -1) != params.end()) return;

    // Optimizer settings: PyTorch's names, "betas": [b1, b2] accepted for Adam.
    const std::string opt_pointer = PointerJoin(t.pointer, "optimizer");
    Json attrs = t.hyper;
    bool adam = t.optimizer == "adam" || t.optimizer == "adamw";
    if (adam && attrs.contains("betas")) {
      const Json& b = attrs["betas"];
      if (!b.is_array() || b.size() != 2 || !b[0].is_number() || !b[1].is_number()) {
        TrainError(t, "bad-attribute", PointerJoin(opt_pointer, "betas"),
                   "betas is " + b.dump() + ", expected two numbers [beta1, beta2]");
        return;
      }
      attrs["beta1"] = b[0];
      attrs["beta2"] = b[1];
      attrs.erase("betas");
    }
    if (t.optimizer == "adamw") attrs["decoupled"] = true;
    bool momentum = t.optimizer == "sgd" && attrs.contains("momentum") &&
                    attrs["momentum"].is_number() && attrs["momentum"].get<double>() != 0;
    std::string update = adam ? "adam_update" : momentum ? "momentum_update" : "sgd_update";
    const OpDef* def = FindOp(update);
    for (auto it = attrs.begin(); it != attrs.end(); ++it) {
      bool known = std::find(def->attrs.begin(), def->attrs.end(), it.key()) != def->attrs.end() ||
                   (update == "sgd_update" && (it.key() == "momentum" || it.key() == "dampening" ||
                                               it.key() == "nesterov"));
      if (!known) {
        std::string accepted;
        for (const std::string& a : def->attrs) accepted += (accepted.empty() ? "" : ", ") + a;
        TrainError(t, "unknown-attribute", PointerJoin(opt_pointer, it.key()),
                   "the optimizer " + t.optimizer + " has no setting \"" + it.key() + "\"",
                   "settings: " + accepted);
        return;
      }
    }
    if (update == "sgd_update") {
      for (const char* k : {"momentum", "dampening", "nesterov"}) attrs.erase(k);
    }

    // Names the step adds must not collide with the document's.
    std::set<std::string> feed_names, output_names;
    for (const Node& n : g_.nodes)
      if (n.role == Role::kInput || n.role == Role::kParam) feed_names.insert(FeedNameOf(n));
    for (const Output& o : g_.outputs) output_names.insert(o.name);
    std::vector<std::string> added = {"step"};
    for (int p : params) {
      const std::string name = FeedNameOf(g_.at(p));
      if (adam) {
        added.push_back(name + ".m");
        added.push_back(name + ".v");
      } else if (momentum) {
        added.push_back(name + ".velocity");
      }
    }
    for (const std::string& name : added) {
      if (feed_names.count(name)) {
        TrainError(t, "train-name-conflict", "",
                   "the training step adds the input \"" + name +
                       "\", which the document already uses",
                   "rename that node");
        return;
      }
    }
    for (int p : params) added.push_back(FeedNameOf(g_.at(p)));
    for (const std::string& name : added) {
      if (output_names.count(name)) {
        TrainError(t, "train-name-conflict", "",
                   "the training step outputs \"" + name + "\", which the document already uses "
                   "as an output name",
                   "rename that output");
        return;
      }
    }

    int step = StateInput("step", MakeType({}), PointerJoin(t.pointer, "optimizer"), {1.0f});
    auto grads = Backward(g_, loss, params);
    if (!grads.ok()) {
      for (Diagnostic d : grads.errors()) {
        if (d.pointer.empty()) d.pointer = PointerJoin(t.pointer, "loss");
        errors_.push_back(std::move(d));
      }
      return;
    }

    bool loss_is_output = false;
    for (const Output& o : g_.outputs) loss_is_output |= o.node == loss;
    if (!loss_is_output && !output_names.count("loss")) g_.outputs.push_back({"loss", loss});

    for (size_t i = 0; i < params.size(); ++i) {
      const int p = params[i], gp = grads.value()[i];
      const std::string name = FeedNameOf(g_.at(p));
      const TensorType type = g_.at(p).type;
      std::vector<float> zeros(static_cast<size_t>(type.elements()), 0.0f);
      if (adam) {
        int m = StateInput(name + ".m", type, opt_pointer, zeros);
        int v = StateInput(name + ".v", type, opt_pointer, zeros);
        std::vector<int> args = {p, gp, m, v, step};
        int np = Update(t, "adam_update", args, attrs, name + ".new", Purpose::kForward);
        int nm = Update(t, "adam_m", args, attrs, name + ".m.new", Purpose::kOptimizerState);
        int nv = Update(t, "adam_v", args, attrs, name + ".v.new", Purpose::kOptimizerState);
        if (np < 0 || nm < 0 || nv < 0) return;
        g_.outputs.push_back({name, np});
        g_.outputs.push_back({name + ".m", nm});
        g_.outputs.push_back({name + ".v", nv});
      } else if (momentum) {
        int vel = StateInput(name + ".velocity", type, opt_pointer, zeros);
        std::vector<int> args = {p, gp, vel, step};
        int np = Update(t, "momentum_update", args, attrs, name + ".new", Purpose::kForward);
        int nv = Update(t, "momentum_velocity", args, attrs, name + ".velocity.new",
                        Purpose::kOptimizerState);
        if (np < 0 || nv < 0) return;
        g_.outputs.push_back({name, np});
        g_.outputs.push_back({name + ".velocity", nv});
      } else {
        int np = Update(t, "sgd_update", {p, gp}, attrs, name + ".new", Purpose::kForward);
        if (np < 0) return;
        g_.outputs.push_back({name, np});
      }
    }
    Node one;
    one.op = "full";
    one.role = Role::kConst;
    one.type = MakeType({});
    one.attrs["value"] = 1;
    one.origin = opt_pointer;
    one.purpose = Purpose::kOptimizerState;
    int next = Update(t, "add", {step, g_.Add(std::move(one))}, Json::object(), "step.new",
                      Purpose::kOptimizerState);
    if (next >= 0) g_.outputs.push_back({"step", next});
  }

  const block::Program& prog_;
  Graph g_;
  std::vector<int> node_of_;
  std::vector<Diagnostic> errors_;
};

}  // namespace

Result<Graph> FromBlock(const block::Program& p) {
  SCELLIS_TRY(block::Verify(p));
  auto g = Lowering(p).Run();
  if (g.ok()) SCELLIS_TRY(Verify(g.value()));
  return g;
}

}  // namespace scellis::webir
