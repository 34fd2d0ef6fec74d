// WGSL for fused elementwise kernels and the expressions of each elementwise op. The expressions
// mirror kernel/ref/elementwise.cpp, NaN and infinities included (PyTorch's semantics, stated per
// op in ops/builtin.cpp). WGSL lets an implementation assume no NaN or infinity occurs, and leaves
// max/min/clamp and log/sqrt of negatives unspecified, so every special value an op must treat
// specially is tested on the bits (kSpecialValueFns), where no float rewrite can drop the test.
#include <cmath>

#include "kernel/emit/wgsl/codegen.h"
#include "kernel/ref/ref.h"

namespace scellis::kernel::wgsl {

std::string ElementwiseExpr(const std::string& op, const std::string& a, const std::string& b,
                            const std::string& c) {
  if (op == "add") return "(" + a + " + " + b + ")";
  if (op == "sub") return "(" + a + " - " + b + ")";
  if (op == "mul") return "(" + a + " * " + b + ")";
  if (op == "div") return "(" + a + " / " + b + ")";
  if (op == "maximum") return "maximum_f32(" + a + ", " + b + ")";
  if (op == "minimum") return "minimum_f32(" + a + ", " + b + ")";
  if (op == "max_share") return "max_share_f32(" + a + ", " + b + ")";
  if (op == "eq") return "eq_f32(" + a + ", " + b + ")";
  if (op == "ne") return "ne_f32(" + a + ", " + b + ")";
  if (op == "lt") return "lt_f32(" + a + ", " + b + ")";
  if (op == "le") return "le_f32(" + a + ", " + b + ")";
  if (op == "gt") return "gt_f32(" + a + ", " + b + ")";
  if (op == "ge") return "ge_f32(" + a + ", " + b + ")";
  if (op == "where") return "select(" + c + ", " + b + ", " + a + " != 0.0)";
  if (op == "masked_fill") return "select(" + a + ", " + c + ", " + b + " != 0.0)";
  if (op == "clamp") return "clamp_f32(" + a + ", " + b + ", " + c + ")";
  // The value as it is: a cast to bool is made 0 or 1 by ExpressionSteps, which knows the node's
  // dtype; casts that touch an integer are IntegerExpr's.
  if (op == "cast") return a;
  if (op == "relu") return "relu_f32(" + a + ")";
  if (op == "positive") return "positive_f32(" + a + ")";
  if (op == "neg") return "(-" + a + ")";
  if (op == "exp") return "exp_f32(" + a + ")";
  if (op == "log") return "log_f32(" + a + ")";
  if (op == "sqrt") return "sqrt_f32(" + a + ")";
  if (op == "tanh") return "tanh_f32(" + a + ")";
  if (op == "sigmoid") return "sigmoid_f32(" + a + ")";
  if (op == "gelu") return "gelu_exact(" + a + ")";
  if (op == "gelu_grad") return "(" + b + " * gelu_exact_grad(" + a + "))";
  return "";
}

namespace {

bool IsIntegerDType(DType t) {
  return t == DType::kI32 || t == DType::kU32;
}

// The WGSL type a value of `t` has inside an elementwise kernel: integers in their own type, so
// they are never rounded; f32, f16 (rounded by each f16 step) and bool (0.0 or 1.0) in f32.
const char* RegisterType(DType t) {
  return t == DType::kI32 ? "i32" : t == DType::kU32 ? "u32" : "f32";
}

// A conversion of `a` from `from` to `to` where one of them is an integer, as the reference's
// IntegerStep converts: f32 to an integer toward zero, saturating, NaN to 0; an integer to f32
// rounded to nearest even; between i32 and u32 the bits kept (modulo 2^32); bool is 0.0 or 1.0.
std::string IntegerCast(const std::string& a, DType from, DType to) {
  if (from == to) return a;
  if (to == DType::kBool)
    return "select(0.0, 1.0, " + a + " != " + (from == DType::kI32 ? "0i" : "0u") + ")";
  if (IsIntegerDType(from) && IsIntegerDType(to))
    return std::string("bitcast<") + RegisterType(to) + ">(" + a + ")";
  if (from == DType::kBool) return std::string(RegisterType(to)) + "(" + a + ")";
  if (IsIntegerDType(from)) return std::string(RegisterType(from)) + "_to_f32(" + a + ")";
  return std::string("f32_to_") + RegisterType(to) + "(" + a + ")";
}

// The expression of an elementwise step that computes on integers (an operand or the result is
// i32 or u32). WGSL's i32 and u32 arithmetic wraps modulo 2^32, as the reference's does; max,
// min and the comparisons are exact on integers.
std::string IntegerExpr(const std::string& op, const std::vector<std::string>& args,
                        const std::vector<DType>& dtypes, DType out) {
  auto arg = [&](size_t i) { return i < args.size() ? args[i] : std::string(); };
  const std::string a = arg(0), b = arg(1), c = arg(2);
  if (op == "add") return "(" + a + " + " + b + ")";
  if (op == "sub") return "(" + a + " - " + b + ")";
  if (op == "mul") return "(" + a + " * " + b + ")";
  if (op == "neg") return "(-" + a + ")";
  if (op == "maximum") return "max(" + a + ", " + b + ")";
  if (op == "minimum") return "min(" + a + ", " + b + ")";
  if (op == "clamp") return "min(max(" + a + ", " + b + "), " + c + ")";
  const std::pair<const char*, const char*> comparisons[] = {
      {"eq", "=="}, {"ne", "!="}, {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}};
  for (const auto& [name, symbol] : comparisons)
    if (op == name) return "select(0.0, 1.0, " + a + " " + symbol + " " + b + ")";
  if (op == "where") return "select(" + c + ", " + b + ", " + a + " != 0.0)";
  if (op == "masked_fill") return "select(" + a + ", " + c + ", " + b + " != 0.0)";
  if (op == "cast") return IntegerCast(a, dtypes.at(0), out);
  if (op == "bitwise_and") return "(" + a + " & " + b + ")";
  if (op == "bitwise_or") return "(" + a + " | " + b + ")";
  if (op == "bitwise_xor") return "(" + a + " ^ " + b + ")";
  // WGSL takes a shift count modulo 32, as torch does not: a count outside [0, 32) is selected
  // away as the reference's IntShiftLeft and IntShiftRight treat it (the count is masked so that
  // a constant one is never a shader-creation error).
  const bool i32 = !dtypes.empty() && dtypes[0] == DType::kI32;
  const std::string in_range = i32 ? "(" + b + " >= 0i && " + b + " < 32i)" : "(" + b + " < 32u)";
  const std::string count = i32 ? "(u32(" + b + ") & 31u)" : "(" + b + " & 31u)";
  if (op == "shift_left")
    return "select(" + std::string(i32 ? "0i" : "0u") + ", " + a + " << " + count + ", " +
           in_range + ")";
  if (op == "shift_right")
    return i32 ? "(" + a + " >> select(31u, " + count + ", " + in_range + "))"
               : "select(0u, " + a + " >> " + count + ", " + in_range + ")";
  return "";
}

}  // namespace

// An f32 rounded to the nearest f16 (even on ties, overflow to infinity, NaN kept), as an f32:
// the reference's RoundToHalf (FloatToHalf, then HalfToFloat) spelled out on the bits, since WGSL
// leaves the rounding of an f32 -> f16 conversion to the implementation. Needs no f16 type.
const char* const kRoundToHalf =
    "fn round_f16(x: f32) -> f32 {\n"
    "  let b = bitcast<u32>(x);\n"
    "  let sign = (b >> 16u) & 0x8000u;\n"
    "  let a = b & 0x7fffffffu;\n"
    "  var h = 0u;\n"
    "  if (a >= 0x7f800000u) {\n"
    "    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);\n"
    "  } else if (a >= 0x477ff000u) {\n"
    "    h = 0x7c00u;\n"
    "  } else if (a < 0x38800000u) {\n"
    "    if (a >= 0x33000000u) {\n"
    "      let m = (a & 0x7fffffu) | 0x800000u;\n"
    "      let shift = 126u - (a >> 23u);\n"
    "      h = m >> shift;\n"
    "      let rem = m & ((1u << shift) - 1u);\n"
    "      let half = 1u << (shift - 1u);\n"
    "      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }\n"
    "    }\n"
    "  } else {\n"
    "    h = (a >> 13u) - (112u << 10u);\n"
    "    let rem = a & 0x1fffu;\n"
    "    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }\n"
    "  }\n"
    "  let e = (h >> 10u) & 0x1fu;\n"
    "  let mant = h & 0x3ffu;\n"
    "  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }\n"
    "  if (e == 0u) {\n"
    "    let v = f32(mant) * 5.9604644775390625e-8;\n"
    "    return select(v, -v, sign != 0u);\n"
    "  }\n"
    "  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));\n"
    "}\n";

std::vector<std::string> ElementwiseHelpers(const std::string& op) {
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
  static const std::string kSpecial = kSpecialValueFns;
  // An inlined draw (fuse-generators): the counter hash, whose step_u32 tests NaN on the bits.
  if (op == "uniform") return {kSpecial, kCounterHashFns};
  // WGSL's max and min are unspecified for NaN and signed zeros: NaN is tested on the bits, and
  // the comparison then only sees ordered values.
  if (op == "maximum") {
    return {kSpecial,
            "fn maximum_f32(a: f32, b: f32) -> f32 {\n"
            "  if (is_nan_f32(a) || is_nan_f32(b)) { return nan_f32(); }\n"
            "  return select(b, a, a >= b);\n"
            "}\n"};
  }
  if (op == "minimum") {
    return {kSpecial,
            "fn minimum_f32(a: f32, b: f32) -> f32 {\n"
            "  if (is_nan_f32(a) || is_nan_f32(b)) { return nan_f32(); }\n"
            "  return select(b, a, a <= b);\n"
            "}\n"};
  }
  if (op == "max_share") {
    return {kSpecial,
            "fn max_share_f32(a: f32, b: f32) -> f32 {\n"
            "  if (is_nan_f32(a) || is_nan_f32(b)) { return 1.0; }\n"
            "  return select(select(0.0, 0.5, a == b), 1.0, a > b);\n"
            "}\n"};
  }
  // Comparisons are made on ordered values only: a NaN operand is found on the bits (WGSL may
  // assume there is none), and gives false, or true for `ne`, as IEEE 754 and PyTorch. The
  // result is the bool as 0.0 or 1.0.
  const std::pair<const char*, const char*> comparisons[] = {
      {"eq", "=="}, {"ne", "!="}, {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}};
  for (const auto& [name, symbol] : comparisons) {
    if (op != name) continue;
    const std::string on_nan = op == "ne" ? "1.0" : "0.0";
    return {kSpecial, "fn " + op +
                          "_f32(a: f32, b: f32) -> f32 {\n"
                          "  if (is_nan_f32(a) || is_nan_f32(b)) { return " +
                          on_nan +
                          "; }\n"
                          "  return select(0.0, 1.0, a " +
                          symbol +
                          " b);\n"
                          "}\n"};
  }
  // An f32 index ramp converts its u32 indices as a cast does.
  if (op == "cast" || op == "arange") {
    // Integers <-> f32, as the reference converts (kernel/ref/ref.h): to i32 or u32 toward zero,
    // saturating, NaN to 0, tested on the bits; from i32 or u32 rounded to nearest even, made
    // exact by converting the high and low halves alone (each fits an f32's 24 bits) and adding
    // them once, since WGSL leaves the rounding of a direct conversion to the implementation.
    return {kSpecial,
            "fn f32_to_i32(x: f32) -> i32 {\n"
            "  if (is_nan_f32(x)) { return 0i; }\n"
            "  if (x >= 2147483648.0) { return 2147483647i; }\n"
            "  if (x <= -2147483648.0) { return i32(-2147483648); }\n"
            "  return i32(x);\n"
            "}\n"
            "fn f32_to_u32(x: f32) -> u32 {\n"
            "  if (is_nan_f32(x) || x <= 0.0) { return 0u; }\n"
            "  if (x >= 4294967296.0) { return 4294967295u; }\n"
            "  return u32(x);\n"
            "}\n"
            "fn i32_to_f32(v: i32) -> f32 {\n"
            "  return f32(v & i32(-65536)) + f32(v & 65535i);\n"
            "}\n"
            "fn u32_to_f32(v: u32) -> f32 {\n"
            "  return f32(v & 0xffff0000u) + f32(v & 0xffffu);\n"
            "}\n"};
  }
  if (op == "clamp") {
    // WGSL's clamp is unspecified for NaN and for lo > hi: torch.clamp's minimum(maximum(a, lo),
    // hi) spelled out, with NaN found on the bits.
    return {kSpecial,
            "fn clamp_f32(a: f32, lo: f32, hi: f32) -> f32 {\n"
            "  if (is_nan_f32(a)) { return a; }\n"
            "  let m = select(a, lo, a < lo);\n"
            "  return select(m, hi, m > hi);\n"
            "}\n"};
  }
  if (op == "relu") {
    // -0 stays -0 and NaN stays NaN, as torch.relu gives them.
    return {kSpecial,
            "fn relu_f32(x: f32) -> f32 { return select(x, 0.0, is_below_zero_f32(x)); }\n"};
  }
  if (op == "positive") {
    // 0 only for x <= 0: NaN gives 1, so relu's gradient at NaN passes the upstream gradient, as
    // PyTorch's threshold_backward does.
    return {kSpecial,
            "fn positive_f32(x: f32) -> f32 {\n"
            "  return select(1.0, 0.0, is_below_zero_f32(x) || (bitcast<u32>(x) & 0x7fffffffu) == "
            "0u);\n"
            "}\n"};
  }
  if (op == "exp") {
    return {kSpecial,
            "fn exp_f32(x: f32) -> f32 {\n"
            "  if (is_nan_f32(x)) { return x; }\n"
            "  return exp(x);\n"
            "}\n"};
  }
  if (op == "log") {
    return {kSpecial,
            "fn log_f32(x: f32) -> f32 {\n"
            "  if (is_nan_f32(x)) { return x; }\n"
            "  if ((bitcast<u32>(x) & 0x7fffffffu) == 0u) { return -inf_f32(); }\n"
            "  if ((bitcast<u32>(x) & 0x80000000u) != 0u) { return nan_f32(); }\n"
            "  return log(x);\n"
            "}\n"};
  }
  if (op == "sqrt") {
    return {kSpecial,
            "fn sqrt_f32(x: f32) -> f32 {\n"
            "  if (is_nan_f32(x) || (bitcast<u32>(x) & 0x7fffffffu) == 0u) { return x; }\n"
            "  if ((bitcast<u32>(x) & 0x80000000u) != 0u) { return nan_f32(); }\n"
            "  return sqrt(x);\n"
            "}\n"};
  }
  if (op == "tanh") {
    // Clamped: tanh(±15) is ±1 in f32, and some drivers overflow inside tanh for large inputs.
    // The clamp would turn NaN into ±15, hence the test first.
    return {kSpecial,
            "fn tanh_f32(x: f32) -> f32 {\n"
            "  if (is_nan_f32(x)) { return x; }\n"
            "  return tanh(clamp(x, -15.0, 15.0));\n"
            "}\n"};
  }
  if (op == "sigmoid") {
    return {kSpecial,
            "fn sigmoid_f32(x: f32) -> f32 {\n"
            "  if (is_nan_f32(x)) { return x; }\n"
            "  return 1.0 / (1.0 + exp(-x));\n"
            "}\n"};
  }
  if (op == "gelu") {
    return {kSpecial, kErf,
            "fn gelu_exact(x: f32) -> f32 {\n"
            "  if (is_nan_f32(x)) { return x; }\n"
            "  if (bitcast<u32>(x) == 0xff800000u) { return nan_f32(); }  // -inf * 0\n"
            "  return 0.5 * x * (1.0 + erf_approx(x * 0.70710678118654752));\n"
            "}\n"};
  }
  if (op == "gelu_grad") {
    // PyTorch's gelu backward is NaN at ±inf (inf * 0 in x * pdf).
    return {kSpecial, kErf,
            "fn gelu_exact_grad(x: f32) -> f32 {\n"
            "  if (is_nan_f32(x) || (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u) {\n"
            "    return nan_f32();\n"
            "  }\n"
            "  let cdf = 0.5 * (1.0 + erf_approx(x * 0.70710678118654752));\n"
            "  let pdf = 0.39894228040143268 * exp(-0.5 * x * x);\n"
            "  return cdf + x * pdf;\n"
            "}\n"};
  }
  return {};
}

// `let <name> = ...;` reading the shift's operand (kernel input `in<n>`) at the output element's
// index (d0..d<rank-1>) moved back by the shifts, with the boundary applied per axis in i32, the
// same arithmetic as the reference's ShiftedRead. A zero-boundary read outside gives 0.0 from a
// clamped, always valid, index.
std::string ShiftedLoad(const Module& m, const Kernel& k, const ExprStep& e, size_t out_rank,
                        const std::string& name) {
  const webir::Node& node = m.graph().at(e.node);
  const int input = e.operands.at(0);
  const TensorType& in_type = m.graph().at(k.inputs[input]).type;
  const std::vector<int64_t> sizes = in_type.sizes();
  const std::vector<int64_t> shifts = node.attrs.at("shifts").get<std::vector<int64_t>>();
  const std::string boundary = node.attrs.at("boundary").get<std::string>();
  const size_t lead = out_rank - sizes.size();
  std::string code = "  var " + name + "_at = 0i;\n  var " + name + "_in = true;\n";
  for (size_t j = 0; j < sizes.size(); ++j) {
    const int64_t n = std::max<int64_t>(sizes[j], 1);
    const std::string c = name + "_c" + std::to_string(j);
    std::string coord = sizes[j] == 1 ? "0i" : "i32(d" + std::to_string(lead + j) + ")";
    if (shifts[j]) coord += " - " + std::to_string(shifts[j]) + "i";
    code += "  var " + c + " = " + coord + ";\n";
    if (shifts[j] || sizes[j] == 1) {
      const std::string last = std::to_string(n - 1) + "i";
      if (boundary == "zero")
        code += "  " + name + "_in = " + name + "_in && " + c + " >= 0i && " + c + " <= " + last +
                ";\n";
      if (boundary == "wrap")
        code += "  " + c + " = ((" + c + " % " + std::to_string(n) + "i) + " + std::to_string(n) +
                "i) % " + std::to_string(n) + "i;\n";
      else
        code += "  " + c + " = clamp(" + c + ", 0i, " + last + ");\n";
    }
    code += "  " + name + "_at = " + name + "_at * " + std::to_string(n) + "i + " + c + ";\n";
  }
  const std::string load = "in" + std::to_string(input) + "[u32(" + name + "_at)]";
  const std::string value = in_type.dtype == DType::kF32 ? load : "f32(" + load + ")";
  return code + "  let " + name + " = select(0.0, " + value + ", " + name + "_in);\n";
}

namespace {

// `let <name> = ...;` reading the butterfly's operand (kernel input `in<n>`) at the output
// element's index (d0..d<rank-1>) with its coordinate along the axis XOR the mask, as the
// reference's PartnerRead; the value in the register type (a bool as 0.0 or 1.0).
std::string PartnerLoad(const Module& m, const Kernel& k, const ExprStep& e, size_t out_rank,
                        const std::string& name) {
  const webir::Node& node = m.graph().at(e.node);
  const int input = e.operands.at(0);
  const TensorType& in_type = m.graph().at(k.inputs[input]).type;
  const std::vector<int64_t> sizes = in_type.sizes();
  const std::vector<int64_t> strides = RowMajorStrides(sizes);
  const size_t axis = node.attrs.at("axis").get<size_t>();
  const int64_t mask = node.attrs.at("mask").get<int64_t>();
  const size_t lead = out_rank - sizes.size();
  std::string at;
  for (size_t j = 0; j < sizes.size(); ++j) {
    if (sizes[j] == 1) continue;  // a broadcast axis reads coordinate 0
    std::string c = "d" + std::to_string(lead + j);
    if (j == axis && mask) c = "(" + c + " ^ " + U32(mask) + ")";
    if (!at.empty()) at += " + ";
    at += strides[j] == 1 ? c : c + " * " + U32(strides[j]);
  }
  if (at.empty()) at = "0u";
  const std::string load = "in" + std::to_string(input) + "[" + at + "]";
  return "  let " + name + " = " + (in_type.dtype == DType::kBool ? "f32(" + load + ")" : load) +
         ";\n";
}

// The value of an arange step: the output element's index (d0..d<rank-1>) along the ramp's axis,
// in the step's dtype, as the reference's IndexRamp.
std::string RampValue(const Module& m, const Kernel& k, const ExprStep& e) {
  const webir::Node& node = m.graph().at(e.node);
  const std::vector<int64_t> sizes = node.type.sizes();
  const size_t axis = node.attrs.at("axis").get<size_t>();
  const size_t out_rank = m.graph().at(k.output).type.sizes().size();
  const std::string index =
      sizes[axis] == 1 ? "0u" : "d" + std::to_string(out_rank - sizes.size() + axis);
  switch (node.type.dtype) {
    case DType::kI32:
      return "i32(" + index + ")";
    case DType::kU32:
      return index;
    default:
      return "u32_to_f32(" + index + ")";
  }
}

}  // namespace

std::string ExpressionHelpers(const Module& m, const Kernel& k) {
  // Ops share helpers (gelu and gelu_grad both need erf): each is emitted once, first use first.
  std::string helpers;
  std::vector<std::string> emitted;
  for (const ExprStep& s : k.expr) {
    // A non-finite literal (clamp's missing bound) is made from its bits at run time: as a
    // constant expression it would be a shader-creation error.
    std::vector<std::string> needs = ElementwiseHelpers(s.op);
    if (s.op == "full" && !std::isfinite(s.value)) needs.push_back(kSpecialValueFns);
    if (s.op != "full" && m.graph().at(s.node).type.dtype == DType::kF16)
      needs.push_back(kRoundToHalf);
    for (const std::string& h : needs) {
      if (std::find(emitted.begin(), emitted.end(), h) != emitted.end()) continue;
      helpers += h;
      emitted.push_back(h);
    }
  }
  return helpers;
}

std::string ExpressionSteps(const Module& m, const Kernel& k, const ShiftedLoadFn& shifted_load) {
  std::string body;
  // Appended rather than `"s" + std::to_string(...)`, which GCC 12 misreports under -Wrestrict.
  auto operand = [&](int o) {
    std::string name = IsStepRef(o) ? "s" : "x";
    name += std::to_string(IsStepRef(o) ? StepOf(o) : o);
    return name;
  };
  auto dtype_of = [&](int o) {
    return m.graph().at(IsStepRef(o) ? k.expr[StepOf(o)].node : k.inputs[o]).type.dtype;
  };
  for (size_t s = 0; s < k.expr.size(); ++s) {
    const ExprStep& e = k.expr[s];
    if (IsPermutedLoad(e.op)) {
      body += shifted_load(e, "s" + std::to_string(s));
      continue;
    }
    if (e.op == "arange") {
      body += "  let s" + std::to_string(s) + " = " + RampValue(m, k, e) + ";\n";
      continue;
    }
    if (e.op == "uniform") {
      // As the uniform kernel computes it (RandomTile), at the element's index in the tensor.
      body += "  let s" + std::to_string(s) + " = f32(stream_bits(" +
              U32(ref::RandomSeed(m.graph().at(e.node))) + ", step_u32(" +
              operand(e.operands.at(0)) + "), gi) >> 8u) * (1.0 / 16777216.0);\n";
      continue;
    }
    const DType dtype = m.graph().at(e.node).type.dtype;
    std::vector<std::string> args;
    std::vector<DType> dtypes;
    bool integer = IsIntegerDType(dtype);
    for (int o : e.operands) {
      args.push_back(operand(o));
      dtypes.push_back(dtype_of(o));
      integer |= IsIntegerDType(dtypes.back());
    }
    auto arg = [&](size_t i) { return i < args.size() ? args[i] : ""; };
    std::string expr;
    if (e.op == "full" && dtype == DType::kI32) {
      expr = "i32(" + std::to_string(static_cast<int64_t>(e.value)) + ")";
    } else if (e.op == "full" && dtype == DType::kU32) {
      expr = std::to_string(static_cast<int64_t>(e.value)) + "u";
    } else if (e.op == "full") {
      // An f16 constant is its value rounded to f16, as the reference's.
      const double value =
          dtype == DType::kF16 ? HalfToFloat(FloatToHalf(static_cast<float>(e.value))) : e.value;
      expr = std::isnan(value)   ? "nan_f32()"
             : std::isinf(value) ? (value > 0 ? "inf_f32()" : "-inf_f32()")
                                 : F32(value);
    } else if (integer) {
      expr = IntegerExpr(e.op, args, dtypes, dtype);
    } else {
      expr = ElementwiseExpr(e.op, arg(0), arg(1), arg(2));
      // A cast to bool makes its value 0 or 1 here, so later steps see the bool; the bits are
      // tested, as torch's conversion: every value but +-0 is true, NaN included.
      if (e.op == "cast" && dtype == DType::kBool)
        expr = "select(0.0, 1.0, (bitcast<u32>(" + expr + ") & 0x7fffffffu) != 0u)";
    }
    // f16 values live in f32 registers: an f16 step computes in f32 and rounds once.
    if (e.op != "full" && dtype == DType::kF16) expr = "round_f16(" + expr + ")";
    body += "  let s" + std::to_string(s) + " = " + expr + ";\n";
  }
  return body;
}

bool GenerateElementwise(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kElementwise) return false;
  out = ElementwiseTile(m, k, 0, m.graph().at(k.output).type.elements());
  return true;
}

std::string RegisterValue(DType t, const std::string& load) {
  // Loads keep f32 and integers in their own types (RegisterType); a bool reads as 0.0 or 1.0,
  // an f16 as its value in f32 (exact).
  return t == DType::kBool || t == DType::kF16 ? "f32(" + load + ")" : load;
}

std::string StorageValue(DType t, const std::string& value) {
  switch (t) {
    case DType::kF32:
    case DType::kI32:
    case DType::kU32:
      return value;  // the register is the storage type
    case DType::kBool:
      // Bool values are 0.0 or 1.0 in the register (comparisons and casts make only those).
      return "select(0u, 1u, " + value + " != 0.0)";
    default:
      return std::string(StorageType(t)) + "(" + value + ")";
  }
}

Generated ElementwiseTile(const Module& m, const Kernel& k, int64_t base, int64_t count) {
  if (const auto& s = k.elementwise_schedule;
      s && s->width > 1 && base % s->width == 0 && count % s->width == 0 && count > 0)
    return VectorTile(m, k, *s, base, count);
  Generated out;
  const TensorType& type = m.graph().at(k.output).type;
  std::vector<int64_t> sizes = type.sizes();
  const bool tiled = base != 0 || count != type.elements();

  const std::string helpers = ExpressionHelpers(m, k);
  std::string body;

  // Multi-index of the output element, needed only when some input is broadcast.
  std::vector<int64_t> row_major = RowMajorStrides(sizes);
  bool need_index = false;
  std::vector<bool> read_directly(k.inputs.size(), false);
  for (const ExprStep& e : k.expr) {
    if (IsPermutedLoad(e.op) || e.op == "arange") need_index = true;
    for (int o : e.operands)
      if (!IsStepRef(o) && !IsPermutedLoad(e.op)) read_directly[o] = true;
  }
  std::vector<std::vector<int64_t>> strides;
  for (int in : k.inputs) {
    strides.push_back(BroadcastStrides(m.graph().at(in).type.sizes(), sizes));
    if (strides.back() != row_major) need_index = true;
  }
  if (std::any_of(k.expr.begin(), k.expr.end(),
                  [](const ExprStep& e) { return e.op == "uniform"; }))
    body += "  let gi = i" + (base & 0xffffffff ? " + " + U32(base & 0xffffffff) : "") + ";\n";
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
    if (!read_directly[n]) continue;
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
    const std::string load = "in" + std::to_string(n) + "[" + index + "]";
    body += "  let x" + std::to_string(n) + " = " +
            RegisterValue(m.graph().at(k.inputs[n]).type.dtype, load) + ";\n";
  }
  body += ExpressionSteps(m, k, [&](const ExprStep& e, const std::string& name) {
    return e.op == "butterfly" ? PartnerLoad(m, k, e, sizes.size(), name)
                               : ShiftedLoad(m, k, e, sizes.size(), name);
  });
  body +=
      "  out[i] = " + StorageValue(type.dtype, "s" + std::to_string(k.expr.size() - 1)) + ";\n}\n";

  std::string title = tiled ? "// a tile of " + std::to_string(count) + " elements from " +
                                  std::to_string(base) + "\n"
                            : "";
  out.source = title + Bindings(m, k) + helpers + "\n" + LinearEntry(count) + body;
  out.workgroups = LinearGrid(count);
  return out;
}

}  // namespace scellis::kernel::wgsl
