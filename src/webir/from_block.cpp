// Lowers BlockIR to WebIR: each op block becomes one node typed by its op's rule; the scalar form
// of binary ops (`{"a": 0, "scalar": 2}`) becomes a rank-0 constant operand so one broadcasting
// mechanism serves both.
#include <cmath>
#include <limits>
#include <set>

#include "webir/graph.h"
#include "webir/op_registry.h"

namespace scellis::webir {
namespace {

class Lowering {
 public:
  explicit Lowering(const block::Program& p) : prog_(p) {}

  Result<Graph> Run() {
    static_cast<RungHeader&>(g_) = prog_;
    for (const block::Block& b : prog_.blocks) {
      int id = LowerBlock(b);
      node_of_.push_back(id);
    }
    for (const block::Output& o : prog_.outputs) {
      if (node_of_[o.block] >= 0) g_.outputs.push_back({o.name, node_of_[o.block]});
    }
    for (const block::Carry& c : prog_.carries) {
      int from = node_of_[prog_.outputs[c.from_output].block], to = node_of_[c.to_block];
      if (from < 0 || to < 0) continue;
      const block::Block& b = prog_.blocks[c.to_block];
      if (!g_.at(from).type.SameShape(g_.at(to).type)) {
        Error(b, "carry-shape-mismatch", b.pointer,
              "the input " + g_.at(to).type.ShapeStringWithSizes() + " carries the output \"" +
                  prog_.outputs[c.from_output].name + "\" of shape " +
                  g_.at(from).type.ShapeStringWithSizes());
        continue;
      }
      g_.carries.push_back({from, to});
    }
    if (prog_.train && prog_.mode == block::LowerMode::kTrainStep) {
      const block::TrainSpec& spec = *prog_.train;
      PendingTrainStep step{node_of_[spec.loss], {}, spec.optimizer, spec.pointer};
      for (int b : spec.params) step.params.push_back(node_of_[b]);
      g_.train = std::move(step);
    }
    if (!errors_.empty()) return Status(errors_);
    return std::move(g_);
  }

 private:
  void Error(const block::Block& b, std::string code, std::string pointer, std::string message,
             std::string help = "") {
    Diagnostic d =
        UserError(std::move(code), std::move(pointer), std::move(message), std::move(help));
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
        if (prog_.train && prog_.mode == block::LowerMode::kForward) {
          // Evaluating a training workflow: the trained weights are fed by name.
          n.op = "input";
          n.role = Role::kInput;
          n.type = b.tensor_type;
          return g_.Add(std::move(n));
        }
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
      case block::BlockKind::kDataset:
        return -1;  // host side: the training loop feeds its batches into input blocks
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
        if (std::fabs(s.get<double>()) > std::numeric_limits<float>::max()) {
          Error(b, "data-out-of-range", ParamPointer(b, "scalar"),
                "the scalar " + s.dump() + " does not fit in f32");
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
