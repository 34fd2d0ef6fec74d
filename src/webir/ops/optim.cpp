// Optimizer updates, with exactly the arithmetic of PyTorch's torch.optim.SGD, Adam and AdamW
// (single-tensor path: same formulas, same order of operations, scalar factors computed in double
// and rounded once).
//
// WebIR nodes have one output each, so an optimizer that updates several tensors is several ops
// over the same inputs, one per updated tensor: `momentum_update` (the new parameter) and
// `momentum_velocity` (the new velocity); `adam_update` (the new parameter), `adam_m` and `adam_v`
// (the new moments). Each recomputes the few flops it shares with its siblings rather than
// introducing tuple values into every rung; the results are identical to one fused update.
//
// The step number is a runtime value: the input `t`, a scalar holding the 1-based number of this
// update (PyTorch's state["step"] after its increment), so one plan serves every step. Adam's bias
// corrections use it; the momentum ops take t <= 1 as the first step, where PyTorch creates the
// buffer as a copy of the gradient (the velocity input is then ignored).
#include <cmath>

#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

// Defaults for absent attributes. Ranges are the op table's, checked where attributes enter (a
// graph node's, or a train section's optimizer); here only the type is rechecked.
struct NumberAttr {
  const char* name;
  double fallback;
};

Status NumberAttrs(InferContext& c, std::initializer_list<NumberAttr> attrs) {
  for (const NumberAttr& a : attrs) {
    auto it = c.attrs.find(a.name);
    if (it == c.attrs.end() || it->is_null()) {
      c.attrs[a.name] = a.fallback;
      continue;
    }
    if (!it->is_number() || !std::isfinite(it->get<double>())) {
      return c.Error("bad-attribute", std::string("the attribute \"") + a.name + "\" is " +
                                          it->dump() + ", expected a number");
    }
  }
  return Status::Ok();
}

Status BoolAttrs(InferContext& c, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto it = c.attrs.find(name);
    if (it == c.attrs.end() || it->is_null()) {
      c.attrs[name] = false;
      continue;
    }
    if (!it->is_boolean()) {
      return c.Error("bad-attribute", std::string("the attribute \"") + name + "\" is " +
                                          it->dump() + ", expected true or false");
    }
  }
  return Status::Ok();
}

// Every tensor input has the parameter's shape; `t` (the last input, where present) is a scalar.
Result<TensorType> CheckUpdateShapes(InferContext& c, const std::vector<std::string>& ports,
                                     bool has_step) {
  const TensorType& p = c.args[0];
  size_t tensors = has_step ? c.args.size() - 1 : c.args.size();
  for (size_t i = 1; i < tensors; ++i) {
    if (!c.args[i].SameShape(p)) {
      return c.Error("shape-mismatch", "the input \"" + ports[i] + "\" has shape " +
                                           c.args[i].ShapeStringWithSizes() +
                                           ", the parameter has " + p.ShapeStringWithSizes());
    }
  }
  if (has_step && c.args.back().rank() != 0) {
    return c.Error(
        "shape-mismatch",
        "the step \"t\" has shape " + c.args.back().ShapeStringWithSizes() + ", expected []",
        "t is a scalar holding the 1-based number of this update");
  }
  return p;
}

Result<TensorType> InferSgd(InferContext& c) {
  SCELLIS_TRY(NumberAttrs(c, {{"lr", 1e-3}, {"weight_decay", 0}}));
  SCELLIS_TRY(BoolAttrs(c, {"maximize"}));
  return CheckUpdateShapes(c, {"param", "grad"}, false);
}

Result<TensorType> InferMomentum(InferContext& c) {
  SCELLIS_TRY(
      NumberAttrs(c, {{"lr", 1e-3}, {"momentum", 0}, {"dampening", 0}, {"weight_decay", 0}}));
  SCELLIS_TRY(BoolAttrs(c, {"nesterov", "maximize"}));
  if (c.attrs["nesterov"].get<bool>() &&
      (c.attrs["momentum"].get<double>() <= 0 || c.attrs["dampening"].get<double>() != 0)) {
    return c.Error("bad-attribute", "nesterov momentum requires a momentum > 0 and zero dampening",
                   "as in torch.optim.SGD");
  }
  return CheckUpdateShapes(c, {"param", "grad", "velocity", "t"}, true);
}

Result<TensorType> InferAdam(InferContext& c) {
  // AdamW's default weight decay is 1e-2; Adam's is 0 (as in torch.optim).
  bool decoupled = false;
  if (auto d = c.attrs.find("decoupled"); d != c.attrs.end() && d->is_boolean())
    decoupled = d->get<bool>();
  SCELLIS_TRY(NumberAttrs(c, {{"lr", 1e-3},
                              {"beta1", 0.9},
                              {"beta2", 0.999},
                              {"eps", 1e-8},
                              {"weight_decay", decoupled ? 1e-2 : 0}}));
  SCELLIS_TRY(BoolAttrs(c, {"decoupled", "maximize"}));
  return CheckUpdateShapes(c, {"param", "grad", "m", "v", "t"}, true);
}

}  // namespace

void AddOptimRules(RuleSet& r) {
  // Updates are applied, not differentiated through.
  r["sgd_update"] = {InferSgd, nullptr};
  r["momentum_update"] = {InferMomentum, nullptr};
  r["momentum_velocity"] = {InferMomentum, nullptr};
  r["adam_update"] = {InferAdam, nullptr};
  r["adam_m"] = {InferAdam, nullptr};
  r["adam_v"] = {InferAdam, nullptr};
}

}  // namespace scellis::webir
