// The built-in ops. Each entry is the whole specification of an op except its rules, which live
// on the rungs that apply them: shape and gradient in webir/ops/<family>.cpp, the CPU reference in
// kernel/ref/<family>.cpp, the WGSL in kernel/emit/wgsl/<family>.cpp.
#include <limits>

#include "ops/op_table.h"

namespace scellis::ops {
namespace {

using policy::ToleranceClass;

Port Operand(const char* name) {
  return {name, PortRole::kOperand};
}

// Data movement copies elements as they are, so every storage type moves exactly.
Port AnyDTypeOperand(const char* name) {
  return {
      name, PortRole::kOperand, {DType::kF32, DType::kF16, DType::kI32, DType::kU32, DType::kBool}};
}

// Masks and their comparisons: bool is stored as u32 0/1 and computed as 0.0/1.0 in the f32
// register of an elementwise kernel, so f32 and bool go through the same kernels.
Port MaskOrF32Operand(const char* name) {
  return {name, PortRole::kOperand, {DType::kF32, DType::kBool}};
}

// Exact integer arithmetic beside f32: i32 and u32 compute in integer registers on every backend
// (never through f32), wrapping modulo 2^32 as two's complement, as torch's int32 does.
Port NumericOperand(const char* name) {
  return {name, PortRole::kOperand, {DType::kF32, DType::kI32, DType::kU32}};
}

// As NumericOperand, and f16: computed in f32 and rounded once to f16 (see kHalfRule).
Port ArithmeticOperand(const char* name) {
  return {name, PortRole::kOperand, {DType::kF32, DType::kF16, DType::kI32, DType::kU32}};
}

Port FloatOperand(const char* name) {
  return {name, PortRole::kOperand, {DType::kF32, DType::kF16}};
}

// Operands that are compared or selected: every dtype.
Port ComparableOperand(const char* name) {
  return {
      name, PortRole::kOperand, {DType::kF32, DType::kF16, DType::kI32, DType::kU32, DType::kBool}};
}

const char* kHalfRule =
    "; f16 operands are widened to f32 (exactly), the op computed in f32 and its result rounded "
    "once to f16, to nearest even, on every backend: for + - * / that is IEEE f16 arithmetic "
    "exactly where the f32 operation is correctly rounded (f32's 24 bits are at least 2 * 11 + "
    "2, so the double rounding is innocuous; WGSL's f32 division is not correctly rounded)";

const char* kIntegerRule =
    "; i32 and u32 are exact integer arithmetic that wraps modulo 2^32 (two's complement, as "
    "torch's int32 overflow does), never through f32";

void AddSourceOps(OpTable& t) {
  const char* none = "exact (no arithmetic)";
  auto shape = Attr{"shape", AttrType::kShape, nullptr, true};
  auto dtype = Attr{"dtype", AttrType::kString, "f32", false};
  auto name = Attr{"name", AttrType::kString, nullptr, false};
  auto carry = Attr{"carry", AttrType::kString, nullptr, false};
  t.Add({.name = "input",
         .min_version = 1,
         .ports = {},
         .attrs = {shape,
                   {"data", AttrType::kNumbers},
                   dtype,
                   name,
                   carry,
                   {"stream", AttrType::kBool, false}},
         .kind = OpKind::kSource,
         .tolerance = ToleranceClass::kExact,
         .determinism = none,
         .summary = "a tensor given inline (`data`, flat, row-major) or fed per run; `stream`: a "
                    "dataset of rows (its first dimension) that a run may process in chunks "
                    "when the whole does not fit the budget",
         .nan = "fed values pass as they are (JSON data has no NaN or infinity)"});
  t.Add(
      {.name = "param",
       .min_version = 1,
       .ports = {},
       .attrs = {shape, {"init", AttrType::kObject, nullptr, true}, dtype, name, carry},
       .kind = OpKind::kSource,
       .tolerance = ToleranceClass::kExact,
       .determinism = "exact; counter-based initializer: element i is a pure function of (seed, i)",
       .summary = "a trainable tensor with a seeded initializer",
       .nan = "initializers give finite values"});
  t.Add({.name = "full",
         .min_version = 1,
         .ports = {},
         .attrs = {shape, {"value", AttrType::kNumber, nullptr, true}, dtype, name},
         .kind = OpKind::kSource,
         .tolerance = ToleranceClass::kExact,
         .determinism = none,
         .summary = "a tensor filled with one value",
         .nan = "the value is a finite JSON number"});
}

void AddElementwiseOps(OpTable& t) {
  // `integer`: the op also takes f16, i32 and u32 operands (of one dtype, which the result has);
  // `half`: f16 beside f32.
  auto binary = [&](const char* name, int version, ToleranceClass tol, bool differentiable,
                    const std::string& summary, const char* nan, bool integer = false,
                    bool half = false) {
    auto port = [&](const char* p) {
      return integer ? ArithmeticOperand(p) : half ? FloatOperand(p) : Operand(p);
    };
    t.Add({.name = name,
           .min_version = version,
           .ports = {port("a"), port("b")},
           .attrs = {{"scalar", AttrType::kNumber}},
           .kind = OpKind::kElementwise,
           .differentiable = differentiable,
           .tolerance = tol,
           .determinism = std::string("one correctly rounded operation per element") +
                          (integer ? kIntegerRule : "") + (integer || half ? kHalfRule : ""),
           .summary = summary,
           .nan = nan});
  };
  auto unary = [&](const char* name, int version, ToleranceClass tol, bool differentiable,
                   const std::string& determinism, const char* summary, const char* nan,
                   Port a = Operand("a")) {
    t.Add({.name = name,
           .min_version = version,
           .ports = {a},
           .attrs = {},
           .kind = OpKind::kElementwise,
           .differentiable = differentiable,
           .tolerance = tol,
           .determinism = determinism,
           .summary = summary,
           .nan = nan});
  };
  const std::string integer_scalar =
      "; with i32 or u32 operands the scalar is an integer of that dtype's range";
  binary("add", 1, ToleranceClass::kExact, true, "a + b, or a + scalar" + integer_scalar,
         "IEEE 754, as PyTorch: a NaN operand gives NaN, inf + -inf gives NaN", true);
  binary("sub", 1, ToleranceClass::kExact, true, "a - b, or a - scalar" + integer_scalar,
         "IEEE 754, as PyTorch: a NaN operand gives NaN, inf - inf gives NaN", true);
  binary("mul", 1, ToleranceClass::kExact, true, "a * b, or a * scalar" + integer_scalar,
         "IEEE 754, as PyTorch: a NaN operand gives NaN, 0 * inf gives NaN", true);
  binary("div", 2, ToleranceClass::kTight, true, "a / b (WGSL division is within 2.5 ulp)",
         "IEEE 754, as PyTorch: x / 0 is +-inf for x != 0, 0 / 0, inf / inf and a NaN operand "
         "give NaN",
         false, true);
  binary("maximum", 3, ToleranceClass::kExact, true,
         "the larger of a and b (or scalar); a where they are equal" + integer_scalar,
         "as torch.maximum: a NaN operand gives NaN; maximum(-0, +0) is a (-0), maximum(+0, -0) "
         "is a (+0)",
         true);
  binary("minimum", 3, ToleranceClass::kExact, true,
         "the smaller of a and b (or scalar); a where they are equal" + integer_scalar,
         "as torch.minimum: a NaN operand gives NaN; minimum(-0, +0) is a (-0), minimum(+0, -0) "
         "is a (+0)",
         true);
  // A step function of two operands: its derivative is zero wherever it exists.
  binary("max_share", 3, ToleranceClass::kExact, false,
         "the share of maximum's gradient that goes to a: 1 where a > b, 1/2 where a == b, "
         "0 where a < b",
         "1 where a or b is NaN: both operands of maximum(NaN, x) get the whole gradient, as "
         "PyTorch's maximum backward gives it");
  // Comparisons: f32, i32, u32 or bool operands of one dtype (bool compares as 0 < 1, integers
  // as integers), a bool result. Step functions: no gradient, as PyTorch's bool results have none.
  auto comparison = [&](const char* name, const char* summary) {
    t.Add({.name = name,
           .min_version = 3,
           .ports = {ComparableOperand("a"), ComparableOperand("b")},
           .attrs = {{"scalar", AttrType::kNumber}},
           .kind = OpKind::kElementwise,
           .differentiable = false,
           .tolerance = ToleranceClass::kExact,
           .determinism = "exact (one comparison per element; i32 and u32 compared as integers, "
                          "never through f32)",
           .summary = summary,
           .nan = std::string("IEEE 754, as PyTorch: a NaN operand gives ") +
                  (std::string(name) == "ne" ? "true" : "false") +
                  "; -0 equals +0; infinities compare as the extremes"});
  };
  comparison("eq", "a == b (or scalar), a bool mask");
  comparison("ne", "a != b (or scalar), a bool mask");
  comparison("lt", "a < b (or scalar), a bool mask");
  comparison("le", "a <= b (or scalar), a bool mask");
  comparison("gt", "a > b (or scalar), a bool mask");
  comparison("ge", "a >= b (or scalar), a bool mask");
  t.Add({.name = "where",
         .min_version = 3,
         .ports = {{"cond", PortRole::kOperand, {DType::kBool}},
                   ComparableOperand("a"),
                   ComparableOperand("b")},
         .attrs = {},
         .kind = OpKind::kElementwise,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = "exact (a selection per element)",
         .summary = "a where cond is true, else b; the three broadcast together; a and b of one "
                    "dtype, which the result has",
         .nan = "the chosen element passes as its bits (NaN, infinities, -0), as torch.where; "
                "the other one is never read into the result, nor into its gradient"});
  t.Add({.name = "masked_fill",
         .min_version = 3,
         .ports = {NumericOperand("a"), {"mask", PortRole::kOperand, {DType::kBool}}},
         .attrs = {{"value", AttrType::kNumber, nullptr, true, std::nullopt, true}},
         .kind = OpKind::kElementwise,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = "exact (a selection per element)",
         .summary = "value where mask is true, else a; mask broadcasts with a; the gradient "
                    "passes where mask is false; for i32 and u32 `a` the value is an integer of "
                    "that dtype's range",
         .nan = "elements of a pass as their bits where mask is false; value is a finite "
                "number"});
  const double inf = std::numeric_limits<double>::infinity();
  t.Add({.name = "clamp",
         .min_version = 3,
         .ports = {ArithmeticOperand("a")},
         .attrs = {{"min", AttrType::kNumber, nullptr, false, std::nullopt, true, -inf},
                   {"max", AttrType::kNumber, nullptr, false, std::nullopt, true, inf}},
         .kind = OpKind::kElementwise,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = "exact (two comparisons per element)",
         .summary = "minimum(maximum(a, min), max), as torch.clamp: either bound may be left "
                    "out, min > max gives max everywhere; the gradient passes where "
                    "min <= a <= max; for i32 and u32 `a` the bounds are integers of that "
                    "dtype's range, compared as integers (a bound left out bounds nothing); for "
                    "f16 `a` the comparison is made in f32 and a bound chosen is rounded to f16",
         .nan = "as torch.clamp: NaN stays NaN (its gradient is 0); infinities are clamped like "
                "any value"});
  t.Add({.name = "cast",
         .min_version = 3,
         .ports = {ComparableOperand("a")},
         .attrs = {{"dtype", AttrType::kString, nullptr, true}},
         .kind = OpKind::kElementwise,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = "exact (a conversion per element)",
         .summary = "a converted to `dtype` (f32, f16, i32, u32 or bool): to bool, a != 0; "
                    "from bool, 0 or 1; to f16, rounded to nearest (even), overflowing to "
                    "infinity, as torch; from f16, exactly; from f32 or f16 to i32 or u32, "
                    "toward zero as torch, saturating at "
                    "the dtype's range (-2^31 and 2^31 - 1; 0 and 2^32 - 1); from i32 or u32 to "
                    "f32 or f16, rounded to nearest (even); between i32 and u32, modulo 2^32 "
                    "(the bits kept, as torch and NumPy convert); the gradient passes between "
                    "f32 values only",
         .nan = "as torch's conversion to bool: NaN and infinities are true, +-0 false; to i32 "
                "or u32, NaN gives 0 and +-inf saturate (torch leaves both undefined)"});
  unary("relu", 1, ToleranceClass::kExact, true, "exact (f16 elements select as they are)",
        "max(a, 0)",
        "as torch.relu: relu(NaN) = NaN (never 0), relu(-0) = -0, relu(inf) = inf, "
        "relu(-inf) = 0",
        FloatOperand("a"));
  // A step function: its derivative is zero wherever it exists, so it has no gradient rule.
  unary("positive", 1, ToleranceClass::kExact, false, "exact", "0 where a <= 0, else 1",
        "positive(NaN) = 1: relu's gradient (upstream * positive(relu(a)), gated on its "
        "result) passes the upstream gradient at NaN, as PyTorch's threshold_backward does "
        "(the forward value is NaN already)");
  unary("neg", 2, ToleranceClass::kExact, true,
        "exact; i32 negates modulo 2^32 (two's complement: -(-2^31) is -2^31, as torch)", "-a",
        "-NaN is NaN, -(+-inf) is -+inf",
        {"a", PortRole::kOperand, {DType::kF32, DType::kF16, DType::kI32}});
  unary("exp", 2, ToleranceClass::kDefault, true,
        "CPU: own implementation (1 ulp); GPU: the driver's exp", "e^a",
        "exp(NaN) = NaN, exp(inf) = inf, exp(-inf) = 0; overflow gives inf");
  unary("log", 2, ToleranceClass::kDefault, true,
        "CPU: own implementation (1 ulp); GPU: the driver's log", "natural logarithm",
        "log(NaN) = NaN, log(a < 0) = NaN, log(+-0) = -inf, log(inf) = inf");
  unary("sqrt", 2, ToleranceClass::kTight, true, "correctly rounded on CPU", "square root",
        "sqrt(NaN) = NaN, sqrt(a < 0) = NaN, sqrt(-0) = -0, sqrt(inf) = inf");
  unary("tanh", 2, ToleranceClass::kDefault, true, "CPU: own implementation", "hyperbolic tangent",
        "tanh(NaN) = NaN, tanh(+-inf) = +-1");
  unary("sigmoid", 2, ToleranceClass::kDefault, true, "CPU: own implementation", "1 / (1 + e^-a)",
        "sigmoid(NaN) = NaN, sigmoid(inf) = 1, sigmoid(-inf) = 0");
  unary("gelu", 2, ToleranceClass::kDefault, true, "exact erf; CPU: own erf",
        "a * Phi(a), the exact (erf) form",
        "gelu(NaN) = NaN, gelu(inf) = inf, gelu(-inf) = NaN (-inf * 0, as PyTorch)");
  t.Add({.name = "gelu_grad",
         .min_version = 2,
         .ports = {Operand("a"), {"b", PortRole::kGradient}},
         .attrs = {{"scalar", AttrType::kNumber}},
         .kind = OpKind::kElementwise,
         .differentiable = true,
         .tolerance = ToleranceClass::kDefault,
         .determinism = "one correctly rounded operation per element",
         .summary = "gradient of exact gelu: b * gelu'(a)",
         .nan = "gelu'(a) is NaN where a is NaN or +-inf (as PyTorch's gelu backward); then "
                "times b under IEEE 754"});
}

// Version 6: what sorting networks and stream compaction compute with — integer bit operations
// on i32 and u32 (torch's bitwise ops take integer tensors only), an index ramp, and the
// bitonic partner permutation.
void AddBitOps(OpTable& t) {
  const Port a{"a", PortRole::kOperand, {DType::kI32, DType::kU32}};
  Port b = a;
  b.name = "b";
  auto bitwise = [&](const char* name, const std::string& summary) {
    t.Add({.name = name,
           .min_version = 6,
           .ports = {a, b},
           .attrs = {{"scalar", AttrType::kNumber}},
           .kind = OpKind::kElementwise,
           .tolerance = ToleranceClass::kExact,
           .determinism = "exact: one integer operation on the 32 bits, the same on every backend",
           .summary = summary + "; a and b (or the scalar, an integer of a's dtype's range) of one "
                                "dtype, i32 or u32, which the result has; they broadcast",
           .nan = "integers: no NaN or infinity"});
  };
  bitwise("bitwise_and", "a & b, as torch.bitwise_and");
  bitwise("bitwise_or", "a | b, as torch.bitwise_or");
  bitwise("bitwise_xor", "a ^ b, as torch.bitwise_xor");
  bitwise("shift_left",
          "a << b, as torch.bitwise_left_shift: the bits shifted out are dropped (modulo 2^32); "
          "a count b outside [0, 32) gives 0");
  bitwise("shift_right",
          "a >> b, as torch.bitwise_right_shift: arithmetic (sign-filling) for i32, logical for "
          "u32; a count b outside [0, 32) gives what a shift by 31 would for i32 (0 or -1, the "
          "sign), and 0 for u32");
  t.Add({.name = "arange",
         .min_version = 6,
         .ports = {},
         .attrs = {{"shape", AttrType::kIntList, nullptr, true},
                   {"axis", AttrType::kInt, 0},
                   {"dtype", AttrType::kString, "i32"}},
         .kind = OpKind::kPosition,
         .tolerance = ToleranceClass::kExact,
         .determinism = "exact: an element's index is an integer; as f32 it is rounded to nearest "
                        "(even), which is exact below 2^24",
         .summary = "a tensor of `shape` whose every element is its own index along `axis` "
                    "(negative counts from the end), in `dtype` (i32, u32 or f32): "
                    "torch.arange(shape[axis]) broadcast along the other axes. Computed inside the "
                    "kernel that reads it (no buffer, no inline table)",
         .nan = "no NaN or infinity is produced"});
  t.Add({.name = "butterfly",
         .min_version = 6,
         .ports = {{"a", PortRole::kOperand, {DType::kF32, DType::kI32, DType::kU32, DType::kBool}}},
         .attrs = {{"mask", AttrType::kInt, nullptr, true}, {"axis", AttrType::kInt, -1}},
         .kind = OpKind::kNeighbour,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = "exact (elements move, no arithmetic)",
         .summary = "out[.., i, ..] = a[.., i XOR mask, ..] along `axis`: the partner of each "
                    "element in a bitonic or FFT stage. Every i XOR mask must fall inside the axis "
                    "(mask >= 0, and the axis' size a multiple of 2^(b + 1) for the highest set "
                    "bit b of mask), else the graph is refused (butterfly-out-of-range). Fused "
                    "into its consumers' elementwise kernel as a permuted load, so a "
                    "compare-exchange stage is one kernel; the gradient is the same butterfly "
                    "(the permutation is its own inverse)",
         .nan = "elements move as bits: NaN and infinities pass unchanged"});
}

void AddReduceOps(OpTable& t) {
  // The order each tier adds in (kernel::SumSchedule, kernel/ref/tree_sum.h).
  const char* order =
      "fixed order, no float atomics on any backend: along an axis each output adds its elements "
      "in increasing index (but for the wide rows below). A whole-tensor reduction in the debug "
      "tier, on the CPU reference (in every tier), for dtypes other than f32, and over the "
      "storage-binding cap (in tiles) is a 256-lane tree: lane t adds elements t, t + 256, ... in "
      "increasing index, then the lanes combine pairwise (w = 128, 64, ..., 1: lane t < w adds "
      "lane t + w), so GPU and CPU agree bit for bit. In prod and fast a whole-tensor f32 sum or "
      "mean on the GPU runs wide instead: its n elements in ceil(n / C) consecutive chunks of C "
      "elements, C the smallest multiple of 1024 giving at most 2048 chunks (a function of n "
      "alone, never of the device); in a chunk, lane t of 256 adds for each c < 4 the elements 4 "
      "(t + 256 r) + c in increasing r, folds them as (c0 + c1) + (c2 + c3), and the lanes combine "
      "pairwise; the chunks' sums are then added in the 256-lane tree. Likewise in prod and fast "
      "an f32 sum or mean on the GPU along an axis with no elements after it and at least 4096 "
      "elements along it: each output's line is summed as such a wide sum of its own (C chosen "
      "from the line's length), its chunks' sums added in the 256-lane tree. And along an axis of "
      "at least 1024 elements with elements after it and at most 65536 outputs, the outputs "
      "(columns) go in blocks of W (the power of two covering them, at most 64): a chunk of C "
      "steps along the axis (C from the shape alone) is summed by 256 / W lanes per column, lane "
      "l adding steps l, l + 256 / W, ... in increasing order, the lanes combining pairwise; then "
      "each output's chunks' sums likewise, by 256 / V lanes (V = min(W, 4)), lane l adding "
      "chunks l, l + 256 / V, ... in increasing order, the lanes combining pairwise. The same bits "
      "run to run; "
      "within `default` of the reference";
  std::vector<Attr> attrs = {{"axis", AttrType::kInt}, {"keepdim", AttrType::kBool, false}};
  t.Add({.name = "sum",
         .min_version = 1,
         .ports = {{"a", PortRole::kOperand, {DType::kF32, DType::kF16, DType::kI32}}},
         .attrs = attrs,
         .kind = OpKind::kReduce,
         .differentiable = true,
         .tolerance = ToleranceClass::kDefault,
         .determinism = std::string(order) +
                        "; an i32 sum is exact integer addition modulo 2^32 (two's complement), "
                        "so its order cannot change a bit; an f16 sum accumulates in f32 and "
                        "rounds once to f16 (nearest even)",
         .summary = "sum of all elements, or over one axis (version 2); an i32 sum is i32 (torch "
                    "widens to int64: here it wraps modulo 2^32), an f16 sum f16",
         .nan = "IEEE accumulation, as torch.sum: a NaN, or both +inf and -inf, among the summed "
                "elements gives NaN; the sum over an empty axis is 0"});
  t.Add({.name = "mean",
         .min_version = 2,
         .ports = {Operand("a")},
         .attrs = attrs,
         .kind = OpKind::kReduce,
         .differentiable = true,
         .tolerance = ToleranceClass::kDefault,
         .determinism = order,
         .summary = "mean of all elements, or over one axis",
         .nan = "the sum's rule, then divided by the count; the mean over an empty axis is NaN, "
                "as torch.mean"});
  // Version 5: the scan multi-pass programs build on (compaction offsets, histograms, integrals).
  t.Add({.name = "cumsum",
         .min_version = 5,
         .ports = {Operand("a")},
         .attrs = {{"axis", AttrType::kInt, nullptr, true}},
         .kind = OpKind::kReduce,
         .differentiable = true,
         .tolerance = ToleranceClass::kDefault,
         .determinism = "fixed order: each running sum adds the next element to the previous sum, "
                        "in increasing index order along the axis, on every backend (one "
                        "invocation per line on the GPU); no atomics, no tree",
         .summary = "running sums along `axis`: out[.., i, ..] = a[.., 0, ..] + ... + a[.., i, "
                    "..], as torch.cumsum",
         .nan = "IEEE accumulation, as torch.cumsum: from the first NaN along the axis, and from "
                "the point where both +inf and -inf have been added, every later sum is NaN"});
}

void AddLinalgOps(OpTable& t) {
  t.Add({.name = "matmul",
         .min_version = 1,
         .ports = {FloatOperand("a"), FloatOperand("b")},
         .attrs = {},
         .kind = OpKind::kMatmul,
         .differentiable = true,
         .tolerance = ToleranceClass::kDefault,
         .determinism = "fixed accumulation order along K; no split-K atomics. f16 operands (both, "
                        "where the adapter has shader-f16): each product and the running sum in "
                        "f32 (a product of two f16 values is exact in f32), rounded once to f16 "
                        "(nearest, ties to even) when stored, so in debug a GPU gives the "
                        "reference's bits; its gradients are f16 products of the same kind "
                        "(mixed precision)",
         .summary = "matrix product; batched with broadcasting batch dims (version 2)",
         .nan = "IEEE products and sums, as torch.matmul: a NaN in row i of a or column j of b "
                "makes out[i, j] NaN, as does 0 * inf; an empty inner dimension gives zeros"});
  // Version 2: a linear layer whose weight is a checkpoint's k-quant blocks, decoded as the
  // product reads them, so the weight never exists as f32 in memory.
  t.Add({.name = "matmul_q",
         .min_version = 2,
         .ports = {Operand("a"), {"b", PortRole::kOperand, {DType::kQ4K, DType::kQ6K}}},
         .attrs = {},
         .kind = OpKind::kMatmul,
         .differentiable = false,
         // K is at least 256, and WGSL lets a GPU compiler fuse each multiply into its add: on
         // an H200 the sums left `default` in debug (max abs error 8.5e-4 where terms cancel).
         .tolerance = ToleranceClass::kLoose,
         .determinism =
             "each weight is decoded in f32 as GGUF's dequantizer does, one rounding per "
             "operation: q4_k (d * sc) * q - (dmin * m), q6_k (d * sc) * q, with d and dmin the "
             "block's f16 values, sc and m its 6-bit (q4_k) or int8 (q6_k) sub-block scale and "
             "min, q the 4-bit quant (q4_k) or the 6-bit quant minus 32 (q6_k), so the decoded "
             "weights are the same bits on every backend; each output element then accumulates "
             "a[m, k] * w[n, k] from 0 in increasing k, no split-K: one rounding per multiply "
             "and per add on the reference, while a GPU compiler may fuse a multiply into its "
             "add (the products and sums of K >= 256 terms then round differently: class "
             "loose)",
         .summary = "out[M, N] = a[M, K] @ dequantize(b[N, K])^T: a linear layer with its weight "
                    "stored as a checkpoint stores it, rows of q4_k or q6_k blocks (K a multiple "
                    "of 256), decoded on the fly and never written out as f32; a is f32 of rank "
                    "2; not differentiable (the blocks are data, not parameters)",
         .nan = "IEEE products and sums: a NaN in row m of a makes out[m, n] NaN; a NaN or "
                "infinite f16 d or dmin in a block decodes to NaN or +-inf weights (0 * inf is "
                "NaN), as ggml and the gguf package decode them"});
  // Version 2: a product in integers, the same bits on every backend that runs it.
  const Port fixed_operand{"a", PortRole::kOperand, {DType::kI32}};
  t.Add({.name = "matmul_fixed",
         .min_version = 2,
         .ports = {fixed_operand, {"b", PortRole::kOperand, {DType::kI32}}},
         .attrs = {{"frac_bits", AttrType::kInt, nullptr, true}},
         .kind = OpKind::kMatmul,
         .differentiable = false,
         .tolerance = ToleranceClass::kExact,
         .determinism =
             "exact integer arithmetic, the same bits everywhere: each product a[m, k] * b[k, n] "
             "is exact, the sum over k (rising) exact, then shifted right by frac_bits and "
             "rounded half to even; the GPU keeps the sum modulo 2^64 (pairs of u32 words), "
             "which holds the result exactly because every result is proved to fit i32 before "
             "a kernel runs",
         .summary = "out[M, N] = round_half_even((a[M, K] @ b[K, N]) / 2^frac_bits): a and b are "
                    "i32 fixed-point values with frac_bits (0 to 31) fraction bits, as is the "
                    "i32 result. Range: a result outside -2^31 .. 2^31 - 1 is "
                    "fixed-point-overflow naming the output position, when the graph is made "
                    "for inline data and full constants, before each step (a run-time error "
                    "that poisons a session) for fed operands; an operand computed on the device "
                    "is refused (fixed-point-not-checkable). Not differentiable",
         .nan = "integers: no NaN or infinity"});
}

void AddLayoutOps(OpTable& t) {
  const char* moves = "exact (data movement)";
  const char* bits = "elements move as bits: NaN and infinities pass unchanged";
  t.Add({.name = "transpose",
         .min_version = 1,
         .ports = {AnyDTypeOperand("a")},
         .attrs = {},
         .kind = OpKind::kLayout,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = moves,
         .summary = "swap the two axes of a rank-2 tensor",
         .nan = bits});
  t.Add({.name = "permute",
         .min_version = 2,
         .ports = {AnyDTypeOperand("a")},
         .attrs = {{"dims", AttrType::kIntList, nullptr, true}},
         .kind = OpKind::kLayout,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = moves,
         .summary = "reorder axes",
         .nan = bits});
  t.Add({.name = "reshape",
         .min_version = 2,
         .ports = {AnyDTypeOperand("a")},
         .attrs = {{"shape", AttrType::kIntList, nullptr, true}},
         .kind = OpKind::kLayout,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = moves,
         .summary = "same elements in row-major order, new shape; one size may be -1",
         .nan = bits});
  // Version 4: strided views and their scatter. Bounds follow Python/NumPy slicing: negative
  // values count from the end, out-of-range bounds clamp, a null bound is the end the step runs
  // towards, and a range that holds nothing gives an empty axis.
  auto starts = Attr{"starts", AttrType::kBounds, nullptr, true};
  auto stops = Attr{"stops", AttrType::kBounds};
  auto steps = Attr{"steps", AttrType::kIntList};
  t.Add({.name = "slice",
         .min_version = 4,
         .ports = {AnyDTypeOperand("a")},
         .attrs = {starts, stops, steps},
         .kind = OpKind::kLayout,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = moves,
         .summary = "a[start:stop:step] on every axis (one entry per axis; `stops` absent or a "
                    "null entry runs to the end, `steps` absent is 1, a negative step walks "
                    "backwards), as Python slicing",
         .nan = bits});
  t.Add({.name = "slice_scatter",
         .min_version = 4,
         .ports = {AnyDTypeOperand("a"), AnyDTypeOperand("src")},
         .attrs = {starts, stops, steps},
         .kind = OpKind::kLayout,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = moves,
         .summary = "a copy of `a` whose slice `a[starts:stops:steps]` (as `slice`) is replaced "
                    "by `src`, of that slice's shape and `a`'s dtype, as torch.slice_scatter",
         .nan = bits});
  t.Add({.name = "flip",
         .min_version = 4,
         .ports = {AnyDTypeOperand("a")},
         .attrs = {{"axes", AttrType::kIntList, nullptr, true}},
         .kind = OpKind::kLayout,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = moves,
         .summary = "reverse the order of elements along each of `axes`, as torch.flip",
         .nan = bits});
  t.Add({.name = "pad",
         .min_version = 4,
         .ports = {AnyDTypeOperand("a")},
         .attrs = {{"pads", AttrType::kPairs, nullptr, true}, {"value", AttrType::kNumber, 0.0}},
         .kind = OpKind::kLayout,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = moves,
         .summary = "`pads[d]` = [before, after] elements of `value` around axis d (one pair per "
                    "axis, non-negative), as torch.nn.functional.pad in constant mode; `value` "
                    "is rounded once to f32 or f16, and must be an integer in range for i32 and "
                    "u32, 0 or 1 for bool",
         .nan = "elements move as bits: NaN and infinities pass unchanged; the value is a finite "
                "JSON number"});
  // concat and stack take their operands as one list port. A list longer than fits one kernel's
  // storage bindings is built as a tree of ops that each fit (webir::kMaxListArgs), the same
  // elements moved.
  Port inputs = AnyDTypeOperand("inputs");
  inputs.list = true;
  const Attr axis{"axis", AttrType::kInt, 0};
  t.Add({.name = "concat",
         .min_version = 4,
         .ports = {inputs},
         .attrs = {axis},
         .kind = OpKind::kLayout,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = moves,
         .summary = "the tensors of `inputs` (a non-empty list of one dtype and rank, of equal "
                    "sizes but along `axis`) joined along `axis` in list order, as torch.cat; "
                    "entries may be empty along `axis`; each one's gradient is its slice of the "
                    "upstream",
         .nan = bits});
  t.Add({.name = "stack",
         .min_version = 4,
         .ports = {inputs},
         .attrs = {axis},
         .kind = OpKind::kLayout,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = moves,
         .summary = "the tensors of `inputs` (a non-empty list of one dtype and shape) joined "
                    "along a new axis inserted at `axis` (in [-rank - 1, rank]), in list order, "
                    "as torch.stack; each one's gradient is its slice of the upstream",
         .nan = bits});
}

void AddStencilOps(OpTable& t) {
  t.Add({.name = "life",
         .min_version = 1,
         .ports = {Operand("a")},
         .attrs = {},
         .kind = OpKind::kStencil,
         .tolerance = ToleranceClass::kExact,
         .determinism = "exact (integer neighbour counts on 0/1 cells)",
         .summary = "one Game-of-Life step on a toroidal grid of 0/1 cells",
         .nan = "no PyTorch counterpart: a NaN among the nine cells a result reads makes that "
                "result NaN; infinities are cells like any other (alive when > 0.5)"});
  // Version 5: neighbour access for multi-pass programs (stencils written as sums of shifts).
  t.Add({.name = "shift",
         .min_version = 5,
         .ports = {MaskOrF32Operand("a")},
         .attrs = {{"shifts", AttrType::kIntList, nullptr, true},
                   {"boundary", AttrType::kString, "zero"}},
         .kind = OpKind::kNeighbour,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = "exact (elements move, no arithmetic)",
         .summary = "out[i] = a[i - shifts] per axis (one entry per axis), as torch.roll's "
                    "direction; where i - shifts leaves the axis, `boundary` says what is read: "
                    "\"zero\" (0), \"wrap\" (the toroidal neighbour: torch.roll) or \"clamp\" "
                    "(the nearest edge element, as replicate padding). Fused into its consumers' "
                    "elementwise kernel as a shifted load, so a stencil written as a sum of shifts "
                    "is one kernel; differentiable for zero and wrap (the adjoint shift), not for "
                    "clamp",
         .nan = "elements move as bits: NaN and infinities pass unchanged"});
}

void AddNnOps(OpTable& t) {
  const char* rowwise =
      "per row: the maximum, then exp(x - max) summed in index order; one invocation per row on "
      "the GPU, so no atomics and no cross-thread order";
  const char* row_nan =
      "as PyTorch: a row holding a NaN or +inf, or only -inf, is NaN throughout; a -inf entry "
      "gives probability 0 (log-probability -inf)";
  t.Add({.name = "softmax",
         .min_version = 2,
         .ports = {Operand("a")},
         .attrs = {},
         .kind = OpKind::kNormalize,
         .differentiable = true,
         .tolerance = ToleranceClass::kDefault,
         .determinism = rowwise,
         .summary = "exp(a - max) / sum(exp(a - max)) over the last axis",
         .nan = row_nan});
  t.Add({.name = "log_softmax",
         .min_version = 2,
         .ports = {Operand("a")},
         .attrs = {},
         .kind = OpKind::kNormalize,
         .differentiable = true,
         .tolerance = ToleranceClass::kDefault,
         .determinism = rowwise,
         .summary = "(a - max) - log(sum(exp(a - max))) over the last axis",
         .nan = row_nan});
  t.Add({.name = "cross_entropy",
         .min_version = 2,
         .ports = {Operand("a"), {"target", PortRole::kLabels}},
         .attrs = {},
         .kind = OpKind::kLoss,
         .differentiable = true,
         .tolerance = ToleranceClass::kDefault,
         .determinism = "row losses as in log_softmax; their mean sums 256 strided partials "
                        "combined by a fixed pairwise tree, the same order on every backend",
         .summary = "mean over rows of -log_softmax(a)[target]; target holds f32 class "
                    "indices, an invalid one makes the loss NaN",
         .nan = "as PyTorch: a row whose log_softmax is NaN (a NaN or +inf logit, or only -inf) "
                "or whose label is invalid has a NaN loss, so the mean is NaN; a -inf logit off "
                "the label is harmless; no rows (N = 0) give NaN"});
  t.Add({.name = "cross_entropy_grad",
         .min_version = 2,
         .ports = {Operand("a"), {"target", PortRole::kLabels}, {"b", PortRole::kGradient}},
         .attrs = {},
         .kind = OpKind::kLoss,
         .differentiable = true,
         .tolerance = ToleranceClass::kDefault,
         .determinism = rowwise,
         .summary = "(softmax(a) - onehot(target)) / N * b, the gradient of cross_entropy "
                    "for an upstream gradient b of shape []",
         .nan = "a row that cross_entropy makes NaN has a NaN gradient throughout; a NaN b "
                "makes every element NaN"});
}

void AddOptimOps(OpTable& t) {
  const char* per_element = "one element per invocation; no reductions, no atomics";
  const char* update_nan =
      "IEEE arithmetic as torch.optim: a NaN or infinite parameter, gradient or state element "
      "gives a NaN or infinite result for that element, nothing is clamped; a NaN step t counts "
      "as t < 1";
  Port param = Operand("param"), grad{"grad", PortRole::kGradient}, step{"t", PortRole::kStep};
  // Ranges: what torch.optim accepts, bounded so the f32 kernels stay finite and exact in their
  // intent — a learning rate or decay above 1e30 overflows f32 within a step; a beta or momentum
  // that rounds to 1 in f32 makes Adam's bias correction divide by zero; an eps that rounds to 0
  // divides 0 by 0 where a gradient is zero.
  const NumberRange positive{0, 1e30, true, false}, non_negative{0, 1e30}, below_one{0, 0.9999999},
      unit{0, 1}, eps_range{1e-30, 1e30};
  Attr lr{"lr", AttrType::kNumber, 1e-3, false, positive},
      weight_decay{"weight_decay", AttrType::kNumber, 0.0, false, non_negative},
      maximize{"maximize", AttrType::kBool, false};
  t.Add({.name = "sgd_update",
         .min_version = 2,
         .ports = {param, grad},
         .attrs = {lr, weight_decay, maximize},
         .kind = OpKind::kOptimizer,
         .tolerance = ToleranceClass::kDefault,
         .determinism = per_element,
         .summary = "SGD: g = grad (+ weight_decay * param); param - lr * g",
         .nan = update_nan});
  const std::vector<Port> momentum_ports = {param, grad, {"velocity", PortRole::kState}, step};
  const std::vector<Attr> momentum_attrs = {lr,
                                            {"momentum", AttrType::kNumber, 0.0, false, below_one},
                                            {"dampening", AttrType::kNumber, 0.0, false, unit},
                                            weight_decay,
                                            {"nesterov", AttrType::kBool, false},
                                            maximize};
  t.Add({.name = "momentum_update",
         .min_version = 2,
         .ports = momentum_ports,
         .attrs = momentum_attrs,
         .kind = OpKind::kOptimizer,
         .tolerance = ToleranceClass::kDefault,
         .determinism = per_element,
         .summary = "SGD with momentum: the new parameter (t <= 1: velocity := g)",
         .nan = update_nan});
  t.Add({.name = "momentum_velocity",
         .min_version = 2,
         .ports = momentum_ports,
         .attrs = momentum_attrs,
         .kind = OpKind::kOptimizer,
         .tolerance = ToleranceClass::kDefault,
         .determinism = per_element,
         .summary = "SGD with momentum: the new velocity, momentum * v + (1 - dampening) * g "
                    "(t <= 1: g)",
         .nan = update_nan});
  const std::vector<Port> adam_ports = {
      param, grad, {"m", PortRole::kState}, {"v", PortRole::kState}, step};
  // weight_decay has no single default: 0 for Adam, 1e-2 for AdamW (decoupled), as in PyTorch.
  const std::vector<Attr> adam_attrs = {
      lr,
      {"beta1", AttrType::kNumber, 0.9, false, below_one},
      {"beta2", AttrType::kNumber, 0.999, false, below_one},
      {"eps", AttrType::kNumber, 1e-8, false, eps_range},
      {"weight_decay", AttrType::kNumber, nullptr, false, non_negative},
      {"decoupled", AttrType::kBool, false},
      maximize};
  const char* adam_determinism =
      "one element per invocation; bias corrections from t computed in f64 on the CPU, in f32 "
      "with an expm1 series on the GPU";
  t.Add({.name = "adam_update",
         .min_version = 2,
         .ports = adam_ports,
         .attrs = adam_attrs,
         .kind = OpKind::kOptimizer,
         .tolerance = ToleranceClass::kDefault,
         .determinism = adam_determinism,
         .summary = "Adam / AdamW (decoupled): the new parameter; weight_decay defaults to 0, "
                    "or 1e-2 when decoupled",
         .nan = update_nan});
  t.Add({.name = "adam_m",
         .min_version = 2,
         .ports = adam_ports,
         .attrs = adam_attrs,
         .kind = OpKind::kOptimizer,
         .tolerance = ToleranceClass::kDefault,
         .determinism = per_element,
         .summary = "Adam: the new first moment, m.lerp(g, 1 - beta1)",
         .nan = update_nan});
  t.Add({.name = "adam_v",
         .min_version = 2,
         .ports = adam_ports,
         .attrs = adam_attrs,
         .kind = OpKind::kOptimizer,
         .tolerance = ToleranceClass::kDefault,
         .determinism = per_element,
         .summary = "Adam: the new second moment, beta2 * v + (1 - beta2) * g * g",
         .nan = update_nan});
}

// Version 4: indexed reads and their gradients, the indexed sums. Indices are i32, read as
// integers on every backend (never through f32), each in [0, size of the indexed axis): negative
// indices are refused as out of range, as torch.index_select and torch.gather refuse them. Indices
// known when the plan is made (inline data, full) are checked then (index-out-of-range, a user
// error); fed ones before every step that reads them (index-out-of-range, a run-time error that
// poisons a session). An index computed on the device cannot be checked before a kernel reads it
// and is refused (index-not-checkable).
void AddIndexOps(OpTable& t) {
  const Port index{"index", PortRole::kIndex, {DType::kI32}};
  const Attr axis{"axis", AttrType::kInt, nullptr, true};
  const char* checked =
      "indices are i32 in [0, size of the axis): known ones are checked when the plan is made, "
      "fed ones before each step (index-out-of-range names the position)";
  t.Add({.name = "index_select",
         .min_version = 4,
         .ports = {AnyDTypeOperand("a"), index},
         .attrs = {axis},
         .kind = OpKind::kIndex,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = "exact (data movement)",
         .summary = std::string("the slices of `a` along `axis` at the positions listed in the "
                                "rank-1 `index`, in its order (repeats allowed), as "
                                "torch.index_select; ") +
                    checked + "; the gradient of `a` is index_add into zeros",
         .nan = "elements move as bits: NaN and infinities pass unchanged"});
  t.Add({.name = "gather",
         .min_version = 4,
         .ports = {AnyDTypeOperand("a"), index},
         .attrs = {axis},
         .kind = OpKind::kIndex,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = "exact (data movement)",
         .summary = std::string("out[p] = a[p with its `axis` coordinate replaced by index[p]], "
                                "as torch.gather: `index` has a's rank, the output its shape, "
                                "and no axis but `axis` longer than a's; ") +
                    checked + "; the gradient of `a` is scatter_add into zeros",
         .nan = "elements move as bits: NaN and infinities pass unchanged"});
  const char* order =
      "fixed order, no float atomics: each output element starts from a's element and adds the "
      "matching src elements in increasing index position, one rounding per addition, the same "
      "on every backend; i32 data adds exactly, modulo 2^32 (two's complement)";
  auto summand = [](const char* name) {
    return Port{name, PortRole::kOperand, {DType::kF32, DType::kI32}};
  };
  t.Add({.name = "index_add",
         .min_version = 4,
         .ports = {summand("a"), index, summand("src")},
         .attrs = {axis},
         .kind = OpKind::kIndex,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = order,
         .summary = std::string("a copy of `a` to which, for each position k of the rank-1 "
                                "`index`, the slice k of `src` along `axis` is added at the "
                                "slice index[k], as torch.index_add (alpha 1); src is a's shape "
                                "but index's length on `axis`; ") +
                    checked +
                    "; the gradients are the upstream for a and its index_select for "
                    "src",
         .nan = "IEEE additions in that order: a NaN term makes its sum NaN, inf + -inf is NaN"});
  t.Add({.name = "scatter_add",
         .min_version = 4,
         .ports = {summand("a"), index, summand("src")},
         .attrs = {axis},
         .kind = OpKind::kIndex,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = order,
         .summary = std::string("a copy of `a` to which src[p] is added at p with its `axis` "
                                "coordinate replaced by index[p], for every position p of "
                                "`index`, as torch.scatter_add; `index` has src's shape (a "
                                "smaller index is refused) and no axis but `axis` longer than "
                                "a's; ") +
                    checked + "; the gradients are the upstream for a and its gather for src",
         .nan = "IEEE additions in that order: a NaN term makes its sum NaN, inf + -inf is NaN"});
}

void AddRandomOps(OpTable& t) {
  const char* hash =
      "exact: element i of (seed, step) is bits = h(h(i) ^ h(seed ^ h(step))) with the u32 PCG "
      "hash h(x): s = x * 747796405 + 2891336453, w = ((s >> ((s >> 28) + 4)) ^ s) * 277803737, "
      "h = (w >> 22) ^ w (all mod 2^32; Jarzynski and Olano 2020); uniform = (bits >> 8) / 2^24. "
      "Integer arithmetic only, so every backend gives the same bits. step is the integer part "
      "of the step input (NaN and negatives 0)";
  const NumberRange below_one{0, 1, false, true};
  Port step{"step", PortRole::kStep};
  Attr seed{"seed", AttrType::kInt, 0};
  t.Add({.name = "uniform",
         .min_version = 3,
         .ports = {step},
         .attrs = {{"shape", AttrType::kIntList, nullptr, true}, seed},
         .kind = OpKind::kRandom,
         .tolerance = ToleranceClass::kExact,
         .determinism = hash,
         .summary = "f32 in [0, 1) of `shape`, a pure function of (seed, step, element index): "
                    "feed a session's step number to `step` for a fresh tensor each step, "
                    "reproducible from the seed; seed in [0, 2^32)",
         .nan = "no NaN or infinity is produced; a NaN step counts as step 0"});
  t.Add({.name = "dropout",
         .min_version = 3,
         .ports = {Operand("a"), step},
         .attrs = {{"p", AttrType::kNumber, 0.5, false, below_one}, seed},
         .kind = OpKind::kRandom,
         .differentiable = true,
         .tolerance = ToleranceClass::kExact,
         .determinism = std::string(hash) +
                        "; element i is kept where uniform >= p, i.e. (bits >> 8) >= "
                        "ceil(p * 2^24)",
         .summary = "a * m, m = 1 / (1 - p) (rounded to f32) where uniform(seed, step, i) >= p "
                    "and 0 elsewhere, as torch's dropout in training; the gradient is the same "
                    "mask times the same scale; a training workflow's evaluation passes a "
                    "through, as torch's eval mode",
         .nan = "as PyTorch's a * mask: a NaN or infinite element stays NaN where dropped (inf * "
                "0), a dropped finite element is a zero of its sign"});
}

}  // namespace

const std::shared_ptr<const OpTable>& BuiltinOps() {
  static const std::shared_ptr<const OpTable> table = [] {
    auto t = std::make_shared<OpTable>();
    AddSourceOps(*t);
    AddElementwiseOps(*t);
    AddReduceOps(*t);
    AddLinalgOps(*t);
    AddLayoutOps(*t);
    AddStencilOps(*t);
    AddNnOps(*t);
    AddOptimOps(*t);
    AddRandomOps(*t);
    AddIndexOps(*t);
    AddBitOps(*t);
    return std::shared_ptr<const OpTable>(std::move(t));
  }();
  return table;
}

}  // namespace scellis::ops
