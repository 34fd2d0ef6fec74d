// Lowers a document to BlockIR: resolves the determinism tier, binds symbolic dims, types the
// source blocks and checks their data. Op blocks keep their attributes for WebIR to interpret.
#include <cmath>
#include <limits>

#include "block/program.h"

namespace scellis::block {
namespace {

class Lowering {
 public:
  Lowering(const doc::Document& d, const LowerOptions& o) : doc_(d), options_(o) {}

  Result<Program> Run() {
    prog_.name = doc_.name;
    prog_.ops = options_.ops;
    prog_.form = doc_.form;
    prog_.version = doc_.version;
    prog_.budget_bytes = doc_.budget_bytes;
    prog_.dims = doc_.dims;
    for (const auto& [k, v] : options_.bind) prog_.dims[k] = v;
    ResolveTolerance();
    prog_.bit_exact_across_devices = doc_.bit_exact_across_devices;

    for (const doc::Node& n : doc_.nodes) LowerNode(n);
    for (const doc::Output& o : doc_.outputs)
      prog_.outputs.push_back({o.name, index_.at(o.source)});
    ResolveCarries();
    ResolveTrain();
    prog_.mode = options_.mode;
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

  int BlockRef(const Json& t, const char* key, const std::string& pointer, const char* want_type,
               bool required) {
    auto it = t.find(key);
    if (it == t.end()) {
      if (required)
        errors_.push_back(UserError("missing-field", pointer,
                                    std::string("the train section needs \"") + key + "\""));
      return -1;
    }
    auto found = it->is_string() ? index_.find(it->get<std::string>()) : index_.end();
    if (found == index_.end()) {
      errors_.push_back(
          UserError("dangling-reference", PointerJoin(pointer, key),
                    std::string("\"") + key + "\" is " + it->dump() + ", not a node id"));
      return -1;
    }
    if (want_type && prog_.blocks[found->second].type != want_type) {
      errors_.push_back(
          UserError("bad-train-section", PointerJoin(pointer, key),
                    std::string("\"") + key + "\" must name a " + want_type + " node"));
      return -1;
    }
    return found->second;
  }

  void ResolveTrain() {
    if (doc_.train.is_null()) return;
    const Json& t = doc_.train;
    TrainSpec spec;
    spec.loss = BlockRef(t, "loss", "/train", nullptr, true);
    spec.eval_output = BlockRef(t, "eval_output", "/train", nullptr, false);
    if (auto d = t.find("data"); d != t.end() && d->is_object()) {
      spec.dataset = BlockRef(*d, "dataset", "/train/data", "dataset", true);
      spec.images = BlockRef(*d, "images", "/train/data", "input", true);
      spec.labels = BlockRef(*d, "labels", "/train/data", "input", true);
    }
    auto integer = [&](const char* key, int64_t fallback, int64_t lo, int64_t hi) {
      auto it = t.find(key);
      if (it == t.end()) return fallback;
      if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi) {
        errors_.push_back(UserError("bad-train-section", PointerJoin("/train", key),
                                    std::string("\"") + key + "\" is " + it->dump() +
                                        ", expected an integer in [" + std::to_string(lo) + ", " +
                                        std::to_string(hi) + "]"));
        return fallback;
      }
      return it->get<int64_t>();
    };
    spec.batch = integer("batch", 64, 1, int64_t{1} << 24);
    spec.eval_batch = integer("eval_batch", 1000, 1, int64_t{1} << 24);
    spec.epochs = static_cast<int>(integer("epochs", 1, 1, 100000));
    spec.shuffle_seed = static_cast<uint64_t>(integer("shuffle_seed", 0, 0, int64_t{1} << 53));
    const Json* opt =
        t.contains("optimizer") && t["optimizer"].is_object() ? &t["optimizer"] : nullptr;
    if (!opt || !opt->contains("kind") || !(*opt)["kind"].is_string()) {
      errors_.push_back(UserError("missing-field", "/train",
                                  "the train section needs \"optimizer\": {\"kind\": \"adam\" | "
                                  "\"adamw\" | \"sgd\", ...}"));
    } else {
      OptimizerSpec& o = spec.optimizer;
      o.kind = (*opt)["kind"].get<std::string>();
      if (o.kind != "sgd" && o.kind != "adam" && o.kind != "adamw") {
        errors_.push_back(
            UserError("bad-optimizer", "/train/optimizer/kind",
                      "the optimizer is \"" + o.kind + "\", expected sgd, adam or adamw"));
      }
      if (o.kind == "adamw") o.weight_decay = 1e-2;  // PyTorch's AdamW default
      for (auto it = opt->begin(); it != opt->end(); ++it) {
        const std::string& k = it.key();
        if (k == "kind") continue;
        // Each optimizer takes its own settings; another's is a mistake worth naming.
        const bool sgd_only = k == "momentum" || k == "dampening" || k == "nesterov";
        const bool adam_only = k == "beta1" || k == "beta2" || k == "eps";
        if ((o.kind == "sgd" && adam_only) || (o.kind != "sgd" && sgd_only)) {
          errors_.push_back(UserError("bad-optimizer", PointerJoin("/train/optimizer", k),
                                      "the " + o.kind + " optimizer has no setting \"" + k + "\""));
          continue;
        }
        double* field = k == "lr"             ? &o.lr
                        : k == "momentum"     ? &o.momentum
                        : k == "dampening"    ? &o.dampening
                        : k == "weight_decay" ? &o.weight_decay
                        : k == "beta1"        ? &o.beta1
                        : k == "beta2"        ? &o.beta2
                        : k == "eps"          ? &o.eps
                                              : nullptr;
        if (k == "nesterov" && it->is_boolean()) {
          o.nesterov = it->get<bool>();
        } else if (field && it->is_number() && it->get<double>() >= 0) {
          *field = it->get<double>();
        } else {
          errors_.push_back(UserError("bad-optimizer", PointerJoin("/train/optimizer", k),
                                      "the optimizer field \"" + k + "\" is " + it->dump() +
                                          ", not a known non-negative setting"));
        }
      }
    }
    for (size_t i = 0; i < prog_.blocks.size(); ++i)
      if (prog_.blocks[i].kind == BlockKind::kParam) spec.params.push_back(static_cast<int>(i));
    prog_.train = spec;
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
    int64_t elements = 1;
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
      if (dim.size > kMaxElements || (dim.size > 0 && elements > kMaxElements / dim.size)) {
        Error("tensor-too-large", pointer,
              "the shape " + shape.dump() + " has more than 2^40 elements", n,
              "no device holds a tensor this large; split the data or stream it");
        return std::nullopt;
      }
      elements *= dim.size;
      t.dims.push_back(dim);
    }
    if (auto dt = FindParam(n, "dtype"); dt) {
      auto parsed = dt->is_string() ? ParseDType(dt->get<std::string>()) : std::nullopt;
      if (!parsed) {
        Error("bad-dtype", PointerJoin(n.pointer, "dtype"),
              "the dtype is " + dt->dump() + ", expected \"f32\" or \"i32\"", n);
        return std::nullopt;
      }
      t.dtype = *parsed;
    }
    return t;
  }

  const Json* FindParam(const doc::Node& n, const char* key) {
    auto it = n.params.find(key);
    return it == n.params.end() ? nullptr : &*it;
  }

  std::string ParamPointer(const doc::Node& n, const char* key) {
    return doc_.form == doc::Form::kGraph ? PointerJoin(n.pointer, key)
                                          : PointerJoin(PointerJoin(n.pointer, "params"), key);
  }

  std::optional<std::vector<float>> ParseData(const doc::Node& n, const Json& data,
                                              const TensorType& t) {
    std::string pointer = ParamPointer(n, "data");
    if (!data.is_array()) {
      Error("non-numeric-data", pointer,
            "the data is " + std::string(data.type_name()) + ", expected a flat array of numbers",
            n);
      return std::nullopt;
    }
    if (static_cast<int64_t>(data.size()) != t.elements()) {
      Error("data-length-mismatch", pointer,
            "the data has " + std::to_string(data.size()) + " values but the shape " +
                t.ShapeStringWithSizes() + " holds " + std::to_string(t.elements()),
            n, "data is flat, in row-major order");
      return std::nullopt;
    }
    std::vector<float> values;
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
      if (std::fabs(d) > std::numeric_limits<float>::max()) {
        Error("data-out-of-range", PointerJoin(pointer, i),
              "the value " + v.dump() + " does not fit in f32", n);
        return std::nullopt;
      }
      values.push_back(static_cast<float>(d));
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
    auto number = [&](const char* key, double fallback) {
      auto it = init->find(key);
      return it != init->end() && it->is_number() ? it->get<double>() : fallback;
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
    } else if (out.kind == "kaiming_uniform") {
      // PyTorch's nn.Linear default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)); fan_in is the first dim
      // of a [in, out] weight unless given.
      double fan_in = number("fan_in", t.rank() ? static_cast<double>(t.dims[0].size) : 1.0);
      double bound = fan_in > 0 ? 1.0 / std::sqrt(fan_in) : 0.0;
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
    for (const doc::Input& in : n.inputs) b.inputs.push_back({in.port, index_.at(in.source)});
    bool ok = true;
    if (n.op == "dataset") {
      b.kind = BlockKind::kDataset;
      const Json* source = FindParam(n, "source");
      if (!source || !source->is_string()) {
        Error("missing-field", ParamPointer(n, "source"),
              "a dataset block names its \"source\", e.g. \"fashion-mnist\"", n);
      }
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
      ok = ok && t.has_value();
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
          } else if (std::fabs(value->get<double>()) > std::numeric_limits<float>::max()) {
            Error("data-out-of-range", ParamPointer(n, "value"),
                  "the value " + value->dump() + " does not fit in f32", n);
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
