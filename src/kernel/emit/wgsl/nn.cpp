// WGSL row-wise normalizations and cross entropy, mirroring kernel/ref/nn.cpp: one invocation per
// row walks the row in index order (maximum, then the sum of exp(x - max)); the mean loss of
// cross_entropy runs in one workgroup over the fixed 256-wide tree (TreeReduce256), the order the
// CPU reference uses too. No atomics anywhere.
//
// Labels: a label that is not an integer in [0, C) gives its row a NaN loss (and NaN gradients),
// exactly as on the CPU. The NaN is made at run time from its bits: a NaN constant expression is a
// shader-creation error in WGSL.
#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {
namespace {

const char* kNanFn =
    "fn nan_f32() -> f32 {\n"
    "  var bits = 0x7fc00000u;\n"
    "  return bitcast<f32>(bits);\n"
    "}\n";

// Declares `mx` and `sum` for the row of `n` elements starting at `base` of in0.
std::string RowMaxSum(int64_t n) {
  return "  var mx = in0[base];\n"
         "  for (var j = 1u; j < " +
         U32(n) +
         "; j = j + 1u) {\n"
         "    let x = in0[base + j];\n"
         "    if (x > mx) { mx = x; }\n"
         "  }\n"
         "  var sum = 0.0;\n"
         "  for (var j = 0u; j < " +
         U32(n) + "; j = j + 1u) { sum = sum + exp(in0[base + j] - mx); }\n";
}

std::string LabelCheck(const std::string& label, int64_t classes) {
  return "(" + label + " >= 0.0 && " + label + " < " + F32(static_cast<double>(classes)) +
         " && floor(" + label + ") == " + label + ")";
}

}  // namespace

bool GenerateNn(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kOp) return false;
  const TensorType& in = m.graph().at(k.inputs.empty() ? k.output : k.inputs[0]).type;
  std::string head = Bindings(m, k);
  if (k.op == "softmax" || k.op == "log_softmax") {
    int64_t n = in.dims.back().size;
    int64_t rows = n ? in.elements() / n : 0;
    std::string write =
        k.op == "softmax"
            ? "  for (var j = 0u; j < " + U32(n) +
                  "; j = j + 1u) { out[base + j] = exp(in0[base + j] - mx) / sum; }\n"
            : "  let log_sum = log(sum);\n"
              "  for (var j = 0u; j < " +
                  U32(n) + "; j = j + 1u) { out[base + j] = (in0[base + j] - mx) - log_sum; }\n";
    out.source = head + "\n" + LinearEntry(rows) + "  let base = i * " + U32(n) + ";\n" +
                 RowMaxSum(n) + write + "}\n";
    out.workgroups = LinearGrid(rows);
    return true;
  }
  if (k.op == "cross_entropy") {
    int64_t rows = in.dims[0].size, classes = in.dims[1].size;
    out.source =
        head + kNanFn +
        "fn row_loss(r: u32) -> f32 {\n"
        "  let label = in1[r];\n"
        "  if (!" +
        LabelCheck("label", classes) +
        ") { return nan_f32(); }\n"
        "  let base = r * " +
        U32(classes) + ";\n" + RowMaxSum(classes) +
        "  return -((in0[base + u32(label)] - mx) - log(sum));\n"
        "}\n" +
        TreeReduce256("row_loss(j)", rows,
                      rows ? "    out[0] = partial[0] / " + F32(static_cast<double>(rows)) + ";\n"
                           : std::string("    out[0] = nan_f32();\n"));
    out.workgroups = {1, 1, 1};
    return true;
  }
  if (k.op == "cross_entropy_grad") {
    int64_t rows = in.dims[0].size, classes = in.dims[1].size;
    out.source = head + kNanFn + "\n" + LinearEntry(rows) + "  let base = i * " + U32(classes) +
                 ";\n"
                 "  let label = in1[i];\n"
                 "  if (!" +
                 LabelCheck("label", classes) +
                 ") {\n"
                 "    for (var j = 0u; j < " +
                 U32(classes) +
                 "; j = j + 1u) { out[base + j] = nan_f32(); }\n"
                 "    return;\n"
                 "  }\n"
                 "  let k = u32(label);\n"
                 "  let r = in2[0] / " +
                 F32(static_cast<double>(rows)) + ";\n" + RowMaxSum(classes) +
                 "  let log_sum = log(sum);\n"
                 "  for (var j = 0u; j < " +
                 U32(classes) +
                 "; j = j + 1u) {\n"
                 "    let p = exp((in0[base + j] - mx) - log_sum);\n"
                 "    out[base + j] = select(p * r, p * r - r, j == k);\n"
                 "  }\n"
                 "}\n";
    out.workgroups = LinearGrid(rows);
    return true;
  }
  return false;
}

}  // namespace scellis::kernel::wgsl
