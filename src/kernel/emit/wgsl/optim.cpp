// WGSL optimizer updates, mirroring kernel/ref/optim.cpp operation for operation: one invocation
// per element, scalar factors baked into the source as f32 literals rounded from double (as the
// CPU rounds them). Adam's bias corrections depend on the runtime step t, so they are computed in
// the shader in f32; 1 - beta^t is evaluated as -expm1(t * log(beta)) with log(beta) from double
// and a series for small arguments, which keeps it accurate to a few ulps where the naive
// 1 - pow(beta, t) would cancel catastrophically (beta2 = 0.999 at t = 1).
#include <cmath>

#include "base/detmath.h"
#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {
namespace {

double Attr(const webir::Node& n, const char* name) {
  return n.attrs.at(name).get<double>();
}
bool Flag(const webir::Node& n, const char* name) {
  return n.attrs.at(name).get<bool>();
}

// `var g` = the gradient as the update sees it (maximize, coupled weight decay).
std::string EffectiveGrad(const webir::Node& n, bool decoupled) {
  std::string s = "  var g = in1[i];\n";
  if (Flag(n, "maximize")) s += "  g = -g;\n";
  double wd = Attr(n, "weight_decay");
  if (wd != 0 && !decoupled) s += "  g = g + " + F32(wd) + " * in0[i];\n";
  return s;
}

// The step number held by t (0 when t < 1), as an f32.
std::string StepNumber(const std::string& t) {
  return "select(0.0, floor(" + t + "), " + t + " >= 1.0)";
}

const char* kExpm1Fn =
    "fn expm1_f32(x: f32) -> f32 {\n"
    "  if (abs(x) >= 0.5) { return exp(x) - 1.0; }\n"
    "  var s = 1.0;\n"
    "  for (var k = 12.0; k >= 2.0; k = k - 1.0) { s = 1.0 + x * s / k; }\n"
    "  return x * s;\n"
    "}\n";

std::string Moments(const webir::Node& n) {
  double beta1 = Attr(n, "beta1"), beta2 = Attr(n, "beta2");
  std::string w = F32(1.0 - beta1);
  return "  let w = " + w +
         ";\n"
         "  let m_old = in2[i];\n"
         "  let m = select(g - (g - m_old) * (1.0 - w), m_old + w * (g - m_old), abs(w) < 0.5);\n"
         "  let v = in3[i] * " +
         F32(beta2) + " + " + F32(1.0 - beta2) + " * g * g;\n";
}

// 1 - beta^step. The literal comes from detmath, so the source (and its hash) does not depend on
// the host's libm. beta = 0 has no finite logarithm: then it is 1 from the first step on.
std::string BiasCorrection(double beta) {
  if (beta == 0) return "select(0.0, 1.0, step >= 1.0)";
  return "-expm1_f32(step * " + F32(detmath::Log(beta)) + ")";
}

// The stores of a kernel's outputs: `value(op)` is the WGSL value the op of each output computes
// (the variables of a body shared by all of them), stored to out, out1, ... in binding order.
template <typename ValueOf>
std::string Stores(const Module& m, const Kernel& k, const ValueOf& value) {
  std::string s;
  const std::vector<int> outputs = k.Outputs();
  for (size_t j = 0; j < outputs.size(); ++j)
    s += "  out" + (j ? std::to_string(j) : std::string()) +
         "[i] = " + value(m.graph().at(outputs[j]).op) + ";\n";
  return s;
}

}  // namespace

// An optimizer kernel computes the shared part of its update once (the effective gradient, the
// moments) and stores each output's value; a merged kernel (Kernel::extra_outputs) stores several
// of them, each from the same expressions its own kernel evaluates.
bool GenerateOptim(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kOp) return false;
  const webir::Node& n = m.graph().at(k.output);
  int64_t total = n.type.elements();
  std::string helpers, body;
  if (k.op == "sgd_update") {
    body = EffectiveGrad(n, false) + "  out[i] = in0[i] + " + F32(-Attr(n, "lr")) + " * g;\n";
  } else if (k.op == "momentum_update" || k.op == "momentum_velocity") {
    double momentum = Attr(n, "momentum");
    body = EffectiveGrad(n, false) + "  var buf = g;\n  var dir = g;\n";
    if (momentum != 0) {
      body += "  if (" + StepNumber("in3[0]") + " > 1.0) { buf = in2[i] * " + F32(momentum) +
              " + " + F32(1.0 - Attr(n, "dampening")) + " * g; }\n";
      body += Flag(n, "nesterov") ? "  dir = g + " + F32(momentum) + " * buf;\n"
                                  : std::string("  dir = buf;\n");
    }
    const std::string update = "in0[i] + " + F32(-Attr(n, "lr")) + " * dir";
    body += Stores(m, k, [&](const std::string& op) {
      return op == "momentum_velocity" ? std::string("buf") : update;
    });
  } else if (k.op == "adam_m" || k.op == "adam_v") {
    body = EffectiveGrad(n, Flag(n, "decoupled")) + Moments(n) +
           (k.op == "adam_m" ? "  out[i] = m;\n" : "  out[i] = v;\n");
  } else if (k.op == "adam_update") {
    double lr = Attr(n, "lr"), wd = Attr(n, "weight_decay");
    bool decoupled = Flag(n, "decoupled");
    helpers = kExpm1Fn;
    body = EffectiveGrad(n, decoupled) + Moments(n) + "  let step = " + StepNumber("in4[0]") +
           ";\n"
           "  let bc1 = " +
           BiasCorrection(Attr(n, "beta1")) +
           ";\n"
           "  let bc2 = " +
           BiasCorrection(Attr(n, "beta2")) +
           ";\n"
           "  let minus_step_size = -(" +
           F32(lr) +
           " / bc1);\n"
           "  var p = in0[i];\n" +
           (decoupled && wd != 0 ? "  p = p * " + F32(1.0 - lr * wd) + ";\n" : std::string()) +
           "  let denom = sqrt(v) / sqrt(bc2) + " + F32(Attr(n, "eps")) + ";\n" +
           Stores(m, k, [](const std::string& op) {
             return std::string(op == "adam_m"   ? "m"
                                : op == "adam_v" ? "v"
                                                 : "p + minus_step_size * m / denom");
           });
  } else {
    return false;
  }
  // Pipelines use the layout derived from the shader, which drops unused bindings; an update that
  // ignores an input (t for plain SGD, param without weight decay) still names every binding.
  std::string uses;
  for (size_t b = 0; b < k.inputs.size(); ++b)
    uses += "  _ = arrayLength(&in" + std::to_string(b) + ");\n";
  out.source = Bindings(m, k) + helpers + "\n" + LinearEntry(total) + uses + body + "}\n";
  out.workgroups = LinearGrid(total);
  return true;
}

}  // namespace scellis::kernel::wgsl
