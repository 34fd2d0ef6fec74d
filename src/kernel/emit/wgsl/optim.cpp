// WGSL optimizer updates, mirroring kernel/ref/optim.cpp operation for operation: one invocation
// per element, scalar factors baked into the source as f32 literals rounded from double (as the
// CPU rounds them). Adam's bias corrections depend on the runtime step t, so they are computed in
// the shader in f32; 1 - beta^t is evaluated as -expm1(t * log(beta)) with log(beta) from double
// and a series for small arguments, which keeps it accurate to a few ulps where the naive
// 1 - pow(beta, t) would cancel catastrophically (beta2 = 0.999 at t = 1).
#include <algorithm>
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

// What one parameter's update reads and writes: per argument of its op, the WGSL of its element i
// (`at`) and of its element 0 (`first`: the step); per output, the array it is stored to.
struct Names {
  std::vector<std::string> at, first, store;
};

// The names of the part of `k` whose outputs are `outputs` (indices in Outputs() order): each
// argument is the kernel input of that node, each output its binding or the input it is written
// over.
Names NamesOf(const Module& m, const Kernel& k, const std::vector<size_t>& outputs) {
  Names names;
  const std::vector<int> outs = k.Outputs();
  for (int a : m.graph().at(outs[outputs.front()]).args) {
    // A gradient a matmul hands its update (Kernel::update_product) is in a register.
    if (k.UpdatesParameters() && (a == k.update_product || a == k.update_column_sums)) {
      names.at.push_back("grad");
      names.first.push_back("grad");
      continue;
    }
    const size_t i =
        static_cast<size_t>(std::find(k.inputs.begin(), k.inputs.end(), a) - k.inputs.begin());
    const std::string in = "in" + std::to_string(i);
    names.at.push_back(in + "[i]");
    names.first.push_back(k.UniformInput(i) ? in : in + "[0]");
  }
  for (size_t j : outputs)
    names.store.push_back(k.InPlaceOf(j) >= 0 ? "in" + std::to_string(k.InPlaceOf(j))
                          : j == 0            ? std::string("out")
                                              : "out" + std::to_string(j));
  return names;
}

// `var g` = the gradient as the update sees it (maximize, coupled weight decay).
std::string EffectiveGrad(const webir::Node& n, bool decoupled, const Names& in) {
  std::string s = "  var g = " + in.at[1] + ";\n";
  if (Flag(n, "maximize")) s += "  g = -g;\n";
  double wd = Attr(n, "weight_decay");
  if (wd != 0 && !decoupled) s += "  g = g + " + F32(wd) + " * " + in.at[0] + ";\n";
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

std::string Moments(const webir::Node& n, const Names& in) {
  double beta1 = Attr(n, "beta1"), beta2 = Attr(n, "beta2");
  std::string w = F32(1.0 - beta1);
  return "  let w = " + w +
         ";\n"
         "  let m_old = " +
         in.at[2] +
         ";\n"
         "  let m = select(g - (g - m_old) * (1.0 - w), m_old + w * (g - m_old), abs(w) < 0.5);\n"
         "  let v = " +
         in.at[3] + " * " + F32(beta2) + " + " + F32(1.0 - beta2) + " * g * g;\n";
}

// 1 - beta^step. The literal comes from detmath, so the source (and its hash) does not depend on
// the host's libm. beta = 0 has no finite logarithm: then it is 1 from the first step on.
std::string BiasCorrection(double beta) {
  if (beta == 0) return "select(0.0, 1.0, step >= 1.0)";
  return "-expm1_f32(step * " + F32(detmath::Log(beta)) + ")";
}

// The stores of a part's outputs: `value(op)` is the WGSL value the op of each output computes
// (the variables of a body shared by all of them), stored where Names says.
template <typename ValueOf>
std::string Stores(const Module& m, const Kernel& k, const std::vector<size_t>& outputs,
                   const Names& in, const ValueOf& value) {
  std::string s;
  const std::vector<int> outs = k.Outputs();
  for (size_t j = 0; j < outputs.size(); ++j)
    s += "  " + in.store[j] + "[i] = " + value(m.graph().at(outs[outputs[j]]).op) + ";\n";
  return s;
}

// The body computing element i of one part (a parameter's update), its helpers added to
// `helpers`; empty when the op is none of this family's.
std::string Body(const Module& m, const Kernel& k, const std::vector<size_t>& outputs,
                 std::string& helpers) {
  const std::vector<int> outs = k.Outputs();
  const webir::Node& n = m.graph().at(outs[outputs.front()]);
  const Names in = NamesOf(m, k, outputs);
  std::string body;
  if (n.op == "sgd_update") {
    body = EffectiveGrad(n, false, in) + "  " + in.store[0] + "[i] = " + in.at[0] + " + " +
           F32(-Attr(n, "lr")) + " * g;\n";
  } else if (n.op == "momentum_update" || n.op == "momentum_velocity") {
    double momentum = Attr(n, "momentum");
    body = EffectiveGrad(n, false, in) + "  var buf = g;\n  var dir = g;\n";
    if (momentum != 0) {
      body += "  if (" + StepNumber(in.first[3]) + " > 1.0) { buf = " + in.at[2] + " * " +
              F32(momentum) + " + " + F32(1.0 - Attr(n, "dampening")) + " * g; }\n";
      body += Flag(n, "nesterov") ? "  dir = g + " + F32(momentum) + " * buf;\n"
                                  : std::string("  dir = buf;\n");
    }
    const std::string update = in.at[0] + " + " + F32(-Attr(n, "lr")) + " * dir";
    body += Stores(m, k, outputs, in, [&](const std::string& op) {
      return op == "momentum_velocity" ? std::string("buf") : update;
    });
  } else if (n.op == "adam_m" || n.op == "adam_v") {
    body = EffectiveGrad(n, Flag(n, "decoupled"), in) + Moments(n, in) + "  " + in.store[0] +
           (n.op == "adam_m" ? "[i] = m;\n" : "[i] = v;\n");
  } else if (n.op == "adam_update") {
    double lr = Attr(n, "lr"), wd = Attr(n, "weight_decay");
    bool decoupled = Flag(n, "decoupled");
    if (helpers.find(kExpm1Fn) == std::string::npos) helpers += kExpm1Fn;
    body = EffectiveGrad(n, decoupled, in) + Moments(n, in) +
           "  let step = " + StepNumber(in.first[4]) +
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
           "  var p = " +
           in.at[0] + ";\n" +
           (decoupled && wd != 0 ? "  p = p * " + F32(1.0 - lr * wd) + ";\n" : std::string()) +
           "  let denom = sqrt(v) / sqrt(bc2) + " + F32(Attr(n, "eps")) + ";\n" +
           Stores(m, k, outputs, in, [](const std::string& op) {
             return std::string(op == "adam_m"   ? "m"
                                : op == "adam_v" ? "v"
                                                 : "p + minus_step_size * m / denom");
           });
  }
  return body;
}

}  // namespace

// An optimizer kernel computes the shared part of its update once (the effective gradient, the
// moments) and stores each output's value; a merged kernel (Kernel::extra_outputs) stores several
// of them, each from the same expressions its own kernel evaluates. A kernel over several
// parameters (OptimizerParts) runs each part's body over its range of the invocations, and an
// output written in place is stored over its input, which every invocation reads first.
bool GenerateOptim(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kOp || !IsOptimizerOp(m, k.op)) return false;
  const std::vector<int> outs = k.Outputs();
  const std::vector<std::vector<size_t>> parts = OptimizerParts(m, k);
  std::string helpers;
  std::vector<std::string> bodies;
  int64_t total = 0;
  for (const std::vector<size_t>& part : parts) {
    bodies.push_back(Body(m, k, part, helpers));
    if (bodies.back().empty()) return false;
    total += m.graph().at(outs[part.front()]).type.elements();
  }
  // Pipelines use the layout derived from the shader, which drops unused bindings; an update that
  // ignores an input (t for plain SGD, param without weight decay) still names every binding.
  std::string uses;
  for (size_t b = 0; b < k.inputs.size(); ++b)
    uses += k.UniformInput(b) ? "  _ = in" + std::to_string(b) + ";\n"
                              : "  _ = arrayLength(&in" + std::to_string(b) + ");\n";
  if (parts.size() == 1) {
    out.source = Bindings(m, k) + helpers + "\n" + LinearEntry(total) + uses + bodies[0] + "}\n";
  } else {
    // Several parameters: invocation i updates element i of the first, then the second's elements
    // follow, each part a function of its own element index.
    std::string fns, dispatch;
    int64_t end = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      const std::string name = "part" + std::to_string(p);
      fns += "fn " + name + "(i: u32) {\n" + bodies[p] + "}\n";
      const int64_t begin = end;
      end += m.graph().at(outs[parts[p].front()]).type.elements();
      dispatch += "  if (i < " + U32(end) + ") { " + name + "(i" +
                  (begin ? " - " + U32(begin) : std::string()) + "); return; }\n";
    }
    out.source =
        Bindings(m, k) + helpers + fns + "\n" + LinearEntry(total) + uses + dispatch + "}\n";
  }
  out.workgroups = LinearGrid(total);
  return true;
}

std::string GradientUpdateFn(const Kernel& k, int gradient) {
  return gradient == k.update_product ? "update_product" : "update_column_sums";
}

std::string GradientUpdateFns(const Module& m, const Kernel& k) {
  if (!k.UpdatesParameters()) return "";
  const std::vector<int> outs = k.Outputs();
  std::string helpers, fns;
  for (const std::vector<size_t>& part : OptimizerParts(m, k)) {
    const int gradient = m.graph().at(outs[part.front()]).args.at(1);
    fns += "fn " + GradientUpdateFn(k, gradient) + "(i: u32, grad: f32) {\n" +
           Body(m, k, part, helpers) + "}\n";
  }
  return helpers + fns;
}

}  // namespace scellis::kernel::wgsl
