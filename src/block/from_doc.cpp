// Lowers a document to BlockIR: resolves the determinism tier, binds symbolic dims, types the
// source blocks and checks their data. Op blocks keep their attributes for WebIR to interpret.
#include <cmath>
#include <limits>

#include "block/program.h"
#include "doc/keys.h"

namespace scellis::block {
namespace {

const std::vector<std::string> kTrainFields = {"loss",      "eval_output",  "data",
                                               "optimizer", "batch",        "eval_batch",
                                               "epochs",    "shuffle_seed", "mixed_precision"};
const std::vector<std::string> kMixedPrecisionFields = {"compute", "loss_scale"};
// The largest loss scale: 2^24 keeps a scaled f32 loss of a few units far from f32's range, and
// larger scales overflow f16 gradients of ordinary size.
constexpr double kMaxLossScale = 16777216.0;
const std::vector<std::string> kTrainDataFields = {"dataset", "images", "labels"};
const std::vector<std::string> kOptimizerFields = {
    "kind",     "lr",    "weight_decay", "momentum", "dampening", "nesterov",
    "maximize", "beta1", "beta2",        "eps",      "groups"};
const std::vector<std::string> kOptimizerGroupFields = {
    "params",   "lr",       "weight_decay", "momentum", "dampening",
    "nesterov", "maximize", "beta1",        "beta2",    "eps"};
const std::vector<std::string> kUniformFields = {"kind", "seed", "low", "high"};
const std::vector<std::string> kKaimingFields = {"kind", "seed", "fan_in"};
const std::vector<std::string> kConstantInitFields = {"kind"};
constexpr const char* kDatasetHelp =
    "a dataset feeds input blocks through the train section's \"data\" "
    "({\"dataset\": ..., \"images\": ..., \"labels\": ...}); wire those inputs instead";
constexpr int64_t kMaxBatch = int64_t{1} << 24;
// Names a training run gives its own values (webir's step input and loss output).
constexpr const char* kStepName = "step";
constexpr const char* kLossName = "loss";
constexpr const char* kTrainNamesHelp =
    "in a training workflow a name means one block: the train section names blocks by id, and "
    "labels and output names may not name another block (\"loss\" is the train loss's)";

class Lowering {
 public:
  Lowering(const doc::Document& d, const LowerOptions& o) : doc_(d), options_(o) {}

  Result<Program> Run() {
    prog_.name = doc_.name;
    // A document that defines ops brings the table it was read against, those ops added.
    prog_.ops = doc_.ops ? doc_.ops : options_.ops;
    prog_.form = doc_.form;
    prog_.version = doc_.version;
    prog_.budget_bytes = doc_.budget_bytes;
    prog_.dims = doc_.dims;
    for (const auto& [k, v] : options_.bind) prog_.dims[k] = v;
    ResolveTolerance();
    prog_.bit_exact_across_devices = doc_.bit_exact_across_devices;

    for (const doc::Node& n : doc_.nodes) LowerNode(n);
    for (const doc::Output& o : doc_.outputs) {
      prog_.outputs.push_back({o.name, index_.at(o.source)});
      const Block& source = prog_.blocks[prog_.outputs.back().block];
      if (source.kind == BlockKind::kDataset) {
        errors_.push_back(UserError("dataset-as-value", o.pointer,
                                    "the output \"" + o.name + "\" is the dataset " +
                                        source.Describe() + ", but a dataset is no tensor",
                                    kDatasetHelp));
      }
      if (source.kind == BlockKind::kInput && IsBlockDType(source.tensor_type.dtype)) {
        errors_.push_back(UserError("bad-dtype", o.pointer,
                                    "the output \"" + o.name + "\" is the " +
                                        DTypeName(source.tensor_type.dtype) + " blocks " +
                                        source.Describe() + ", which only matmul_q reads",
                                    "output the product, or keep the blocks where they came from"));
      }
    }
    ResolveCarries();
    ResolveRepeat();
    ResolveTrain();
    prog_.mode = options_.mode;
    prog_.dataset_examples_on_device = options_.dataset_examples_on_device;
    ResolveTier();
    if (!errors_.empty()) return Status(errors_);
    return std::move(prog_);
  }

 private:
  void Error(std::string code, std::string pointer, std::string message, const doc::Node& n,
             std::string help = "") {
    Diagnostic d =
        UserError(std::move(code), std::move(pointer), std::move(message), std::move(help));
    d.where = n.Describe();
    errors_.push_back(std::move(d));
  }

  void TrainError(std::string code, std::string pointer, std::string message,
                  std::string help = "") {
    errors_.push_back(
        UserError(std::move(code), std::move(pointer), std::move(message), std::move(help)));
  }

  // A block named by id in the train section; -1 (with a diagnostic) when absent or not a block
  // of kind `want`.
  int BlockRef(const Json& t, const char* key, const std::string& pointer,
               std::optional<BlockKind> want, const char* want_text, bool required = true) {
    auto it = t.find(key);
    if (it == t.end()) {
      if (required) {
        TrainError("missing-field", pointer,
                   std::string("the train section needs \"") + key + "\", the id of " + want_text);
      }
      return -1;
    }
    auto found = it->is_string() ? index_.find(it->get<std::string>()) : index_.end();
    if (found == index_.end()) {
      TrainError("dangling-reference", PointerJoin(pointer, key),
                 std::string("\"") + key + "\" is " + it->dump() + ", not a node id",
                 kTrainNamesHelp);
      return -1;
    }
    if (want && prog_.blocks[found->second].kind != *want) {
      TrainError("bad-train-section", PointerJoin(pointer, key),
                 std::string("\"") + key + "\" names " + prog_.blocks[found->second].Describe() +
                     ", expected " + want_text);
      return -1;
    }
    return found->second;
  }

  // An integer setting of the train section in [lo, hi].
  int64_t TrainInteger(const Json& t, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
    auto it = t.find(key);
    if (it == t.end()) return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi ||
        (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi))) {
      TrainError("bad-train-section", PointerJoin("/train", key),
                 std::string("\"") + key + "\" is " + it->dump() + ", expected an integer in [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return fallback;
    }
    return it->get<int64_t>();
  }

  void ResolveTrain() {
    if (doc_.train.is_null()) return;
    const Json& t = doc_.train;
    doc::CheckKeys(t, "/train", kTrainFields, "the train section", errors_);
    TrainSpec spec;
    spec.loss = BlockRef(t, "loss", "/train", BlockKind::kOp, "the block computing the loss");
    // Without "data" the section describes one step for `scellis run` to take with fed batches;
    // with it, `scellis train` reads the dataset and scores the eval output after every epoch.
    auto d = t.find("data");
    if (d != t.end() && !d->is_object()) {
      TrainError("bad-field-type", "/train/data",
                 "\"data\" is " + d->dump() +
                     ", expected {\"dataset\": ..., \"images\": ..., \"labels\": ...}, each a "
                     "node id");
    } else if (d != t.end()) {
      doc::CheckKeys(*d, "/train/data", kTrainDataFields, "the train data", errors_);
      spec.dataset = BlockRef(*d, "dataset", "/train/data", BlockKind::kDataset, "a dataset block");
      spec.images = BlockRef(*d, "images", "/train/data", BlockKind::kInput, "an input block");
      spec.labels = BlockRef(*d, "labels", "/train/data", BlockKind::kInput, "an input block");
    }
    spec.eval_output = BlockRef(t, "eval_output", "/train", BlockKind::kOp,
                                "the block whose output is scored (the logits)", d != t.end());
    spec.batch = TrainInteger(t, "batch", 64, 1, kMaxBatch);
    spec.eval_batch = TrainInteger(t, "eval_batch", 1000, 1, kMaxBatch);
    spec.epochs = static_cast<int>(TrainInteger(t, "epochs", 1, 1, 100000));
    spec.shuffle_seed =
        static_cast<uint64_t>(TrainInteger(t, "shuffle_seed", 0, 0, int64_t{1} << 53));
    for (size_t i = 0; i < prog_.blocks.size(); ++i)
      if (prog_.blocks[i].kind == BlockKind::kParam) spec.params.push_back(static_cast<int>(i));
    ResolveOptimizer(t, spec);
    ResolveMixedPrecision(t, spec);
    if (spec.params.empty())
      TrainError("bad-train-section", "/train", "the workflow has no param block to train");
    CheckLoss(spec);
    CheckTrainData(spec);
    CheckTrainNames(spec);
    prog_.train = spec;
  }

  // "mixed_precision": {"compute": "f16", "loss_scale": 2^k}: both declared, nothing defaulted.
  void ResolveMixedPrecision(const Json& t, TrainSpec& spec) {
    auto it = t.find("mixed_precision");
    if (it == t.end()) return;
    const std::string pointer = "/train/mixed_precision";
    const char* want =
        "expected {\"compute\": \"f16\", \"loss_scale\": S} with S a power of two in [1, 2^24]";
    if (!it->is_object()) {
      TrainError("bad-mixed-precision", pointer,
                 "\"mixed_precision\" is " + it->dump() + ", " + want);
      return;
    }
    doc::CheckKeys(*it, pointer, kMixedPrecisionFields, "mixed precision", errors_);
    auto compute = it->find("compute");
    if (compute == it->end() || *compute != "f16") {
      TrainError("bad-mixed-precision", PointerJoin(pointer, "compute"),
                 "mixed precision computes in " +
                     (compute == it->end() ? std::string("nothing") : compute->dump()) + ", " +
                     want,
                 "f16 is the one compute dtype of mixed precision");
      return;
    }
    auto scale = it->find("loss_scale");
    int exponent = 0;
    const bool power_of_two = scale != it->end() && scale->is_number() &&
                              std::frexp(scale->get<double>(), &exponent) == 0.5 &&
                              scale->get<double>() >= 1 && scale->get<double>() <= kMaxLossScale;
    if (!power_of_two) {
      TrainError("bad-mixed-precision", PointerJoin(pointer, "loss_scale"),
                 "the loss scale is " +
                     (scale == it->end() ? std::string("missing") : scale->dump()) + ", " + want,
                 "a power of two divides out of every gradient exactly; 1024 suits most models");
      return;
    }
    spec.mixed_precision = TrainSpec::MixedPrecision{scale->get<double>()};
  }

  // The optimizer and its hyper-parameters, as PyTorch's torch.optim.SGD / Adam / AdamW accept
  // them, within the ranges the update kernels (f32) can honour. "groups" are PyTorch's parameter
  // groups: each names its param blocks and overrides settings of the optimizer for them.
  void ResolveOptimizer(const Json& t, TrainSpec& spec) {
    const std::string pointer = "/train/optimizer";
    OptimizerSpec& o = spec.optimizer;
    auto opt = t.find("optimizer");
    if (opt == t.end() || !opt->is_object() || !opt->contains("kind") ||
        !(*opt)["kind"].is_string()) {
      TrainError(opt == t.end() ? "missing-field" : "bad-optimizer",
                 opt == t.end() ? "/train" : pointer,
                 "the train section needs \"optimizer\": {\"kind\": \"adam\" | \"adamw\" | "
                 "\"sgd\", ...}");
      return;
    }
    o.kind = (*opt)["kind"].get<std::string>();
    if (o.kind != "sgd" && o.kind != "adam" && o.kind != "adamw") {
      TrainError("bad-optimizer", PointerJoin(pointer, "kind"),
                 "the optimizer is \"" + o.kind + "\", expected sgd, adam or adamw");
      return;
    }
    if (o.kind == "adamw") o.weight_decay = 1e-2;  // PyTorch's AdamW default
    doc::CheckKeys(*opt, pointer, kOptimizerFields, "an optimizer", errors_);
    ApplyOptimizerSettings(*opt, pointer, o);
    spec.param_optimizers.assign(spec.params.size(), o);
    auto groups = opt->find("groups");
    if (groups == opt->end()) return;
    const std::string groups_pointer = PointerJoin(pointer, "groups");
    if (!groups->is_array()) {
      TrainError("bad-optimizer", groups_pointer,
                 "\"groups\" is " + groups->dump() +
                     ", expected a list of {\"params\": [param ids], settings...}");
      return;
    }
    std::map<int, std::string> grouped;  // param block -> the pointer of the group naming it
    for (size_t g = 0; g < groups->size(); ++g) {
      const Json& group = (*groups)[g];
      const std::string at = PointerJoin(groups_pointer, std::to_string(g));
      if (!group.is_object() || !group.contains("params") || !group["params"].is_array()) {
        TrainError(
            "bad-optimizer", at,
            "a parameter group is {\"params\": [param ids], settings...}, not " + group.dump());
        continue;
      }
      doc::CheckKeys(group, at, kOptimizerGroupFields, "a parameter group", errors_);
      OptimizerSpec settings = o;
      ApplyOptimizerSettings(group, at, settings);
      const Json& names = group["params"];
      for (size_t k = 0; k < names.size(); ++k) {
        const std::string name_at = PointerJoin(PointerJoin(at, "params"), std::to_string(k));
        auto found = names[k].is_string() ? index_.find(names[k].get<std::string>()) : index_.end();
        if (found == index_.end() || prog_.blocks[found->second].kind != BlockKind::kParam) {
          TrainError("bad-optimizer", name_at, names[k].dump() + " is not the id of a param block");
          continue;
        }
        auto [previous, fresh] = grouped.emplace(found->second, at);
        if (!fresh) {
          TrainError("bad-optimizer", name_at,
                     prog_.blocks[found->second].Describe() + " is already in the group at " +
                         previous->second,
                     "each param belongs to at most one group, as in torch.optim");
          continue;
        }
        for (size_t i = 0; i < spec.params.size(); ++i)
          if (spec.params[i] == found->second) spec.param_optimizers[i] = settings;
      }
    }
  }

  // Reads the settings of `settings_json` (an optimizer or one of its groups) into `o`.
  void ApplyOptimizerSettings(const Json& settings_json, const std::string& pointer,
                              OptimizerSpec& o) {
    // Each setting and the field it fills; its accepted values are the update op's attribute
    // range in the op table (momentum_update for SGD, adam_update for Adam and AdamW), so the
    // train section accepts exactly what the update kernels accept.
    struct Setting {
      const char* key;
      double* field;
    };
    const Setting settings[] = {
        {"lr", &o.lr},
        {"weight_decay", &o.weight_decay},
        {"momentum", &o.momentum},
        {"dampening", &o.dampening},
        {"beta1", &o.beta1},
        {"beta2", &o.beta2},
        {"eps", &o.eps},
    };
    const bool sgd = o.kind == "sgd";
    const ops::OpSpec* update = prog_.ops->Find(sgd ? "momentum_update" : "adam_update");
    for (auto it = settings_json.begin(); it != settings_json.end(); ++it) {
      const std::string& k = it.key();
      const std::string at = PointerJoin(pointer, k);
      if (k == "kind" || k == "groups" || k == "params") continue;
      if (k == "nesterov" || k == "maximize") {
        if (k == "nesterov" && !sgd) {
          TrainError("bad-optimizer", at,
                     "the " + o.kind + " optimizer has no setting \"" + k + "\"");
        } else if (!it->is_boolean()) {
          TrainError("bad-optimizer", at,
                     "\"" + k + "\" is " + it->dump() + ", expected true or false");
        } else {
          (k == "nesterov" ? o.nesterov : o.maximize) = it->get<bool>();
        }
        continue;
      }
      const Setting* s = nullptr;
      for (const Setting& candidate : settings)
        if (k == candidate.key) s = &candidate;
      if (!s) continue;  // reported as an unknown field
      const ops::Attr* attr = update ? update->FindAttr(k) : nullptr;
      if (!attr || !attr->range) {
        TrainError("bad-optimizer", at,
                   "the " + o.kind + " optimizer has no setting \"" + k + "\"");
        continue;
      }
      const double v = it->is_number() ? it->get<double>() : std::nan("");
      if (!it->is_number() || !attr->range->Contains(v)) {
        TrainError("bad-optimizer", at,
                   "the " + o.kind + " setting \"" + k + "\" is " + it->dump() +
                       ", expected a number in " + attr->range->Text());
        continue;
      }
      *s->field = v;
    }
    if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) {
      TrainError("bad-optimizer", PointerJoin(pointer, "nesterov"),
                 "Nesterov momentum needs a momentum above 0 and no dampening");
    }
  }

  // With a dataset, the loss is a loss op (cross_entropy): it reduces its rows to one scalar, and
  // its labels port is fed by the labels input; the eval output is the operand it scores, so it
  // has the labels' batch rows and one column per class. Without one (batches fed by the caller,
  // as a captured PyTorch step feeds them) any differentiable scalar is a loss: a mean squared
  // error written with sub, mul and mean, say; autodiff refuses one that is not a scalar.
  void CheckLoss(const TrainSpec& spec) {
    if (spec.loss < 0 || spec.dataset < 0) return;
    const Block& loss = prog_.blocks[spec.loss];
    const ops::OpSpec* op = prog_.ops->Find(loss.type);
    bool is_loss = op && op->kind == ops::OpKind::kLoss;
    const ops::Port* labels_port = nullptr;
    const ops::Port* scored_port = nullptr;
    for (size_t i = 0; op && i < op->ports.size(); ++i) {
      const ops::Port& p = op->ports[i];
      if (p.role == ops::PortRole::kGradient) is_loss = false;  // a loss's gradient, not a loss
      if (p.role == ops::PortRole::kLabels) labels_port = &p;
      if (p.role == ops::PortRole::kOperand && !scored_port) scored_port = &p;
    }
    if (!is_loss || !labels_port || !scored_port) {
      TrainError("bad-train-section", "/train/loss",
                 "\"loss\" names " + loss.Describe() + ", which is not a loss op",
                 "the loss is a scalar made by a loss op such as cross_entropy");
      return;
    }
    auto source_of = [&](const std::string& port) {
      for (const auto& [name, src] : loss.inputs)
        if (name == port) return src;
      return -1;
    };
    if (spec.labels >= 0 && source_of(labels_port->name) != spec.labels) {
      TrainError("bad-train-section", "/train/data/labels",
                 "the labels input " + prog_.blocks[spec.labels].Describe() + " is not wired to " +
                     loss.id + "." + labels_port->name + ", so the loss does not score it");
    }
    if (spec.eval_output >= 0 && source_of(scored_port->name) != spec.eval_output) {
      const int scored = source_of(scored_port->name);
      TrainError("bad-train-section", "/train/eval_output",
                 "the eval output " + prog_.blocks[spec.eval_output].Describe() +
                     " is not what the loss scores" +
                     (scored >= 0 ? " (" + prog_.blocks[scored].id + ")" : ""),
                 "accuracy is measured on the loss's operand " + loss.id + "." + scored_port->name +
                     ": its rows are the batch, its columns the classes");
    }
  }

  // The trainer feeds images as [batch, features] and labels as [batch] f32, binding the images'
  // first dimension to the batch size (or the eval batch).
  void CheckTrainData(const TrainSpec& spec) {
    if (spec.images < 0 || spec.labels < 0) return;
    const Block& images = prog_.blocks[spec.images];
    const Block& labels = prog_.blocks[spec.labels];
    if (spec.images == spec.labels) {
      TrainError("bad-train-section", "/train/data/labels",
                 "the images and labels are the same input " + images.Describe());
      return;
    }
    auto check_fed = [&](const Block& b, const char* key, int rank, const char* shape) {
      std::string pointer = PointerJoin("/train/data", key);
      if (b.tensor_type.rank() != rank) {
        TrainError("bad-train-section", pointer,
                   "the " + std::string(key) + " block " + b.Describe() + " has shape " +
                       b.tensor_type.ShapeStringWithSizes() + ", expected " + shape);
        return false;
      }
      if (b.tensor_type.dtype != DType::kF32 || b.data) {
        TrainError("bad-train-section", pointer,
                   "the " + std::string(key) + " block " + b.Describe() +
                       " must be an f32 input without inline data: the dataset feeds it");
        return false;
      }
      return true;
    };
    bool ok = check_fed(images, "images", 2, "[batch, features]");
    ok = check_fed(labels, "labels", 1, "[batch]") && ok;
    if (!ok) return;
    const Dim& batch = images.tensor_type.dims[0];
    const Dim& label_batch = labels.tensor_type.dims[0];
    if (batch.symbol != label_batch.symbol ||
        (batch.symbol.empty() && batch.size != label_batch.size)) {
      TrainError("bad-train-section", "/train/data/labels",
                 "the labels' first dimension differs from the images' (" +
                     images.tensor_type.ShapeStringWithSizes() + " and " +
                     labels.tensor_type.ShapeStringWithSizes() + ")",
                 "both start with the batch dimension, e.g. \"B\"");
    } else if (batch.symbol.empty() &&
               (batch.size != spec.batch || batch.size != spec.eval_batch)) {
      TrainError("bad-train-section", "/train/data/images",
                 "the images' batch dimension is fixed at " + std::to_string(batch.size) +
                     " but batch is " + std::to_string(spec.batch) + " and eval_batch " +
                     std::to_string(spec.eval_batch),
                 "make it symbolic (\"shape\": [\"B\", ...]): training binds it to each");
    }
  }

  // A training step's own step number: an input block labelled "step" that is a scalar f32
  // without data and not carried. The forward may read it (the step port of dropout and
  // uniform, for a fresh mask every step); training feeds it, 1-based, as it feeds the
  // optimizer's.
  bool IsStepInput(int block) const {
    const Block& b = prog_.blocks[block];
    if (b.kind != BlockKind::kInput || b.label != kStepName || b.data ||
        b.tensor_type.rank() != 0 || b.tensor_type.dtype != DType::kF32)
      return false;
    for (const Carry& c : prog_.carries)
      if (c.to_block == block) return false;
    return true;
  }

  // One namespace rule for a training workflow: a name means one block. The train section names
  // blocks by id; training feeds inputs and params by their label (else id), reads outputs by
  // name, reads the eval output by its id, and reserves "loss" (the train loss) and "step" (the
  // step number, which one scalar input may take: IsStepInput).
  void CheckTrainNames(const TrainSpec& spec) {
    std::map<std::string, int> meaning;
    for (size_t i = 0; i < prog_.blocks.size(); ++i)
      meaning[prog_.blocks[i].id] = static_cast<int>(i);
    auto claim = [&](const std::string& name, int block, const std::string& pointer,
                     const std::string& what) {
      const bool step_input = name == kStepName && IsStepInput(block);
      if (name.find('@') != std::string::npos || (name == kStepName && !step_input)) {
        TrainError(
            "ambiguous-name", pointer,
            what + " \"" + name + "\" is a name training keeps for itself",
            "training names the step input \"step\" (a scalar f32 input without data or carry "
            "may take it: the step number, fed by training) and optimizer state "
            "\"<param>@...\"");
        return;
      }
      auto [it, inserted] = meaning.emplace(name, block);
      if (inserted || it->second == block) return;
      TrainError("ambiguous-name", pointer,
                 what + " \"" + name + "\" also names " + prog_.blocks[it->second].Describe() +
                     (name == kLossName ? ", the train loss" : ""),
                 kTrainNamesHelp);
    };
    if (spec.loss >= 0) {
      // The loss is watched as "loss": that name is the loss block's, whatever its id.
      auto it = meaning.find(kLossName);
      if (it != meaning.end() && it->second != spec.loss) {
        TrainError("ambiguous-name", prog_.blocks[it->second].pointer,
                   "the block \"loss\" is not the train loss " + prog_.blocks[spec.loss].Describe(),
                   kTrainNamesHelp);
      }
      meaning[kLossName] = spec.loss;
    }
    for (size_t i = 0; i < prog_.blocks.size(); ++i) {
      const Block& b = prog_.blocks[i];
      if ((b.kind == BlockKind::kInput || b.kind == BlockKind::kParam) && !b.label.empty())
        claim(b.label, static_cast<int>(i), b.pointer, "the label");
    }
    for (size_t i = 0; i < prog_.outputs.size(); ++i)
      claim(prog_.outputs[i].name, prog_.outputs[i].block, doc_.outputs[i].pointer, "the output");
    if (spec.eval_output >= 0) {
      const std::string& id = prog_.blocks[spec.eval_output].id;
      bool exported = false;
      for (const Output& o : prog_.outputs) exported |= o.name == id && o.block == spec.eval_output;
      if (!exported) {
        TrainError("bad-train-section", "/train/eval_output",
                   "the eval output \"" + id + "\" is not one of the outputs",
                   "add {\"name\": \"" + id + "\", \"from\": \"" + id +
                       "\"} to \"outputs\": evaluation reads it by its id");
      }
    }
  }

  // Sources the trainer knows: "fashion-mnist", or "idx:<images>,<labels>" (two IDX files).
  void CheckDatasetSource(const doc::Node& n) {
    const Json* source = FindParam(n, "source");
    const std::string pointer = ParamPointer(n, "source");
    if (!source) {
      Error("missing-field", pointer,
            "a dataset block names its \"source\", e.g. \"fashion-mnist\"", n);
      return;
    }
    const std::string text = source->is_string() ? source->get<std::string>() : "";
    if (text == "fashion-mnist") return;
    if (text.rfind("idx:", 0) == 0) {
      const size_t comma = text.find(',', 4);
      if (comma == std::string::npos || comma == 4 || comma + 1 == text.size()) {
        Error("bad-dataset-source", pointer,
              "the source is " + source->dump() + ", an idx source is \"idx:<images>,<labels>\"",
              n);
      }
      return;
    }
    Error("unknown-dataset", pointer, "the dataset source " + source->dump() + " is not known", n,
          "sources: fashion-mnist, idx:<images>,<labels>");
  }

  // `"carry": "w1_next"` on an input: after each session step it takes that output's value.
  void ResolveCarries() {
    for (const doc::Node& n : doc_.nodes) {
      const Json* carry = FindParam(n, "carry");
      if (!carry) continue;
      std::string pointer = ParamPointer(n, "carry");
      if ((n.op != "input" && n.op != "param") || !carry->is_string()) {
        Error("bad-carry", pointer, "\"carry\" belongs on an input or param and names an output",
              n);
        continue;
      }
      int out = -1;
      for (size_t i = 0; i < prog_.outputs.size(); ++i)
        if (prog_.outputs[i].name == carry->get<std::string>()) out = static_cast<int>(i);
      if (out < 0) {
        Error("dangling-reference", pointer,
              "the carry names the output \"" + carry->get<std::string>() +
                  "\", which does not exist",
              n);
        continue;
      }
      prog_.carries.push_back({out, index_.at(n.id)});
    }
  }

  // The document's `repeat`, a count or a bound dim; a loop without carried state would only
  // compute the same outputs again.
  void ResolveRepeat() {
    const Json& r = doc_.repeat;
    if (r.is_null()) return;
    if (r.is_string()) {
      auto dim = prog_.dims.find(r.get<std::string>());
      if (dim == prog_.dims.end() || dim->second < 1 || dim->second > doc::kMaxRepeat) {
        errors_.push_back(
            UserError("bad-repeat", "/repeat",
                      "\"repeat\" names the dim " + r.dump() +
                          (dim == prog_.dims.end() ? ", which is not bound"
                                                   : ", bound to " + std::to_string(dim->second)),
                      "bind it in \"dims\" (or with --bind) to an integer from 1 to " +
                          std::to_string(doc::kMaxRepeat)));
        return;
      }
      prog_.repeat = dim->second;
    } else {
      prog_.repeat = r.get<int64_t>();
    }
    if (prog_.repeat > 1 && !doc_.train.is_null()) {
      errors_.push_back(UserError("repeat-in-training", "/repeat",
                                  "a training workflow's steps are its trainer's loop; "
                                  "\"repeat\" is for graphs that carry their own state",
                                  "remove \"repeat\", or \"train\""));
    } else if (prog_.repeat > 1 && prog_.carries.empty()) {
      errors_.push_back(UserError("repeat-without-carry", "/repeat",
                                  "\"repeat\" runs the graph " + std::to_string(prog_.repeat) +
                                      " times, but no input carries an output between iterations",
                                  "give the loop state's input a \"carry\" naming the output "
                                  "that replaces it"));
    }
  }

  // Strictest wins, as for tiers: a node that needs `exact` makes the run exact.
  void ResolveTolerance() {
    std::optional<policy::ToleranceClass> t = doc_.tolerance;
    for (const doc::Node& n : doc_.nodes)
      if (n.tolerance && (!t || *n.tolerance < *t)) t = n.tolerance;
    prog_.tolerance = t.value_or(policy::ToleranceClass::kDefault);
  }

  void ResolveTier() {
    std::vector<policy::TierDeclaration> declared;
    std::optional<policy::TierDeclaration> override_tier;
    if (doc_.tier) {
      policy::TierDeclaration decl{*doc_.tier, "the document", doc_.tier_pointer};
      if (doc_.tier_override)
        override_tier = decl;
      else
        declared.push_back(decl);
    }
    for (const doc::Node& n : doc_.nodes)
      if (n.tier) declared.push_back({*n.tier, "node " + n.id, n.pointer + "/determinism"});
    if (options_.tier) {
      policy::TierDeclaration decl{*options_.tier, "--tier", ""};
      if (options_.tier_override)
        override_tier = decl;
      else
        declared.push_back(decl);
    }
    auto r = policy::ResolveTier(declared, override_tier);
    if (!r.ok()) {
      for (const Diagnostic& d : r.errors()) errors_.push_back(d);
      return;
    }
    prog_.tier = r->tier;
    prog_.tier_source = r->source;
    for (const Diagnostic& d : r->notes) prog_.notes.push_back(d);
  }

  std::optional<TensorType> ParseShape(const doc::Node& n, const Json& shape) {
    std::string pointer =
        PointerJoin(n.pointer, doc_.form == doc::Form::kGraph ? "shape" : "params");
    if (doc_.form == doc::Form::kWorkflow) pointer = PointerJoin(pointer, "shape");
    if (!shape.is_array()) {
      Error("bad-shape", pointer, "the shape is " + shape.dump() + ", expected an array of sizes",
            n);
      return std::nullopt;
    }
    if (shape.size() > static_cast<size_t>(kMaxRank)) {
      Error("bad-shape", pointer,
            "the shape has rank " + std::to_string(shape.size()) +
                ", the largest supported rank is " + std::to_string(kMaxRank),
            n);
      return std::nullopt;
    }
    TensorType t;
    for (size_t i = 0; i < shape.size(); ++i) {
      const Json& e = shape[i];
      Dim dim;
      if (e.is_string()) {
        dim.symbol = e.get<std::string>();
        auto b = prog_.dims.find(dim.symbol);
        if (b == prog_.dims.end()) {
          Error("unbound-dim", PointerJoin(pointer, i),
                "the dimension " + dim.symbol + " has no size", n,
                "bind it in the document (\"dims\": {\"" + dim.symbol + "\": 64}) or with --bind " +
                    dim.symbol + "=64");
          return std::nullopt;
        }
        dim.size = b->second;
      } else if (e.is_number_unsigned()) {
        // Non-negative integers parse as unsigned; one beyond int64 is simply too large.
        dim.size = static_cast<int64_t>(std::min<uint64_t>(
            e.get<uint64_t>(), static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
      } else if (e.is_number_integer()) {
        Error("negative-dim", PointerJoin(pointer, i),
              "the dimension is " + e.dump() + ", sizes cannot be negative", n);
        return std::nullopt;
      } else {
        Error("bad-shape", PointerJoin(pointer, i),
              "the dimension is " + e.dump() + ", expected a non-negative integer", n);
        return std::nullopt;
      }
      t.dims.push_back(dim);
      if (!CheckedElements(t.dims)) {
        Error("tensor-too-large", pointer,
              "the shape " + shape.dump() +
                  " has more than 2^40 elements (zero-sized "
                  "dimensions aside)",
              n, "no device holds a tensor this large; split the data or stream it");
        return std::nullopt;
      }
    }
    if (auto dt = FindParam(n, "dtype"); dt) {
      auto parsed = dt->is_string() ? ParseDType(dt->get<std::string>()) : std::nullopt;
      if (!parsed) {
        Error("bad-dtype", PointerJoin(n.pointer, "dtype"),
              "the dtype is " + dt->dump() + ", expected one of " + DTypeChoices(), n);
        return std::nullopt;
      }
      t.dtype = *parsed;
    }
    return t;
  }

  // A block dtype (q4_k, q6_k) is input data only, its values in whole blocks along each row.
  bool CheckBlockDType(const doc::Node& n, BlockKind kind, const TensorType& t) {
    if (!IsBlockDType(t.dtype)) return true;
    const std::string dtype = DTypeName(t.dtype);
    if (kind != BlockKind::kInput) {
      Error("bad-dtype", ParamPointer(n, "dtype"),
            "a " + n.op + " cannot be " + dtype + ": blocks are input data only", n,
            "give the blocks as an input's data or feed, for matmul_q to read");
      return false;
    }
    if (t.rank() == 0 || t.dims.back().size % kBlockValues != 0) {
      Error("block-misaligned", ParamPointer(n, "shape"),
            "the shape " + t.ShapeStringWithSizes() + " of " + dtype +
                " values does not end in whole blocks of 256 values",
            n, "the last dimension (the values of a row) must be a multiple of 256");
      return false;
    }
    return true;
  }

  const Json* FindParam(const doc::Node& n, const char* key) {
    auto it = n.params.find(key);
    return it == n.params.end() ? nullptr : &*it;
  }

  std::string ParamPointer(const doc::Node& n, const char* key) {
    return doc_.form == doc::Form::kGraph ? PointerJoin(n.pointer, key)
                                          : PointerJoin(PointerJoin(n.pointer, "params"), key);
  }

  // Whether a JSON number is a value of the dtype: integer types take integers in their range,
  // bool takes 0 and 1, float types anything finite within their largest value.
  static bool FitsDType(double v, DType dtype) {
    const bool integral = std::isfinite(v) && v == std::floor(v);
    switch (dtype) {
      case DType::kF32:
        return std::fabs(v) <= std::numeric_limits<float>::max();
      case DType::kF16:
        return std::fabs(v) <= 65504.0;
      case DType::kI32:
        return integral && v >= -2147483648.0 && v <= 2147483647.0;
      case DType::kU32:
        return integral && v >= 0 && v <= 4294967295.0;
      case DType::kBool:
        return v == 0 || v == 1;
      case DType::kQ4K:
      case DType::kQ6K:
        return integral && v >= 0 && v <= 255;
    }
    return false;
  }
  static std::string DTypeRange(DType dtype) {
    switch (dtype) {
      case DType::kF32:
        return "a finite f32";
      case DType::kF16:
        return "a finite f16 (|v| <= 65504)";
      case DType::kI32:
        return "an i32 (an integer in [-2^31, 2^31 - 1])";
      case DType::kU32:
        return "a u32 (an integer in [0, 2^32 - 1])";
      case DType::kBool:
        return "a bool (0 or 1)";
      case DType::kQ4K:
      case DType::kQ6K:
        return "a byte of a block (an integer in [0, 255])";
    }
    return "";
  }

  std::optional<std::vector<double>> ParseData(const doc::Node& n, const Json& data,
                                               const TensorType& t) {
    std::string pointer = ParamPointer(n, "data");
    if (!data.is_array()) {
      Error("non-numeric-data", pointer,
            "the data is " + std::string(data.type_name()) + ", expected a flat array of numbers",
            n);
      return std::nullopt;
    }
    if (IsBlockDType(t.dtype) && static_cast<int64_t>(data.size()) != t.bytes()) {
      Error("data-length-mismatch", pointer,
            "the data has " + std::to_string(data.size()) + " bytes, but " +
                t.ShapeStringWithSizes() + " " + DTypeName(t.dtype) + " values take " +
                std::to_string(t.bytes()) + " (" + std::to_string(t.elements() / kBlockValues) +
                " x " + std::to_string(BlockBytes(t.dtype)) + "-byte blocks)",
            n, "the data of a block dtype is its blocks' bytes, row after row");
      return std::nullopt;
    }
    if (!IsBlockDType(t.dtype) && static_cast<int64_t>(data.size()) != t.elements()) {
      Error("data-length-mismatch", pointer,
            "the data has " + std::to_string(data.size()) + " values but the shape " +
                t.ShapeStringWithSizes() + " holds " + std::to_string(t.elements()),
            n, "data is flat, in row-major order");
      return std::nullopt;
    }
    std::vector<double> values;
    values.reserve(data.size());
    for (size_t i = 0; i < data.size(); ++i) {
      const Json& v = data[i];
      if (!v.is_number()) {
        Error("non-numeric-data", PointerJoin(pointer, i),
              "the value is " + v.dump() + ", expected a number", n,
              v.is_array() ? "data is flat, in row-major order" : "");
        return std::nullopt;
      }
      double d = v.get<double>();
      if (!FitsDType(d, t.dtype)) {
        Error("data-out-of-range", PointerJoin(pointer, i),
              "the value " + v.dump() + " is not " + DTypeRange(t.dtype), n);
        return std::nullopt;
      }
      // Kept exact: a float type rounds it once where the tensor is made, an integer type holds
      // it as it is (an f32 could not: 2^24 + 1 is no f32).
      values.push_back(d);
    }
    return values;
  }

  std::optional<Initializer> ParseInit(const doc::Node& n, const TensorType& t) {
    const Json* init = FindParam(n, "init");
    std::string pointer = ParamPointer(n, "init");
    if (!init || !init->is_object() || !init->contains("kind") || !(*init)["kind"].is_string()) {
      Error("missing-initializer", pointer,
            "a param declares its initializer, e.g. {\"kind\": \"uniform\", \"low\": -0.1, "
            "\"high\": 0.1, \"seed\": 1}",
            n);
      return std::nullopt;
    }
    Initializer out;
    out.kind = (*init)["kind"].get<std::string>();
    const std::vector<std::string>* fields = out.kind == "uniform"           ? &kUniformFields
                                             : out.kind == "kaiming_uniform" ? &kKaimingFields
                                             : out.kind == "zeros" || out.kind == "ones"
                                                 ? &kConstantInitFields
                                                 : nullptr;
    if (fields) {
      const size_t errors_before = errors_.size();
      doc::CheckKeys(*init, pointer, *fields, "a " + out.kind + " initializer", errors_,
                     "unknown-field", n.Describe());
      if (errors_.size() != errors_before) return std::nullopt;
    }
    bool numbers_ok = true;
    auto number = [&](const char* key, double fallback) {
      auto it = init->find(key);
      if (it == init->end()) return fallback;
      if (!it->is_number()) {
        Error("bad-initializer", PointerJoin(pointer, key),
              std::string("\"") + key + "\" is " + it->dump() + ", expected a number", n);
        numbers_ok = false;
        return fallback;
      }
      return it->get<double>();
    };
    if (auto s = init->find("seed"); s != init->end()) {
      // A seed is a 64-bit counter-hash key: a non-negative integer (converting anything else
      // would be undefined behaviour, not just a different stream).
      double v = s->is_number() ? s->get<double>() : -1;
      bool integral_float =
          s->is_number_float() && v >= 0 && v < 18446744073709551616.0 && v == std::floor(v);
      if (!s->is_number_unsigned() && !integral_float) {
        Error("bad-initializer", PointerJoin(pointer, "seed"),
              "the seed is " + s->dump() + ", expected a non-negative integer", n);
        return std::nullopt;
      }
      out.seed = s->is_number_unsigned() ? s->get<uint64_t>() : static_cast<uint64_t>(v);
    }
    if (out.kind == "uniform") {
      out.low = number("low", -0.1);
      out.high = number("high", 0.1);
      if (numbers_ok && !(out.low <= out.high)) {
        Error("bad-initializer", pointer,
              "the initializer draws from [" + Json(out.low).dump() + ", " + Json(out.high).dump() +
                  "], whose low end is above its high end",
              n);
        return std::nullopt;
      }
    } else if (out.kind == "kaiming_uniform") {
      // PyTorch's nn.Linear default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)); fan_in is the first dim
      // of a [in, out] weight unless given.
      double fan_in = number("fan_in", t.rank() ? static_cast<double>(t.dims[0].size) : 1.0);
      if (numbers_ok && !(fan_in >= 1 && fan_in == std::floor(fan_in) && fan_in <= 9e15)) {
        const bool given = init->contains("fan_in");
        Error("bad-initializer", given ? PointerJoin(pointer, "fan_in") : pointer,
              "the fan-in is " + Json(fan_in).dump() + ", expected a positive integer", n,
              given ? "" : "the weight's first dimension is its fan-in unless \"fan_in\" says");
        return std::nullopt;
      }
      double bound = 1.0 / std::sqrt(fan_in);
      out.low = -bound;
      out.high = bound;
      out.kind = "uniform";
    } else if (out.kind == "zeros" || out.kind == "ones") {
    } else {
      Error("bad-initializer", PointerJoin(pointer, "kind"),
            "the initializer kind is \"" + out.kind +
                "\", expected uniform, kaiming_uniform, "
                "zeros or ones",
            n);
      return std::nullopt;
    }
    if (!numbers_ok) return std::nullopt;
    if (!init->contains("seed") && out.kind == "uniform") {
      Error("missing-seed", pointer, "a random initializer declares its seed", n);
      return std::nullopt;
    }
    const double f32_max = std::numeric_limits<float>::max();
    if (out.kind == "uniform" &&
        !(std::fabs(out.low) <= f32_max && std::fabs(out.high) <= f32_max &&
          std::fabs(out.high - out.low) <= f32_max)) {
      Error("data-out-of-range", pointer,
            "the initializer draws from [" + Json(out.low).dump() + ", " + Json(out.high).dump() +
                "], which does not fit in f32",
            n);
      return std::nullopt;
    }
    return out;
  }

  void LowerNode(const doc::Node& n) {
    Block b;
    b.id = n.id;
    b.type = n.op;
    b.label = n.label;
    b.pointer = n.pointer;
    // An input's inline data is kept once, as b.data below, not again among its params.
    if (n.op == "input" && n.params.is_object()) {
      b.params = Json::object();
      for (auto it = n.params.begin(); it != n.params.end(); ++it)
        if (it.key() != "data") b.params[it.key()] = *it;
    } else {
      b.params = n.params;
    }
    for (const doc::Input& in : n.inputs) {
      b.inputs.push_back({in.port, index_.at(in.source)});
      const Block& source = prog_.blocks[b.inputs.back().second];
      if (source.kind == BlockKind::kDataset) {
        Error("dataset-as-value", in.pointer,
              "the dataset " + source.Describe() + " is wired into " + n.Describe() +
                  ", but a dataset is no tensor",
              n, kDatasetHelp);
      }
    }
    bool ok = true;
    if (n.op == "dataset") {
      b.kind = BlockKind::kDataset;
      CheckDatasetSource(n);
      if (!n.inputs.empty())
        Error("unexpected-input", n.inputs[0].pointer, "a dataset block takes no inputs", n);
      index_[n.id] = static_cast<int>(prog_.blocks.size());
      prog_.blocks.push_back(std::move(b));
      return;
    }
    if (n.op == "input" || n.op == "param" || n.op == "full") {
      b.kind = n.op == "input"   ? BlockKind::kInput
               : n.op == "param" ? BlockKind::kParam
                                 : BlockKind::kFull;
      if (!n.inputs.empty()) {
        Error("unexpected-input", n.inputs[0].pointer, "a " + n.op + " block takes no inputs", n);
        ok = false;
      }
      const Json* shape = FindParam(n, "shape");
      if (!shape) {
        Error("missing-field", n.pointer, "the field \"shape\" is missing", n);
        ok = false;
      }
      std::optional<TensorType> t = ok ? ParseShape(n, *shape) : std::nullopt;
      ok = ok && t.has_value() && CheckBlockDType(n, b.kind, *t);
      if (ok) {
        b.tensor_type = *t;
        if (b.kind == BlockKind::kInput) {
          if (const Json* data = FindParam(n, "data")) {
            b.data = ParseData(n, *data, *t);
            ok = b.data.has_value();
          }
        } else if (b.kind == BlockKind::kParam) {
          b.init = ParseInit(n, *t);
          ok = b.init.has_value();
        } else {
          const Json* value = FindParam(n, "value");
          if (!value || !value->is_number()) {
            Error("missing-field", ParamPointer(n, "value"),
                  "a full block needs a numeric \"value\"", n);
            ok = false;
          } else if (!FitsDType(value->get<double>(), t->dtype)) {
            Error("data-out-of-range", ParamPointer(n, "value"),
                  "the value " + value->dump() + " is not " + DTypeRange(t->dtype), n);
            ok = false;
          }
        }
      }
    }
    if (!ok) {
      b.kind = BlockKind::kInput;  // keeps indices stable; the program is never returned
    }
    index_[n.id] = static_cast<int>(prog_.blocks.size());
    prog_.blocks.push_back(std::move(b));
  }

  const doc::Document& doc_;
  const LowerOptions& options_;
  Program prog_;
  std::map<std::string, int> index_;
  std::vector<Diagnostic> errors_;
};

}  // namespace

Result<Program> FromDoc(const doc::Document& d, const LowerOptions& options) {
  SCELLIS_TRY(doc::Verify(d));
  auto p = Lowering(d, options).Run();
  if (p.ok()) SCELLIS_TRY(Verify(p.value()));
  return p;
}

}  // namespace scellis::block
