// Lowers BlockIR to WebIR: each op block becomes one node typed by its op's rule; the scalar form
// of binary ops (`{"a": 0, "scalar": 2}`) becomes a rank-0 constant operand so one broadcasting
// mechanism serves both.
#include <set>

#include "webir/graph.h"
#include "webir/op_rules.h"
#include "webir/passes/append_train_step.h"
#include "webir/type_node.h"

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
        if (GathersFromDeviceDataset(b)) return AddDatasetGather(std::move(n));
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

  // The images or labels input of a training step whose dataset is held on the device.
  bool GathersFromDeviceDataset(const block::Block& b) const {
    if (!prog_.train || prog_.mode != block::LowerMode::kTrainStep ||
        prog_.dataset_examples_on_device <= 0)
      return false;
    const block::TrainSpec& spec = *prog_.train;
    return (spec.images >= 0 && &b == &prog_.blocks[spec.images]) ||
           (spec.labels >= 0 && &b == &prog_.blocks[spec.labels]);
  }

  // The input as the rows of its dataset table that the step's batch indices name: the table a
  // param of the whole split (set once, by a feed, never updated), the indices the fed i32 input
  // kBatchIndexInput shared by the images and the labels. index_select moves elements as bits,
  // so the step reads the values the trainer would have fed.
  int AddDatasetGather(Node input) {
    if (input.type.rank() < 1) return g_.Add(std::move(input));  // the trainer refuses it
    Node table = input;
    table.op = "param";
    table.role = Role::kParam;
    table.purpose = Purpose::kDataset;
    table.data.reset();
    table.name = table.label = DatasetTableName(input.label.empty() ? input.name : input.label);
    table.type.dims[0] = Dim{prog_.dataset_examples_on_device, ""};
    const int table_id = g_.Add(std::move(table));
    if (batch_index_ < 0) {
      Node index;
      index.op = "input";
      index.role = Role::kInput;
      index.type.dims = {input.type.dims[0]};
      index.type.dtype = DType::kI32;
      index.name = index.label = kBatchIndexInput;
      index.origin = prog_.train->pointer;
      batch_index_ = g_.Add(std::move(index));
    }
    Node gather = std::move(input);
    gather.op = "index_select";
    gather.role = Role::kCompute;
    gather.data.reset();
    gather.args = {table_id, batch_index_};
    gather.attrs["axis"] = 0;
    return g_.Add(std::move(gather));
  }

  // The op node typed by TypeOpNode (the checks and rules a front end adding one node meets
  // too); its constant arguments become `full` nodes.
  int LowerOp(const block::Block& b, Node n) {
    OpNode node;
    node.op = b.type;
    node.params = b.params;
    node.pointer = b.pointer;
    node.where = b.Describe();
    node.form = prog_.form;
    for (const auto& [port, src] : b.inputs) {
      if (node_of_[src] < 0) return -1;  // its producer already failed and was reported
      node.inputs.push_back({port, g_.at(node_of_[src]).type});
    }
    auto typed = TypeOpNode(*prog_.ops, node, prog_.version);
    if (!typed.ok()) {
      for (const Diagnostic& d : typed.errors()) errors_.push_back(d);
      return -1;
    }
    n.op = typed->spec->name;
    if (n.op == "dropout" && prog_.train && prog_.mode == block::LowerMode::kForward) {
      // Evaluating a training workflow, as PyTorch's eval mode: dropout passes its operand.
      for (const auto& [port, src] : b.inputs)
        if (port == "a") return node_of_[src];
    }
    for (const TypedArg& a : typed->args) {
      if (a.input >= 0) {
        n.args.push_back(node_of_[b.inputs[a.input].second]);
        continue;
      }
      Node c;
      c.op = "full";
      c.role = Role::kConst;
      c.type = a.type;
      c.attrs["value"] = a.value;
      c.origin = a.pointer;
      n.args.push_back(g_.Add(std::move(c)));
    }
    n.type = typed->type;
    n.attrs = typed->attrs;
    if (typed->spec->ListPort() && n.args.size() > kMaxListArgs)
      return AddListTree(b, std::move(n));
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
  int batch_index_ = -1;  // the fed batch indices, when the dataset is held on the device
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
