// WGSL for fused elementwise kernels and the expressions of each elementwise op. The expressions
// mirror kernel/ref/elementwise.cpp: relu and positive are selects so NaN behaves the same on both.
#include "kernel/emit/wgsl/codegen.h"
#include "kernel/ref/ref.h"

namespace scellis::kernel::wgsl {

std::string ElementwiseExpr(const std::string& op, const std::string& a, const std::string& b) {
  if (op == "add") return "(" + a + " + " + b + ")";
  if (op == "sub") return "(" + a + " - " + b + ")";
  if (op == "mul") return "(" + a + " * " + b + ")";
  if (op == "div") return "(" + a + " / " + b + ")";
  if (op == "relu") return "select(0.0, " + a + ", " + a + " > 0.0)";
  if (op == "positive") return "select(0.0, 1.0, " + a + " > 0.0)";
  if (op == "neg") return "(-" + a + ")";
  if (op == "exp") return "exp(" + a + ")";
  if (op == "log") return "log(" + a + ")";
  if (op == "sqrt") return "sqrt(" + a + ")";
  // Clamped: tanh(±15) is ±1 in f32, and some drivers overflow inside tanh for large inputs.
  if (op == "tanh") return "tanh(clamp(" + a + ", -15.0, 15.0))";
  if (op == "sigmoid") return "(1.0 / (1.0 + exp(-" + a + ")))";
  if (op == "gelu") return "gelu_exact(" + a + ")";
  if (op == "gelu_grad") return "(" + b + " * gelu_exact_grad(" + a + "))";
  return "";
}

std::string ElementwiseHelpers(const std::string& op) {
  // WGSL has no erf. Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7), evaluated in f32.
  static const std::string kErf =
      "fn erf_approx(x: f32) -> f32 {\n"
      "  let s = sign(x);\n"
      "  let z = abs(x);\n"
      "  let t = 1.0 / (1.0 + 0.3275911 * z);\n"
      "  let p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t "
      "* 1.061405429))));\n"
      "  return s * (1.0 - p * exp(-z * z));\n"
      "}\n";
  if (op == "gelu") {
    return kErf +
           "fn gelu_exact(x: f32) -> f32 { return 0.5 * x * (1.0 + erf_approx(x * "
           "0.70710678118654752)); }\n";
  }
  if (op == "gelu_grad") {
    return kErf +
           "fn gelu_exact_grad(x: f32) -> f32 {\n"
           "  let cdf = 0.5 * (1.0 + erf_approx(x * 0.70710678118654752));\n"
           "  let pdf = 0.39894228040143268 * exp(-0.5 * x * x);\n"
           "  return cdf + x * pdf;\n"
           "}\n";
  }
  return "";
}

bool GenerateElementwise(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kElementwise) return false;
  out = ElementwiseTile(m, k, 0, m.graph().at(k.output).type.elements());
  return true;
}

Generated ElementwiseTile(const Module& m, const Kernel& k, int64_t base, int64_t count) {
  Generated out;
  const TensorType& type = m.graph().at(k.output).type;
  std::vector<int64_t> sizes = type.sizes();
  const bool tiled = base != 0 || count != type.elements();

  std::string helpers, body;
  std::vector<std::string> seen_helpers;
  for (const ExprStep& s : k.expr) {
    std::string h = ElementwiseHelpers(s.op);
    if (!h.empty() &&
        std::find(seen_helpers.begin(), seen_helpers.end(), s.op) == seen_helpers.end()) {
      // gelu and gelu_grad share erf_approx: emit it once.
      if (h.find("fn erf_approx") != std::string::npos &&
          helpers.find("fn erf_approx") != std::string::npos)
        h = h.substr(h.find("}\n") + 2);
      helpers += h;
      seen_helpers.push_back(s.op);
    }
  }

  // Multi-index of the output element, needed only when some input is broadcast.
  std::vector<int64_t> row_major = RowMajorStrides(sizes);
  bool need_index = false;
  std::vector<std::vector<int64_t>> strides;
  for (int in : k.inputs) {
    strides.push_back(BroadcastStrides(m.graph().at(in).type.sizes(), sizes));
    if (strides.back() != row_major) need_index = true;
  }
  if (need_index) {
    // In a tile, `i` counts from the tile's first element; broadcast inputs are indexed by the
    // element's place in the whole output.
    body += tiled ? "  var rem = i + " + U32(base) + ";\n" : "  var rem = i;\n";
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      body +=
          "  let d" + std::to_string(d) + " = rem % " + U32(std::max<int64_t>(sizes[d], 1)) + ";\n";
      if (d) body += "  rem = rem / " + U32(std::max<int64_t>(sizes[d], 1)) + ";\n";
    }
  }
  for (size_t n = 0; n < k.inputs.size(); ++n) {
    std::string index = "i";
    if (strides[n] != row_major) {
      index.clear();
      for (size_t d = 0; d < sizes.size(); ++d) {
        if (!strides[n][d]) continue;
        if (!index.empty()) index += " + ";
        index += "d" + std::to_string(d) + " * " + U32(strides[n][d]);
      }
      if (index.empty()) index = "0u";
    }
    body += "  let x" + std::to_string(n) + " = in" + std::to_string(n) + "[" + index + "];\n";
  }
  // Appended rather than `"s" + std::to_string(...)`, which GCC 12 misreports under -Wrestrict.
  auto operand = [&](int o) {
    std::string name = IsStepRef(o) ? "s" : "x";
    name += std::to_string(IsStepRef(o) ? StepOf(o) : o);
    return name;
  };
  for (size_t s = 0; s < k.expr.size(); ++s) {
    const ExprStep& e = k.expr[s];
    std::string expr = e.op == "full"
                           ? F32(e.value)
                           : ElementwiseExpr(e.op, operand(e.operands[0]),
                                             e.operands.size() > 1 ? operand(e.operands[1]) : "");
    body += "  let s" + std::to_string(s) + " = " + expr + ";\n";
  }
  std::string result = "s" + std::to_string(k.expr.size() - 1);
  switch (type.dtype) {
    case DType::kF32:
      break;
    case DType::kBool:
      result = "select(0u, 1u, " + result + " != 0.0)";
      break;
    default:
      result = std::string(StorageType(type.dtype)) + "(" + result + ")";
  }
  body += "  out[i] = " + result + ";\n}\n";

  std::string title = tiled ? "// a tile of " + std::to_string(count) + " elements from " +
                                  std::to_string(base) + "\n"
                            : "";
  out.source = title + Bindings(m, k) + helpers + "\n" + LinearEntry(count) + body;
  out.workgroups = LinearGrid(count);
  return out;
}

}  // namespace scellis::kernel::wgsl
