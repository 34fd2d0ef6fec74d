// WGSL row-wise normalizations and cross entropy, mirroring kernel/ref/nn.cpp: one invocation per
// row walks the row in index order (maximum, then the sum of exp(x - max)); the mean loss of
// cross_entropy runs in one workgroup over the fixed 256-wide tree (TreeReduce256), the order the
// CPU reference uses too. No atomics anywhere.
//
// Labels: a label that is not an integer in [0, C) gives its row a NaN loss (and NaN gradients),
// exactly as on the CPU (kSpecialValueFns makes the NaN).
#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {
namespace {

// Declares `mx` and `sum` for the row of `n` elements starting at `base` of in0, and `bad`: the
// row holds a NaN or +inf, or only -inf, so PyTorch makes it NaN throughout (inf - inf in the
// shifted exponentials). The CPU reaches NaN through IEEE arithmetic alone; here it is decided on
// the bits, because a GPU's exp may clamp its argument and turn exp(NaN) into a number.
std::string RowMaxSum(int64_t n) {
  return "  var mx = in0[base];\n"
         "  var bad = is_nan_f32(mx);\n"
         "  for (var j = 1u; j < " +
         U32(n) +
         "; j = j + 1u) {\n"
         "    let x = in0[base + j];\n"
         "    bad = bad || is_nan_f32(x);\n"
         "    if (x > mx) { mx = x; }\n"
         "  }\n"
         "  bad = bad || (bitcast<u32>(mx) & 0x7fffffffu) == 0x7f800000u;\n"
         "  var sum = 0.0;\n"
         "  for (var j = 0u; j < " +
         U32(n) + "; j = j + 1u) { sum = sum + exp(in0[base + j] - mx); }\n";
}

// Fills the row with NaN and returns when RowMaxSum found it bad.
std::string NanRow(int64_t n) {
  return "  if (bad) {\n"
         "    for (var j = 0u; j < " +
         U32(n) +
         "; j = j + 1u) { out[base + j] = nan_f32(); }\n"
         "    return;\n"
         "  }\n";
}

std::string LabelCheck(const std::string& label, int64_t classes) {
  return "(" + label + " >= 0.0 && " + label + " < " + F32(static_cast<double>(classes)) +
         " && floor(" + label + ") == " + label + ")";
}

// The mean of the loss's tree once lane 0 holds the sum of its rows' losses.
std::string LossMean(int64_t rows) {
  return rows ? "    out[0] = partial[0] / " + F32(static_cast<double>(rows)) + ";\n"
              : std::string("    out[0] = nan_f32();\n");
}

// fn row_loss(r: u32) -> f32: row r's loss, -log_softmax of its logits at its label (NaN for an
// invalid label or a NaN row), its label at in1[label_offset + r] and its logits from
// in0[base_offset + r * classes] (a tile's rows start inside their windows).
std::string RowLossFn(int64_t classes, int64_t label_offset, int64_t base_offset) {
  auto plus = [](int64_t offset) { return offset ? U32(offset) + " + " : std::string(); };
  return "fn row_loss(r: u32) -> f32 {\n"
         "  let label = in1[" +
         plus(label_offset) +
         "r];\n"
         "  if (!" +
         LabelCheck("label", classes) +
         ") { return nan_f32(); }\n"
         "  let base = " +
         plus(base_offset) + "r * " + U32(classes) + ";\n" + RowMaxSum(classes) +
         "  if (bad) { return nan_f32(); }\n"
         "  return -((in0[base + u32(label)] - mx) - log(sum));\n"
         "}\n";
}

// softmax or log_softmax over `rows` rows, the first at element `offset` of both bindings.
Generated Softmax(const Module& m, const Kernel& k, int64_t rows, int64_t offset) {
  const TensorType& in = m.graph().at(k.inputs[0]).type;
  const int64_t n = in.dims.back().size;
  Generated out;
  std::string write =
      k.op == "softmax"
          ? "  for (var j = 0u; j < " + U32(n) +
                "; j = j + 1u) { out[base + j] = exp(in0[base + j] - mx) / sum; }\n"
          : "  let log_sum = log(sum);\n"
            "  for (var j = 0u; j < " +
                U32(n) + "; j = j + 1u) { out[base + j] = (in0[base + j] - mx) - log_sum; }\n";
  out.source = Bindings(m, k) + kSpecialValueFns + "\n" + LinearEntry(rows) +
               "  let base = " + (offset ? U32(offset) + " + " : std::string()) + "i * " + U32(n) +
               ";\n" + RowMaxSum(n) + NanRow(n) + write + "}\n";
  out.workgroups = LinearGrid(rows);
  return out;
}

// fn row_loss(r: u32) -> f32 of the loss merged with its gradient: as RowLossFn, and it also
// writes row r's gradient with the gradient kernel's own operations (a NaN row for an invalid
// label or a NaN row), the gradient's row at out1[grad_offset + r * classes]. `rows`: all of the
// batch's rows, the mean's divisor.
std::string RowLossAndGradientFn(int64_t classes, int64_t rows, int64_t base_offset,
                                 int64_t label_offset, int64_t grad_offset) {
  auto plus = [](int64_t offset) { return offset ? U32(offset) + " + " : std::string(); };
  const std::string at =
      grad_offset == base_offset ? "base + j" : plus(grad_offset) + "r * " + U32(classes) + " + j";
  const std::string fill_nan = "    for (var j = 0u; j < " + U32(classes) +
                               "; j = j + 1u) { out1[" + at +
                               "] = nan_f32(); }\n"
                               "    return nan_f32();\n";
  return "fn row_loss(r: u32) -> f32 {\n"
         "  let base = " +
         plus(base_offset) + "r * " + U32(classes) +
         ";\n"
         "  let label = in1[" +
         plus(label_offset) +
         "r];\n"
         "  if (!" +
         LabelCheck("label", classes) + ") {\n" + fill_nan +
         "  }\n"
         "  let k = u32(label);\n"
         "  let g = in2[0] / " +
         F32(static_cast<double>(rows)) + ";\n" + RowMaxSum(classes) + "  if (bad) {\n" + fill_nan +
         "  }\n"
         "  let log_sum = log(sum);\n"
         "  for (var j = 0u; j < " +
         U32(classes) +
         "; j = j + 1u) {\n"
         "    let p = exp((in0[base + j] - mx) - log_sum);\n"
         "    out1[" +
         at +
         "] = select(p * g, p * g - g, j == k);\n"
         "  }\n"
         "  return -((in0[base + k] - mx) - log_sum);\n"
         "}\n";
}

// The loss and its gradient in one workgroup (the merge-loss-gradient pass): the loss kernel's
// tree over the rows, whose term for a row also writes the row's gradient (out1) with the
// gradient kernel's own operations; with a column sum after it (merge-bias-gradient), every lane,
// once the whole gradient is written, adds its columns (out2) in row order from 0.0, as the sum
// kernel does.
Generated LossAndGradient(const Module& m, const Kernel& k) {
  const TensorType& in = m.graph().at(k.inputs[0]).type;
  const int64_t rows = in.dims[0].size, classes = in.dims[1].size;
  std::string tree = TreeReduce256("row_loss(j)", rows, LossMean(rows));
  if (k.extra_outputs.size() == 2) {
    // Before the closing brace of main: every lane, after the tree (uniform control flow).
    tree.resize(tree.size() - 2);
    tree +=
        "  storageBarrier();\n"
        "  for (var c = t; c < " +
        U32(classes) +
        "; c = c + 256u) {\n"
        "    var cs = 0.0;\n"
        "    for (var r = 0u; r < " +
        U32(rows) + "; r = r + 1u) { cs = cs + out1[r * " + U32(classes) +
        " + c]; }\n"
        "    out2[c] = cs;\n"
        "  }\n"
        "}\n";
  }
  Generated out;
  out.source =
      Bindings(m, k) + kSpecialValueFns + RowLossAndGradientFn(classes, rows, 0, 0, 0) + tree;
  out.workgroups = {1, 1, 1};
  return out;
}

// fn grad_row(i: u32): row i of cross_entropy_grad, the row's logits at element offsets[0] + i *
// classes of in0, its label at offsets[1] + i of in1, its gradient at offsets[2] + i * classes
// of out; `rows`: all of the batch's rows (the divisor of the seed in2[0]).
std::string GradRowFn(int64_t rows, int64_t classes, const std::array<int64_t, 3>& offsets) {
  auto plus = [](int64_t offset) { return offset ? U32(offset) + " + " : std::string(); };
  // The gradient's row where its window sits as the logits' does (always, untiled), else its own.
  const std::string at = offsets[2] == offsets[0]
                             ? std::string("out[base + j]")
                             : "out[" + plus(offsets[2]) + "i * " + U32(classes) + " + j]";
  return "fn grad_row(i: u32) {\n"
         "  let base = " +
         plus(offsets[0]) + "i * " + U32(classes) +
         ";\n"
         "  let label = in1[" +
         plus(offsets[1]) +
         "i];\n"
         "  if (!" +
         LabelCheck("label", classes) +
         ") {\n"
         "    for (var j = 0u; j < " +
         U32(classes) + "; j = j + 1u) { " + at +
         " = nan_f32(); }\n"
         "    return;\n"
         "  }\n"
         "  let k = u32(label);\n"
         "  let r = in2[0] / " +
         F32(static_cast<double>(rows)) + ";\n" + RowMaxSum(classes) +
         "  if (bad) {\n"
         "    for (var j = 0u; j < " +
         U32(classes) + "; j = j + 1u) { " + at +
         " = nan_f32(); }\n"
         "    return;\n"
         "  }\n"
         "  let log_sum = log(sum);\n"
         "  for (var j = 0u; j < " +
         U32(classes) +
         "; j = j + 1u) {\n"
         "    let p = exp((in0[base + j] - mx) - log_sum);\n"
         "    " +
         at +
         " = select(p * r, p * r - r, j == k);\n"
         "  }\n"
         "}\n";
}

// cross_entropy_grad over `count` rows, the first at element offsets[0] of the logits, [1] of the
// labels and [2] of the gradient, one invocation per row; `rows`: all of the batch's rows.
Generated CrossEntropyGradRows(const Module& m, const Kernel& k, int64_t count,
                               const std::array<int64_t, 3>& offsets) {
  const TensorType& in = m.graph().at(k.inputs[0]).type;
  Generated out;
  out.source = Bindings(m, k) + kSpecialValueFns +
               GradRowFn(in.dims[0].size, in.dims[1].size, offsets) + "\n" + LinearEntry(count) +
               "  grad_row(i);\n}\n";
  out.workgroups = LinearGrid(count);
  return out;
}

}  // namespace

StageSource LossStage(const Module& m, const Kernel& k) {
  const TensorType& in = m.graph().at(k.inputs[0]).type;
  const int64_t rows = in.dims[0].size, classes = in.dims[1].size;
  return {RowLossFn(classes, 0, 0), TreeReduce256Body("row_loss(j)", rows, LossMean(rows))};
}

StageSource GradientRowsStage(const Module& m, const Kernel& k) {
  const TensorType& in = m.graph().at(k.inputs[0]).type;
  return {
      GradRowFn(in.dims[0].size, in.dims[1].size, {0, 0, 0}),
      "  for (var i = r0 + t; i < r1; i = i + " + U32(kWorkgroupLanes) + ") { grad_row(i); }\n}\n"};
}

Generated SoftmaxTile(const Module& m, const Kernel& k, const Tile& t, int64_t offset) {
  // Whole rows: each row's maximum and sum are its own, so a tile of rows gives their bits.
  return Softmax(m, k, t.rows, offset);
}

Generated SoftmaxRowTile(const Module&, const Kernel& k, const Tiling& tiling, const Tile& t,
                         int64_t offset) {
  // One invocation per row of the tile, over its stretch of the row; row i's partial results sit
  // at carry[4 i ..]: maximum, NaN flag (1.0 when the row is NaN throughout), sum of exp. The
  // expressions are the untiled kernel's (RowMaxSum, NanRow, Softmax), split at the tiles.
  const int64_t n = tiling.space.depth;
  const std::string d = U32(t.depth);
  std::string body = "  let base = " + U32(offset) + " + i * " + U32(n) +
                     ";\n"
                     "  let c = i * 4u;\n";
  const bool continues = t.Continues(), finishes = t.Finishes(tiling.space);
  if (t.pass == 0) {
    body += continues ? "  var mx = carry[c];\n  var bad = carry[c + 1u] != 0.0;\n"
                      : "  var mx = in0[base];\n  var bad = is_nan_f32(mx);\n";
    body += "  for (var j = " + std::string(continues ? "0u" : "1u") + "; j < " + d +
            "; j = j + 1u) {\n"
            "    let x = in0[base + j];\n"
            "    bad = bad || is_nan_f32(x);\n"
            "    if (x > mx) { mx = x; }\n"
            "  }\n";
    if (finishes) body += "  bad = bad || (bitcast<u32>(mx) & 0x7fffffffu) == 0x7f800000u;\n";
    body +=
        "  carry[c] = mx;\n  carry[c + 1u] = select(0.0, 1.0, bad);\n  _ = arrayLength(&out);\n";
  } else if (t.pass == 1) {
    body +=
        "  let mx = carry[c];\n  var sum = " + std::string(continues ? "carry[c + 2u]" : "0.0") +
        ";\n  for (var j = 0u; j < " + d +
        "; j = j + 1u) { sum = sum + exp(in0[base + j] - mx); }\n"
        "  carry[c + 2u] = sum;\n  _ = arrayLength(&out);\n";
  } else {
    body +=
        "  let mx = carry[c];\n  let sum = carry[c + 2u];\n"
        "  if (carry[c + 1u] != 0.0) {\n"
        "    for (var j = 0u; j < " +
        d +
        "; j = j + 1u) { out[base + j] = nan_f32(); }\n"
        "    return;\n"
        "  }\n";
    body += k.op == "softmax"
                ? "  for (var j = 0u; j < " + d +
                      "; j = j + 1u) { out[base + j] = exp(in0[base + j] - mx) / sum; }\n"
                : "  let log_sum = log(sum);\n  for (var j = 0u; j < " + d +
                      "; j = j + 1u) { out[base + j] = (in0[base + j] - mx) - log_sum; }\n";
  }
  Generated out;
  out.source = std::string(
                   "@group(0) @binding(0) var<storage, read> in0: array<f32>;\n"
                   "@group(0) @binding(1) var<storage, read_write> carry: array<f32>;\n"
                   "@group(0) @binding(2) var<storage, read_write> out: array<f32>;\n") +
               kSpecialValueFns + "\n" + LinearEntry(t.rows) + body + "}\n";
  out.workgroups = LinearGrid(t.rows);
  return out;
}

Generated CrossEntropyTile(const Module&, const Kernel& k, const Tiling& tiling, const Tile& t,
                           const std::array<int64_t, 3>& offsets) {
  // The tile's rows are lane t's rows t, t + 256, ... of the untiled tree (the tile starts at a
  // multiple of 256): each lane adds their losses after its partial sum of the tiles before, and
  // the last tile combines the lanes and takes the mean, as the untiled kernel does. Merged with
  // the gradient, a row's term also writes the row's gradient (offsets[2] into its window).
  const TileSpace& sp = tiling.space;
  const bool merged = !k.extra_outputs.empty();
  auto binding = [](int b, const char* name, bool read) {
    return "@group(0) @binding(" + std::to_string(b) + ") var<storage, " +
           (read ? "read" : "read_write") + "> " + name + ": array<f32>;\n";
  };
  std::string head = binding(0, "in0", true) + binding(1, "in1", true);
  if (merged)
    head += binding(2, "in2", true) + binding(3, "lanes", false) + binding(4, "out", false) +
            binding(5, "out1", false);
  else
    head += binding(2, "lanes", false) + binding(3, "out", false);
  head += kSpecialValueFns;
  head += merged ? RowLossAndGradientFn(sp.cols, sp.depth, offsets[0], offsets[1], offsets[2])
                 : RowLossFn(sp.cols, offsets[1], offsets[0]);
  Generated out;
  out.source = head + LaneTileEntry("row_loss(j)", t.depth, t.Continues(), t.Finishes(sp),
                                    "    out[0] = partial[0] / " +
                                        F32(static_cast<double>(sp.depth)) + ";\n");
  out.workgroups = {1, 1, 1};
  return out;
}

Generated CrossEntropyGradTile(const Module& m, const Kernel& k, const Tile& t,
                               const std::array<int64_t, 3>& offsets) {
  // Whole rows: each row's gradient needs only its own maximum and sum, so a tile of rows gives
  // their bits.
  return CrossEntropyGradRows(m, k, t.rows, offsets);
}

bool GenerateNn(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kOp) return false;
  const TensorType& in = m.graph().at(k.inputs.empty() ? k.output : k.inputs[0]).type;
  std::string head = Bindings(m, k);
  if (k.op == "softmax" || k.op == "log_softmax") {
    const int64_t n = in.dims.back().size;
    out = Softmax(m, k, n ? in.elements() / n : 0, 0);
    return true;
  }
  if (k.op == "cross_entropy" && !k.extra_outputs.empty()) {
    out = LossAndGradient(m, k);
    return true;
  }
  if (k.op == "cross_entropy") {
    int64_t rows = in.dims[0].size, classes = in.dims[1].size;
    out.source = head + kSpecialValueFns + RowLossFn(classes, 0, 0) +
                 TreeReduce256("row_loss(j)", rows, LossMean(rows));
    out.workgroups = {1, 1, 1};
    return true;
  }
  if (k.op == "cross_entropy_grad") {
    out = CrossEntropyGradRows(m, k, in.dims[0].size, {0, 0, 0});
    return true;
  }
  return false;
}

}  // namespace scellis::kernel::wgsl
