#include "block/program.h"

#include <cmath>

#include "base/random.h"

namespace scellis::block {

std::vector<float> Initializer::Generate(int64_t count) const {
  std::vector<float> out(static_cast<size_t>(count));
  if (kind == "zeros") return out;
  if (kind == "ones") {
    std::fill(out.begin(), out.end(), 1.0f);
    return out;
  }
  float lo = static_cast<float>(low), span = static_cast<float>(high - low);
  for (int64_t i = 0; i < count; ++i) out[i] = lo + span * CounterUniform(seed, i);
  return out;
}

std::string Block::Describe() const {
  return label.empty() ? type + " #" + id : type + " \"" + label + "\"";
}

std::string Print(const Program& p) {
  std::string out = "program";
  if (!p.name.empty()) out += " \"" + p.name + "\"";
  out += std::string("  tier=") + policy::TierName(p.tier) + " (from " + p.tier_source + ")" +
         "  tolerance=" + policy::ToleranceName(p.tolerance) +
         (p.bit_exact_across_devices ? "  bit-exact-across-devices" : "") + "\n";
  for (size_t i = 0; i < p.blocks.size(); ++i) {
    const Block& b = p.blocks[i];
    out += "  block %" + b.id + " = " + b.type;
    if (!b.label.empty()) out += " \"" + b.label + "\"";
    for (size_t k = 0; k < b.inputs.size(); ++k)
      out += (k ? ", " : " ") + b.inputs[k].first + "=%" + p.blocks[b.inputs[k].second].id;
    if (b.kind != BlockKind::kOp) {
      out += " ";  // appended separately: `" " + std::string&&` draws a false -Wrestrict (GCC 12)
      out += b.tensor_type.ShapeStringWithSizes() + " " + DTypeName(b.tensor_type.dtype);
      if (b.data) out += " data(" + std::to_string(b.data->size()) + ")";
      if (b.init) out += " init(" + b.init->kind + ", seed " + std::to_string(b.init->seed) + ")";
    } else if (!b.params.empty()) {
      out += " ";
      out += CanonicalJson(b.params);
    }
    out += "\n";
  }
  if (p.train) {
    out += "  train loss=%" + p.blocks[p.train->loss].id + " optimizer=" + p.train->optimizer.kind +
           " params=" + std::to_string(p.train->params.size()) +
           " batch=" + std::to_string(p.train->batch) +
           " epochs=" + std::to_string(p.train->epochs) + "\n";
    // Params whose group changes a setting, with the settings they train under.
    for (size_t i = 0; i < p.train->param_optimizers.size(); ++i) {
      const OptimizerSpec& o = p.train->param_optimizers[i];
      const OptimizerSpec& base = p.train->optimizer;
      if (o == base) continue;
      auto num = [](double v) { return Json(v).dump(); };
      out += "  train group %" + p.blocks[p.train->params[i]].id + " lr=" + num(o.lr) +
             " weight_decay=" + num(o.weight_decay) + (o.maximize ? " maximize=true" : "") +
             (o.kind == "sgd"
                  ? " momentum=" + num(o.momentum) + " dampening=" + num(o.dampening) +
                        " nesterov=" + (o.nesterov ? "true" : "false")
                  : " beta1=" + num(o.beta1) + " beta2=" + num(o.beta2) + " eps=" + num(o.eps)) +
             "\n";
    }
  }
  for (const Output& o : p.outputs)
    out += "  output " + o.name + " = %" + p.blocks[o.block].id + "\n";
  return out;
}

Json ToJson(const Program& p) {
  Json j;
  j["name"] = p.name;
  j["tier"] = policy::TierName(p.tier);
  j["tier_source"] = p.tier_source;
  j["tolerance"] = policy::ToleranceName(p.tolerance);
  if (p.bit_exact_across_devices) j["bit_exact_across_devices"] = true;
  j["blocks"] = Json::array();
  for (const Block& b : p.blocks) {
    Json jb;
    jb["id"] = b.id;
    jb["type"] = b.type;
    jb["pointer"] = b.pointer;
    if (!b.label.empty()) jb["label"] = b.label;
    for (const auto& [port, src] : b.inputs) {
      // A list port's entries as an array of ids, in list order.
      const ops::OpSpec* spec = p.ops ? p.ops->Find(b.type) : nullptr;
      const ops::Port* def = spec ? spec->FindPort(port) : nullptr;
      if (def && def->list)
        jb["inputs"][port].push_back(p.blocks[src].id);
      else
        jb["inputs"][port] = p.blocks[src].id;
    }
    if (b.kind != BlockKind::kOp) {
      jb["shape"] = b.tensor_type.sizes();
      jb["dtype"] = DTypeName(b.tensor_type.dtype);
    } else {
      jb["params"] = b.params;
    }
    j["blocks"].push_back(jb);
  }
  for (const Output& o : p.outputs)
    j["outputs"].push_back({{"name", o.name}, {"block", p.blocks[o.block].id}});
  return j;
}

Status Verify(const Program& p) {
  for (size_t i = 0; i < p.blocks.size(); ++i) {
    // A program built in code (a session) has not passed the document's shape check.
    if (!CheckedElements(p.blocks[i].tensor_type.dims)) {
      return UserError("tensor-too-large", p.blocks[i].pointer,
                       "the shape " + p.blocks[i].tensor_type.ShapeStringWithSizes() +
                           " has more than 2^40 elements (zero-sized dimensions aside)",
                       "no device holds a tensor this large; split the data or stream it");
    }
    for (const auto& [port, src] : p.blocks[i].inputs)
      if (src < 0 || static_cast<size_t>(src) >= i)
        return InternalError("block.Verify", "block " + p.blocks[i].id + " reads a later block");
    // Inline data holds a value per element, or a block dtype's bytes.
    const TensorType& t = p.blocks[i].tensor_type;
    if (p.blocks[i].kind == BlockKind::kInput && p.blocks[i].data &&
        static_cast<int64_t>(p.blocks[i].data->size()) !=
            (IsBlockDType(t.dtype) ? t.bytes() : t.elements()))
      return InternalError("block.Verify", "block " + p.blocks[i].id + " data length");
  }
  for (const Output& o : p.outputs)
    if (o.block < 0 || static_cast<size_t>(o.block) >= p.blocks.size())
      return InternalError("block.Verify", "output " + o.name);
  return Status::Ok();
}

}  // namespace scellis::block
