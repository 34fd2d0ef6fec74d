// WGSL reductions. No float atomics: in the debug tier a whole-tensor reduction runs in one
// workgroup over the fixed 256-wide tree (TreeReduce256; an f32 sum of a multiple of 4 elements
// loads vec4, TreeReduce256Vec4), so the result is the same on every run on a device — and it is
// the order of the CPU reference (kernel/ref/tree_sum.h), so the two agree bit for bit. That order
// is 256 chains of dependent additions, which caps a whole-tensor sum far below the memory's
// bandwidth on a large GPU, so in prod and fast an f32 sum or mean runs wide (SumSchedule, chosen
// by the schedule-sum pass): a grid of chunks, then their partial sums — another fixed order,
// within the op's tolerance class of the reference. Axis reductions give each output element one
// invocation that walks the axis in order, like the CPU reference, except in prod and fast an f32
// sum or mean along a long axis with nothing after it, which runs wide row by row, and one along
// a long axis with few outputs after it, which runs wide column by column.
#include <algorithm>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {

// Running sums: one invocation per line along the axis, adding in index order as the reference.
void GenerateCumsum(const Module& m, const Kernel& k, Generated& out) {
  const webir::Node& node = m.graph().at(k.output);
  const std::vector<int64_t> sizes = node.type.sizes();
  const int axis = node.attrs.at("axis").get<int>();
  int64_t inner = 1, len = sizes[axis];
  for (size_t i = axis + 1; i < sizes.size(); ++i) inner *= sizes[i];
  const int64_t lines = len ? node.type.elements() / len : 0;
  // As for axis sums: a constant division by zero is a compile error, even where never reached.
  inner = std::max<int64_t>(inner, 1);
  out.source = Bindings(m, k) + "\n" + LinearEntry(lines) + "  let base = (i / " + U32(inner) +
               ") * " + U32(len * inner) + " + i % " + U32(inner) +
               ";\n"
               "  var s = 0.0;\n"
               "  for (var j = 0u; j < " +
               U32(len) + "; j = j + 1u) {\n    let at = base + j * " + U32(inner) +
               ";\n    s = s + in0[at];\n    out[at] = s;\n  }\n}\n";
  out.workgroups = LinearGrid(lines);
}

// A block of `columns` columns summed along the axis by one workgroup of 256 lanes, `inner`
// elements between a column's steps: lane t takes column col = wg.x x columns + t % columns and
// the steps lo + l, lo + l + L, ... below hi (l = t / columns, L = 256 / columns lanes per
// column) in increasing order, from the column's element `row_start` + col; the column's L lanes
// then combine pairwise in workgroup memory (w = L / 2, ..., 1) and its lane 0 stores out[`at`].
// `lo`, `hi`, `row_start` and `at` are WGSL expressions (of wg, lane and col); `scale` follows
// the stored sum (" / n" where a mean's output is stored, else empty).
namespace {
std::string ColumnBlockSum(int64_t columns, int64_t inner, const std::string& lo,
                           const std::string& hi, const std::string& row_start,
                           const std::string& at, const std::string& scale) {
  const int64_t lanes = 256 / columns;
  const std::string L = U32(lanes), stride = U32(inner);
  std::string combine;
  for (int64_t w = lanes / 2; w >= 1; w /= 2)
    combine += "  workgroupBarrier();\n  if (lane < " + U32(w) +
               ") { partial[t] = partial[t] + partial[t + " + U32(w * columns) + "]; }\n";
  // A lane's steps r, r + L, ... four at a time: the four loads are issued before the first of
  // their additions, which then run in the same order as one at a time (the bits do not change),
  // so that each lane has four loads in flight instead of one; the rest one by one.
  std::string steps = "    var r = lo + lane;\n    for (; r + " + U32(3 * lanes) +
                      " < hi; r = r + " + U32(4 * lanes) + ") {\n";
  for (int j = 0; j < 4; ++j)
    steps += "      let v" + std::to_string(j) + " = in0[base + (r + " + U32(j * lanes) + ") * " +
             stride + "];\n";
  steps += "      s = s + v0;\n      s = s + v1;\n      s = s + v2;\n      s = s + v3;\n    }\n";
  steps += "    for (; r < hi; r = r + " + L + ") { s = s + in0[base + r * " + stride + "]; }\n";
  return "var<workgroup> partial: array<f32, 256>;\n"
         "@compute @workgroup_size(256)\n"
         "fn main(@builtin(workgroup_id) wg: vec3<u32>,\n"
         "        @builtin(local_invocation_index) t: u32) {\n"
         "  let col = wg.x * " +
         U32(columns) + " + t % " + U32(columns) + ";\n  let lane = t / " + U32(columns) +
         ";\n  let lo = " + lo + ";\n  let hi = " + hi +
         ";\n"
         "  var s = 0.0;\n"
         "  if (col < " +
         stride + ") {\n    let base = " + row_start + " + col;\n" + steps +
         "  }\n"
         "  partial[t] = s;\n" +
         combine + "  if (lane == 0u && col < " + stride + ") {\n    out[" + at + "] = partial[t]" +
         scale + ";\n  }\n}\n";
}
}  // namespace

// A wide sum along columns (SumSchedule with inner > 1): workgroup (block, g, row) sums chunk g of
// the axis for its `columns` columns (ColumnBlockSum) into out[(row x groups + g) x inner +
// column] (the scratch) or, with one chunk, the output itself.
void GenerateWideColumnSum(const Module& m, const Kernel& k, Generated& out) {
  const SumSchedule& s = *k.sum_schedule;
  const int64_t len = m.graph().at(k.inputs[0]).type.elements() / (s.rows * s.inner);
  const std::string scale =
      k.op == "mean" && !s.TwoStages() ? " / " + F32(static_cast<double>(len)) : "";
  const std::string at = s.TwoStages()
                             ? "(wg.z * " + U32(s.groups) + " + wg.y) * " + U32(s.inner) + " + col"
                             : "wg.z * " + U32(s.inner) + " + col";
  out.source = Bindings(m, k) + ColumnBlockSum(s.columns, s.inner, "wg.y * " + U32(s.chunk),
                                               "min(lo + " + U32(s.chunk) + ", " + U32(len) + ")",
                                               "wg.z * " + U32(len * s.inner), at, scale);
  out.workgroups = {static_cast<uint32_t>((s.inner + s.columns - 1) / s.columns),
                    static_cast<uint32_t>(s.groups), static_cast<uint32_t>(s.rows)};
}

// A wide sum's first dispatch: workgroup (g, row) sums chunk g of its row into out[row x groups +
// g] — the partial sums' scratch, bound where the output would be — or, with one chunk per row,
// the row's result itself. The input is read as vec4 when a row's element count is a multiple of
// 4; otherwise as f32, four elements at a time, the missing ones of a row's last vector as 0.0 (a
// lane's sum starts at +0.0, so adding 0.0 changes no bit): the same additions in the same order
// either way. A whole-tensor sum is one row, and its source names no row.
void GenerateWideSum(const Module& m, const Kernel& k, Generated& out) {
  const SumSchedule& s = *k.sum_schedule;
  if (s.inner > 1) return GenerateWideColumnSum(m, k, out);
  const bool rows = s.rows > 1;
  const int64_t len = m.graph().at(k.inputs[0]).type.elements() / s.rows;  // one row's elements
  const bool vec4 = len % 4 == 0;
  const int64_t vectors = (len + 3) / 4;
  std::string head = Bindings(m, k, {vec4});
  if (!vec4)
    head += std::string(rows ? "fn load4(row: u32, r: u32) -> vec4<f32> {\n"
                             : "fn load4(r: u32) -> vec4<f32> {\n") +
            "  let e = " + (rows ? "row + 4u * r" : "4u * r") +
            ";\n"
            "  var v = vec4<f32>(in0[e], 0.0, 0.0, 0.0);\n"
            "  for (var c = 1u; c < 4u; c = c + 1u) {\n"
            "    if (" +
            (rows ? "4u * r + c < " : "e + c < ") + U32(len) +
            ") { v[c] = in0[e + c]; }\n  }\n  return v;\n}\n";
  // A row's first element (f32 loads) or vector (vec4 loads).
  const std::string row = rows ? "  let row = wg.y * " + U32(vec4 ? vectors : len) + ";\n" : "";
  auto load = [&](const std::string& at) {
    if (vec4) return "in0[" + (rows ? "row + " + at : at) + "]";
    return "load4(" + (rows ? "row, " + at : at) + ")";
  };
  // Four vectors in flight per lane (loaded before they are added, in order).
  constexpr int kUnroll = 4;
  std::string loads, adds;
  for (int u = 0; u < kUnroll; ++u) {
    const std::string v = "v" + std::to_string(u);
    loads += "    let " + v + " = " + load(u ? "r + " + U32(256 * u) : "r") + ";\n";
    adds += "    s = s + " + v + ";\n";
  }
  const std::string scale =
      k.op == "mean" && !s.TwoStages() ? " / " + F32(static_cast<double>(len)) : "";
  const std::string at = !rows           ? "wg.x"
                         : s.TwoStages() ? "wg.y * " + U32(s.groups) + " + wg.x"
                                         : "wg.y";
  out.source = head +
               "var<workgroup> partial: array<f32, 256>;\n"
               "@compute @workgroup_size(256)\n"
               "fn main(@builtin(workgroup_id) wg: vec3<u32>,\n"
               "        @builtin(local_invocation_index) t: u32) {\n" +
               row + "  let lo = wg.x * " + U32(s.chunk / 4) + ";\n  let hi = min(lo + " +
               U32(s.chunk / 4) + ", " + U32(vectors) +
               ");\n"
               "  var s = vec4<f32>(0.0);\n"
               "  var r = lo + t;\n"
               "  for (; r + " +
               U32(256 * (kUnroll - 1)) + " < hi; r = r + " + U32(256 * kUnroll) + ") {\n" + loads +
               adds + "  }\n  for (; r < hi; r = r + 256u) { s = s + " + load("r") +
               "; }\n"
               "  partial[t] = (s.x + s.y) + (s.z + s.w);\n" +
               TreeCombine("    out[" + at + "] = partial[0]" + scale + ";\n");
  out.workgroups = {static_cast<uint32_t>(s.groups), static_cast<uint32_t>(s.rows), 1};
}

Generated WideSumFinish(const Module& m, const Kernel& k) {
  const SumSchedule& s = *k.sum_schedule;
  const int64_t len = m.graph().at(k.inputs[0]).type.elements() / (s.rows * s.inner);
  const std::string scale = k.op == "mean" ? " / " + F32(static_cast<double>(len)) : "";
  Generated out;
  out.source =
      "@group(0) @binding(0) var<storage, read> in0: array<f32>;\n"
      "@group(0) @binding(1) var<storage, read_write> out: array<f32>;\n";
  if (s.inner > 1) {
    // The partial sums are rows x groups x inner: each row's columns summed along its chunks,
    // SumSchedule::FinishColumns() columns to a workgroup of 256 lanes.
    out.source += ColumnBlockSum(s.FinishColumns(), s.inner, "0u", U32(s.groups),
                                 "wg.y * " + U32(s.groups * s.inner),
                                 "wg.y * " + U32(s.inner) + " + col", scale);
    out.workgroups = s.FinishWorkgroups();
    return out;
  }
  if (s.rows == 1) {
    out.source += TreeReduce256("in0[j]", s.groups, "    out[0] = partial[0]" + scale + ";\n");
  } else {
    // Workgroup `row` adds its row's partial sums in the same 256-lane tree.
    out.source +=
        "var<workgroup> partial: array<f32, 256>;\n"
        "@compute @workgroup_size(256)\n"
        "fn main(@builtin(workgroup_id) wg: vec3<u32>,\n"
        "        @builtin(local_invocation_index) t: u32) {\n"
        "  let row = wg.x * " +
        U32(s.groups) +
        ";\n"
        "  var s = 0.0;\n"
        "  for (var j = t; j < " +
        U32(s.groups) +
        "; j = j + 256u) { s = s + in0[row + j]; }\n"
        "  partial[t] = s;\n" +
        TreeCombine("    out[wg.x] = partial[0]" + scale + ";\n");
  }
  out.workgroups = {static_cast<uint32_t>(s.rows), 1, 1};
  return out;
}

bool GenerateReduce(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind == KernelKind::kOp && k.op == "cumsum") {
    GenerateCumsum(m, k, out);
    return true;
  }
  if (k.kind != KernelKind::kOp || (k.op != "sum" && k.op != "mean")) return false;
  if (k.sum_schedule) {
    GenerateWideSum(m, k, out);
    return true;
  }
  const webir::Node& node = m.graph().at(k.output);
  const TensorType& in = m.graph().at(k.inputs[0]).type;
  bool mean = k.op == "mean";
  // An f16 sum accumulates in f32 (each f16 widened exactly) and rounds once to f16, as the
  // reference does.
  const bool half = in.dtype == DType::kF16;
  std::string head = Bindings(m, k) + (half ? kRoundToHalf : "");
  const std::string load = half ? "f32(in0[" : "in0[";
  const std::string close = half ? "])" : "]";
  auto store = [&](const std::string& v) { return half ? "f16(round_f16(" + v + "))" : v; };
  if (node.attrs["axis"].is_null()) {
    int64_t n = in.elements();
    std::string scale = mean ? " / " + F32(static_cast<double>(n)) : "";
    if (in.dtype == DType::kF32 && n > 0 && n % 4 == 0) {
      out.source =
          Bindings(m, k, {true}) + TreeReduce256Vec4(n, "    out[0] = partial[0]" + scale + ";\n");
      out.workgroups = {1, 1, 1};
      return true;
    }
    out.source = head + TreeReduce256(load + "j" + close, n,
                                      "    out[0] = " + store("partial[0]" + scale) + ";\n",
                                      in.dtype == DType::kI32 ? "i32" : "f32");
    out.workgroups = {1, 1, 1};
    return true;
  }
  int axis = node.attrs["axis"].get<int>();
  std::vector<int64_t> sizes = in.sizes();
  int64_t inner = 1, len = sizes[axis];
  for (size_t i = axis + 1; i < sizes.size(); ++i) inner *= sizes[i];
  // inner = 0 means no outputs: every invocation returns before dividing, but a constant
  // division by zero is a WGSL compile error, so divide by 1 instead.
  inner = std::max<int64_t>(inner, 1);
  int64_t outputs = node.type.elements();
  std::string scale = mean ? " / " + F32(static_cast<double>(len)) : "";
  out.source = head + "\n" + LinearEntry(outputs) + "  let base = (i / " + U32(inner) + ") * " +
               U32(len * inner) + " + i % " + U32(inner) +
               ";\n"
               "  var s = " +
               std::string(in.dtype == DType::kI32 ? "0i" : "0.0") +
               ";\n"
               "  for (var j = 0u; j < " +
               U32(len) + "; j = j + 1u) { s = s + " + load + "base + j * " + U32(inner) + close +
               "; }\n"
               "  out[i] = " +
               store("s" + scale) + ";\n}\n";
  out.workgroups = LinearGrid(outputs);
  return true;
}

Generated SumTile(const Module& m, const Kernel& k, const Tiling& tiling, const Tile& t,
                  const std::array<int64_t, 2>& offsets) {
  const TileSpace& sp = tiling.space;
  const bool mean = k.op == "mean";
  const bool finishes = t.Finishes(sp);
  Generated out;
  if (sp.kind == TileSpace::Kind::kWholeSum) {
    // Lane t of the tree adds the tile's elements j = t, t + 256, ... (the tile starts at a
    // multiple of 256, so they are the lane's own), after its partial sum of the tiles before;
    // the last tile combines the lanes as the untiled kernel does.
    const std::string head =
        "@group(0) @binding(0) var<storage, read> in0: array<f32>;\n"
        "@group(0) @binding(1) var<storage, read_write> lanes: array<f32>;\n"
        "@group(0) @binding(2) var<storage, read_write> out: array<f32>;\n";
    const std::string term = "in0[" + (offsets[0] ? U32(offsets[0]) + " + " : std::string()) + "j]";
    const std::string scale = mean ? " / " + F32(static_cast<double>(sp.depth)) : "";
    out.source = head + LaneTileEntry(term, t.depth, t.Continues(), finishes,
                                      "    out[0] = partial[0]" + scale + ";\n");
    out.workgroups = {1, 1, 1};
    return out;
  }
  // Along an axis: one invocation per output of the tile adds the tile's stretch of the axis in
  // order after the partial sum stored in the output; the mean divides once, in the last tile.
  const int64_t inner = sp.cols, len = sp.depth;
  const std::string o = "(i / " + U32(t.cols) + ")", q = "(i % " + U32(t.cols) + ")";
  const std::string at = U32(offsets[1]) + " + " + o + " * " + U32(inner) + " + " + q;
  const std::string scale = mean && finishes ? " / " + F32(static_cast<double>(len)) : "";
  out.source = Bindings(m, k) + "\n" + LinearEntry(t.rows * t.cols) +
               "  let base = " + U32(offsets[0]) + " + " + o + " * " + U32(len * inner) + " + " +
               q +
               ";\n"
               "  var s = " +
               (t.Continues() ? "out[" + at + "]" : std::string("0.0")) +
               ";\n"
               "  for (var j = 0u; j < " +
               U32(t.depth) + "; j = j + 1u) { s = s + in0[base + j * " + U32(inner) +
               "]; }\n"
               "  out[" +
               at + "] = s" + scale + ";\n}\n";
  out.workgroups = LinearGrid(t.rows * t.cols);
  return out;
}

Generated CumsumTile(const Module& m, const Kernel& k, const Tiling& tiling, const Tile& t,
                     const std::array<int64_t, 2>& offsets) {
  // One invocation per line of the tile walks the tile's stretch of the axis in order, as the
  // untiled kernel walks the whole line; a tile that continues starts from the running sum the
  // tile before stored at the element just before its own (its output window takes that element).
  const TileSpace& sp = tiling.space;
  const int64_t inner = sp.cols, len = sp.depth;
  const std::string o = "(i / " + U32(t.cols) + ")", q = "(i % " + U32(t.cols) + ")";
  const std::string line = o + " * " + U32(len * inner) + " + " + q;
  Generated out;
  out.source = Bindings(m, k) + "\n" + LinearEntry(t.rows * t.cols) +
               "  let read_at = " + U32(offsets[0]) + " + " + line +
               ";\n  let write_at = " + U32(offsets[1]) + " + " + line + ";\n  var s = " +
               (t.Continues() ? "out[write_at - " + U32(inner) + "]" : std::string("0.0")) +
               ";\n"
               "  for (var j = 0u; j < " +
               U32(t.depth) + "; j = j + 1u) {\n    s = s + in0[read_at + j * " + U32(inner) +
               "];\n    out[write_at + j * " + U32(inner) + "] = s;\n  }\n}\n";
  out.workgroups = LinearGrid(t.rows * t.cols);
  return out;
}

}  // namespace scellis::kernel::wgsl
