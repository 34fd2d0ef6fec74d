#include "webir/passes/append_train_step.h"

#include "webir/autodiff/autodiff.h"

namespace scellis::webir {

std::string NextName(const std::string& param) {
  return param + "@next";
}
std::string StateName(const std::string& param, const std::string& state) {
  return param + "@" + state;
}
std::string GradName(const std::string& param) {
  return param + "@grad";
}
std::string DatasetTableName(const std::string& input) {
  return input + "@dataset";
}

namespace {

int StateInput(Graph& g, const Node& param, const std::string& state) {
  Node n;
  n.op = "input";
  n.role = Role::kInput;
  n.purpose = Purpose::kOptimizerState;
  n.type = param.type;
  n.name = StateName(param.name, state);
  n.label = n.name;
  n.origin = param.origin;
  n.data = std::vector<double>(static_cast<size_t>(param.type.elements()), 0.0);
  return g.Add(std::move(n));
}

// The input a gradient arrives in, in the update half of a data-parallel step.
int GradientInput(Graph& g, const Node& param) {
  Node n;
  n.op = "input";
  n.role = Role::kInput;
  n.purpose = Purpose::kGradient;
  n.type = param.type;
  n.name = n.label = GradName(param.name);
  n.origin = param.origin;
  return g.Add(std::move(n));
}

// One optimizer update per parameter from its gradient `grads[i]`, with the settings of its
// parameter group `optimizers[i]`; the new values and moments are outputs carried back into their
// inputs. `t` is the step input.
Status AppendUpdates(Graph& g, const std::vector<block::OptimizerSpec>& optimizers,
                     const std::vector<int>& params, const std::vector<int>& grads, int t) {
  if (optimizers.size() != params.size())
    return InternalError("webir.AppendTrainStep", "a param without its optimizer settings");
  for (size_t i = 0; i < params.size(); ++i) {
    const Node param = g.at(params[i]);
    const block::OptimizerSpec& o = optimizers[i];
    int grad = grads[i];
    auto emit = [&](const std::string& op, std::vector<int> args, Json attrs, Purpose purpose,
                    const std::string& output) {
      int id = grad::Emit(g, op, std::move(args), std::move(attrs));
      if (id >= 0) {
        g.nodes[id].purpose = purpose;
        g.outputs.push_back({output, id});
      }
      return id;
    };
    std::vector<std::pair<int, int>> carries;  // (new value, input)
    if (o.kind == "sgd" && o.momentum == 0) {
      int next = emit("sgd_update", {params[i], grad},
                      {{"lr", o.lr}, {"weight_decay", o.weight_decay}, {"maximize", o.maximize}},
                      Purpose::kForward, NextName(param.name));
      carries.push_back({next, params[i]});
    } else if (o.kind == "sgd") {
      int v = StateInput(g, param, "velocity");
      Json attrs = {{"lr", o.lr},
                    {"momentum", o.momentum},
                    {"dampening", o.dampening},
                    {"weight_decay", o.weight_decay},
                    {"nesterov", o.nesterov},
                    {"maximize", o.maximize}};
      int next = emit("momentum_update", {params[i], grad, v, t}, attrs, Purpose::kForward,
                      NextName(param.name));
      int v_next = emit("momentum_velocity", {params[i], grad, v, t}, attrs,
                        Purpose::kOptimizerState, StateName(param.name, "velocity"));
      carries.push_back({next, params[i]});
      carries.push_back({v_next, v});
    } else {
      int m = StateInput(g, param, "m");
      int v = StateInput(g, param, "v");
      Json attrs = {{"lr", o.lr},
                    {"beta1", o.beta1},
                    {"beta2", o.beta2},
                    {"eps", o.eps},
                    {"weight_decay", o.weight_decay},
                    {"decoupled", o.kind == "adamw"},
                    {"maximize", o.maximize}};
      int next = emit("adam_update", {params[i], grad, m, v, t}, attrs, Purpose::kForward,
                      NextName(param.name));
      int m_next = emit("adam_m", {params[i], grad, m, v, t}, attrs, Purpose::kOptimizerState,
                        StateName(param.name, "m"));
      int v_next = emit("adam_v", {params[i], grad, m, v, t}, attrs, Purpose::kOptimizerState,
                        StateName(param.name, "v"));
      carries.push_back({next, params[i]});
      carries.push_back({m_next, m});
      carries.push_back({v_next, v});
    }
    for (auto [from, to] : carries) {
      if (from < 0)
        return InternalError("webir.AppendTrainStep", "an optimizer update is ill-typed");
      g.carries.push_back({from, to});
    }
  }
  return Status::Ok();
}

// Mixed precision: each f32 gradient divided by the loss scale, a power of two, so exactly (unless
// it falls below f32's normal range), as torch.cuda.amp.GradScaler.unscale_ does. The gradient's
// name ("d_w1") moves to the unscaled value, the one the update reads.
Status Unscale(Graph& g, std::vector<int>& grads, double loss_scale) {
  const int inverse = grad::Constant(g, 1.0 / loss_scale, {});
  for (int& grad : grads) {
    const std::string name = g.at(grad).name;
    const int unscaled = grad::Emit(g, "mul", {grad, inverse});
    if (unscaled < 0)
      return InternalError("webir.AppendTrainStep", "an unscaled gradient is ill-typed");
    g.nodes[grad].name = name + "_scaled";
    g.nodes[unscaled].name = name;
    grad = unscaled;
  }
  return Status::Ok();
}

// The step number's input: the document's own (a scalar input labelled "step" the forward reads, as
// dropout's step port; the lowering admitted only a scalar f32 one without data), else a new one.
int StepInput(Graph& g, const std::string& origin) {
  for (const Node& n : g.nodes)
    if (n.role == Role::kInput && n.label == kStepInput && n.type.rank() == 0 && !n.data)
      return n.id;
  Node step;
  step.op = "input";
  step.role = Role::kInput;
  step.type = MakeType({});
  step.name = step.label = kStepInput;
  step.origin = origin;
  return g.Add(std::move(step));
}

}  // namespace

Status AppendTrainStep(Graph& g) {
  if (!g.train) return Status::Ok();
  const PendingTrainStep spec = std::move(*g.train);
  g.train.reset();
  const int loss = spec.loss;
  const std::vector<int>& params = spec.params;

  if (spec.mode == block::LowerMode::kApplyGradients) {
    std::vector<int> grads;
    for (int p : params) grads.push_back(GradientInput(g, g.at(p)));
    int t = StepInput(g, spec.pointer);
    return AppendUpdates(g, spec.optimizers, params, grads, t);
  }

  if (loss < 0) return InternalError("webir.AppendTrainStep", "the loss was never lowered");
  int t = spec.mode == block::LowerMode::kTrainStep ? StepInput(g, spec.pointer) : -1;
  auto grads = Backward(g, loss, params, spec.loss_scale);
  if (!grads.ok()) {
    std::vector<Diagnostic> errors = grads.errors();
    for (Diagnostic& d : errors)
      if (d.pointer.empty()) d.pointer = spec.pointer;
    return Status(errors);
  }
  if (spec.loss_scale != 1) SCELLIS_TRY(Unscale(g, grads.value(), spec.loss_scale));

  bool has_loss_output = false;
  for (const Output& out : g.outputs)
    has_loss_output |= out.node == loss && out.name == kLossOutput;
  if (!has_loss_output) g.outputs.push_back({kLossOutput, loss});

  if (spec.mode == block::LowerMode::kGradients) {
    for (size_t i = 0; i < params.size(); ++i)
      g.outputs.push_back({GradName(g.at(params[i]).name), grads.value()[i]});
    return Status::Ok();
  }
  return AppendUpdates(g, spec.optimizers, params, grads.value(), t);
}

}  // namespace scellis::webir
