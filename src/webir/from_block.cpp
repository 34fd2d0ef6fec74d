// Lowers BlockIR to WebIR: each op block becomes one node typed by its op's rule; the scalar form
// of binary ops (`{"a": 0, "scalar": 2}`) becomes a rank-0 constant operand so one broadcasting
// mechanism serves both.
#include <cmath>
#include <limits>
#include <set>

#include "webir/graph.h"
#include "webir/op_rules.h"
#include "webir/passes/append_train_step.h"

namespace scellis::webir {
namespace {

class Lowering {
 public:
  explicit Lowering(const block::Program& p) : prog_(p) {}

  Result<Graph> Run() {
    static_cast<RungHeader&>(g_) = prog_;
    g_.ops = prog_.ops;
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
    if (prog_.train && prog_.mode != block::LowerMode::kForward) {
      const block::TrainSpec& spec = *prog_.train;
      PendingTrainStep step{
          node_of_[spec.loss], {}, spec.param_optimizers, spec.pointer, prog_.mode};
      if (spec.mixed_precision) step.loss_scale = spec.mixed_precision->loss_scale;
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

  // Where a node names the producer of `port`: the port's key in a graph document; a workflow
  // wires ports by edges, so its block's own pointer.
  std::string PortPointer(const block::Block& b, const std::string& port) {
    return prog_.form == doc::Form::kGraph ? PointerJoin(b.pointer, port) : b.pointer;
  }

  // Entry `e` of a list port: its own place in a graph node, the block in a workflow (whose
  // wires carry the pointers one rung up).
  std::string EntryPointer(const block::Block& b, const std::string& port, size_t e) {
    return prog_.form == doc::Form::kGraph ? PointerJoin(PointerJoin(b.pointer, port), e)
                                           : b.pointer;
  }

  std::string ParamPointer(const block::Block& b, const std::string& key) {
    return prog_.form == doc::Form::kGraph ? PointerJoin(b.pointer, key)
                                           : PointerJoin(PointerJoin(b.pointer, "params"), key);
  }

  int LowerBlock(const block::Block& b) {
    // The update half of a data-parallel step holds the params and their updates only: the
    // forward graph ran in the gradient half.
    if (prog_.train && prog_.mode == block::LowerMode::kApplyGradients &&
        b.kind != block::BlockKind::kParam)
      return -1;
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
        // The gradient half of a data-parallel step keeps its params resident like the whole
        // step does: the trainer copies the updated weights into them on the device.
        if (prog_.train && prog_.mode == block::LowerMode::kForward) {
          // Evaluating a training workflow: the weights are fed by name.
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
    const ops::OpSpec* def = prog_.ops->Find(b.type);
    if (!def || def->kind == OpKind::kSource) {
      Error(b, "unknown-op", b.pointer, "the op \"" + b.type + "\" does not exist",
            "ops of version " + std::to_string(prog_.version) + ": " +
                prog_.ops->NamesUpTo(prog_.version));
      return -1;
    }
    const OpRule* rule = RuleOf(*def);
    if (!rule) {
      Error(b, "op-not-lowerable", b.pointer,
            "the op \"" + b.type + "\" is declared but this build has no type rule for it",
            "an op added to a session's table needs its rules before it can run");
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
    if (def->name == "dropout" && prog_.train && prog_.mode == block::LowerMode::kForward) {
      // Evaluating a training workflow, as PyTorch's eval mode: dropout passes its operand.
      for (const auto& [port, src] : b.inputs)
        if (port == "a") return node_of_[src];
    }

    // Attributes: what the op's table entry declares, of the declared types.
    Json attrs = b.params;
    attrs.erase("name");
    auto attr_errors = ops::CheckAttributes(
        *def, attrs, b.pointer, [&](const std::string& key) { return ParamPointer(b, key); },
        b.Describe());
    if (!attr_errors.empty()) {
      for (Diagnostic& d : attr_errors) errors_.push_back(std::move(d));
      return -1;
    }
    for (auto it = attrs.begin(); it != attrs.end(); ++it)
      if (it.key() != "scalar") n.attrs[it.key()] = *it;

    // Arguments by port name, in the op's order; a list port's entries in list order.
    std::map<std::string, std::vector<int>> ports;
    for (const auto& [port, src] : b.inputs) {
      if (!def->FindPort(port)) {
        Error(b, "unknown-port", b.pointer,
              "the op \"" + def->name + "\" has no input \"" + port + "\"");
        return -1;
      }
      if (node_of_[src] < 0) return -1;  // its producer already failed and was reported
      ports[port].push_back(node_of_[src]);
    }
    // Where each argument is written, so a rule can point at the offending list entry.
    std::vector<std::string> arg_pointers;
    for (const ops::Port& p : def->ports) {
      const std::string& port = p.name;
      auto it = ports.find(port);
      if (it != ports.end()) {
        for (size_t e = 0; e < it->second.size(); ++e) {
          const std::string at = p.list ? EntryPointer(b, port, e) : PortPointer(b, port);
          const std::string what = p.list
                                       ? "the entry " + std::to_string(e) + " of \"" + port + "\""
                                       : "the input \"" + port + "\"";
          DType dtype = g_.at(it->second[e]).type.dtype;
          if (std::find(p.dtypes.begin(), p.dtypes.end(), dtype) == p.dtypes.end()) {
            std::string takes;
            for (DType t : p.dtypes)
              takes += (takes.empty() ? "" : " or ") + std::string(DTypeName(t));
            Error(b, "dtype-mismatch", at,
                  what + " of \"" + def->name + "\" is " + DTypeName(dtype) + ", the op takes " +
                      takes,
                  IsBlockDType(dtype)
                      ? "k-quant blocks are read by matmul_q alone, which decodes them as it "
                        "multiplies"
                      : "convert it with cast{a, dtype}: no op mixes dtypes on its own");
            return -1;
          }
          n.args.push_back(it->second[e]);
          arg_pointers.push_back(at);
        }
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
        // The scalar takes the dtype of `a` where the port accepts it (a mask compared with 0
        // or 1), so a scalar never mixes dtypes; a bool holds only those two values.
        DType scalar_dtype = DType::kF32;
        if (!n.args.empty()) {
          const DType a_dtype = g_.at(n.args[0]).type.dtype;
          if (std::find(p.dtypes.begin(), p.dtypes.end(), a_dtype) != p.dtypes.end())
            scalar_dtype = a_dtype;
        }
        if (scalar_dtype == DType::kBool && s.get<double>() != 0 && s.get<double>() != 1) {
          Error(b, "bad-attribute", ParamPointer(b, "scalar"),
                "the scalar " + s.dump() + " is compared with a bool, which is 0 or 1",
                "compare with 0 or 1, or cast the mask to f32 first");
          return -1;
        }
        if (!FitsIntegerDType(s.get<double>(), scalar_dtype)) {
          Error(b, "bad-attribute", ParamPointer(b, "scalar"),
                "the scalar " + s.dump() + " meets an " + DTypeName(scalar_dtype) +
                    " operand, and is not an integer in its range " +
                    IntegerRangeText(scalar_dtype),
                "give an integer scalar, or cast the operand to f32 first");
          return -1;
        }
        Node c;
        c.op = "full";
        c.role = Role::kConst;
        c.type = MakeType({}, scalar_dtype);
        c.attrs["value"] = s;
        c.origin = ParamPointer(b, "scalar");
        arg_pointers.push_back(c.origin);
        n.args.push_back(g_.Add(std::move(c)));
        continue;
      }
      Error(b, "missing-input", b.pointer,
            "the op \"" + def->name + "\" needs its input \"" + port + "\"",
            port == "b" && def->FindAttr("scalar") ? "give \"b\" a node id, or \"scalar\" a number"
                                                   : "");
      return -1;
    }
    // Operand attributes follow the ports as rank-0 constants (see ops::Attr::as_operand); the
    // checker above has already held them to finite numbers, and f32 holds them. Beside an
    // integer first operand they are integers of its dtype, compared and stored as integers; one
    // left out is the dtype's extreme, which bounds nothing as an infinity does for f32.
    const DType operand_dtype = n.args.empty() ? DType::kF32 : g_.at(n.args[0]).type.dtype;
    const bool integer_operand = operand_dtype == DType::kI32 || operand_dtype == DType::kU32;
    for (const ops::Attr& a : def->attrs) {
      if (!a.as_operand) continue;
      auto it = b.params.find(a.name);
      const bool given = it != b.params.end() && !it->is_null();
      double value = given ? it->get<double>() : a.absent;
      if (given && std::fabs(value) > std::numeric_limits<float>::max()) {
        Error(b, "data-out-of-range", ParamPointer(b, a.name),
              "the value " + it->dump() + " does not fit in f32");
        return -1;
      }
      if (integer_operand && given && !FitsIntegerDType(value, operand_dtype)) {
        Error(b, "bad-attribute", ParamPointer(b, a.name),
              "\"" + a.name + "\" is " + it->dump() + " beside an " + DTypeName(operand_dtype) +
                  " operand, and is not an integer in its range " + IntegerRangeText(operand_dtype),
              "give an integer, or cast the operand to f32 first");
        return -1;
      }
      if (integer_operand && !given)
        value = value < 0 ? (operand_dtype == DType::kI32 ? -2147483648.0 : 0.0)
                          : (operand_dtype == DType::kI32 ? 2147483647.0 : 4294967295.0);
      Node c;
      c.op = "full";
      c.role = Role::kConst;
      c.type = MakeType({}, integer_operand ? operand_dtype : DType::kF32);
      c.attrs["value"] = value;
      c.origin = given ? ParamPointer(b, a.name) : b.pointer;
      arg_pointers.push_back(c.origin);
      n.args.push_back(g_.Add(std::move(c)));
      n.attrs.erase(a.name);
    }

    InferContext c;
    for (int a : n.args) c.args.push_back(g_.at(a).type);
    c.attrs = n.attrs;
    c.version = prog_.version;
    c.pointer = b.pointer;
    c.where = b.Describe();
    c.arg_pointers = arg_pointers;
    c.spec = def;
    auto type = InferChecked(n.op, *rule, c);
    if (!type.ok()) {
      for (const Diagnostic& d : type.errors()) errors_.push_back(d);
      return -1;
    }
    n.type = type.value();
    n.attrs = c.attrs;
    if (def->ListPort() && n.args.size() > kMaxListArgs) return AddListTree(b, std::move(n));
    if (n.op == "matmul" && n.type.dtype == DType::kF32 && prog_.train &&
        prog_.train->mixed_precision)
      return AddInF16(std::move(n));
    return g_.Add(std::move(n));
  }

  // Mixed precision: the product computes in f16 between casts and is cast back to f32 for what
  // follows, which stays f32 (the loss and the elementwise ops, as under torch.autocast). The f32
  // cast carries the block's name, so the graph's outputs and the printed plan still find it.
  int AddInF16(Node n) {
    for (int& a : n.args) a = AddCast(a, DType::kF16, n.origin, "");
    Node product = n;
    product.name = product.label = "";
    product.type.dtype = DType::kF16;
    return AddCast(g_.Add(std::move(product)), DType::kF32, n.origin, n.name, n.label);
  }

  int AddCast(int arg, DType to, const std::string& origin, const std::string& name,
              const std::string& label = "") {
    Node c;
    c.op = "cast";
    c.args = {arg};
    c.attrs["dtype"] = DTypeName(to);
    c.type = g_.at(arg).type;
    c.type.dtype = to;
    c.origin = origin;
    c.name = name;
    c.label = label;
    return g_.Add(std::move(c));
  }

  // A list op of more entries than one kernel binds (checked whole above, so every diagnostic
  // names its own entry) as a tree of the same op over runs of at most kMaxListArgs entries and
  // concats of their results along the output's axis: the same elements in the same order.
  // stack's runs are stacks, each giving a slab of the new axis.
  int AddListTree(const block::Block& b, Node n) {
    std::vector<int> level = n.args;
    std::string op = n.op;
    while (level.size() > kMaxListArgs) {
      std::vector<int> next;
      for (size_t first = 0; first < level.size(); first += kMaxListArgs) {
        const size_t last = std::min(level.size(), first + kMaxListArgs);
        Node part;
        part.op = op;
        part.args.assign(level.begin() + first, level.begin() + last);
        part.attrs = n.attrs;
        part.origin = n.origin;
        InferContext c;
        for (int a : part.args) c.args.push_back(g_.at(a).type);
        c.attrs = part.attrs;
        c.version = prog_.version;
        c.pointer = b.pointer;
        c.where = b.Describe();
        auto type = InferChecked(part.op, *FindRule(part.op), c);
        if (!type.ok()) {
          for (const Diagnostic& d : type.errors()) errors_.push_back(d);
          return -1;
        }
        part.type = type.value();
        part.attrs = c.attrs;
        next.push_back(g_.Add(std::move(part)));
      }
      level = std::move(next);
      op = "concat";  // the runs' results share the output's rank: joined along its axis
    }
    n.op = op;
    n.args = std::move(level);
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
  if (g.ok()) SCELLIS_TRY(CheckKnownIndices(g.value()));
  if (g.ok()) SCELLIS_TRY(CheckKnownFixedPoint(g.value()));
  return g;
}

}  // namespace scellis::webir
