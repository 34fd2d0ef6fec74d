// WGSL for a temporally blocked loop body: one dispatch runs several iterations of a rank-2
// stencil. Each workgroup loads its output tile plus a halo of radius × steps cells into workgroup
// memory, then advances the whole block one iteration at a time, the valid region shrinking by the
// radius each time, and writes the tile's interior. Which cells an iteration advances is decided by
// each cell's distance to the block's edge, computed once per dispatch. The halo is recomputed by the neighbouring
// workgroups too (overlapped tiles), so workgroups never exchange values and one dispatch needs no
// global barrier. Every cell of every iteration evaluates the body's own expression on the same
// operands, so the results are the unblocked kernel's.
//
// Boundaries are applied in the grid's coordinates, as the reference's ShiftedRead does: a `zero`
// read outside the grid gives 0, a `clamp` read takes the nearest cell inside (which lies in the
// block, between the cell and the read), and a `wrap` block is loaded through the torus, so its
// halo cells are the cells across the edge and are advanced like any other.
#include <algorithm>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {
namespace {

constexpr int64_t kInvocations = 256;

std::string I32(int64_t v) {
  return std::to_string(v) + "i";
}

// The kernel inputs other than the carried one that the body reads at the cell itself (not
// shifted). They do not change between iterations, so each invocation loads its cells' values
// once, before the first iteration, and passes them to `cell` as arguments `x<n>` (read from
// global memory in every iteration, they were most of a blocked Jacobi sweep's time on an H200).
std::vector<int> PreloadedInputs(const Kernel& k, int carry) {
  std::vector<bool> read_directly(k.inputs.size(), false);
  for (const ExprStep& e : k.expr)
    for (int o : e.operands)
      if (!IsStepRef(o) && e.op != "shift") read_directly[o] = true;
  std::vector<int> preloaded;
  for (size_t n = 0; n < k.inputs.size(); ++n)
    if (read_directly[n] && static_cast<int>(n) != carry) preloaded.push_back(static_cast<int>(n));
  return preloaded;
}

// Input n's element at grid cell (gy, gx), broadcast to the grid; element 0 off the grid.
std::string GridRead(const Module& m, const Kernel& k, int n) {
  const std::vector<int64_t> strides = BroadcastStrides(
      m.graph().at(k.inputs[n]).type.sizes(), m.graph().at(k.output).type.sizes());
  return "in" + std::to_string(n) + "[select(0u, u32(gy) * " + U32(strides[0]) + " + u32(gx) * " +
         U32(strides[1]) + ", on_grid)]";
}

// The body of `fn cell(c, ly, lx, gy, gx, x<n>...) -> f32` for a fused kernel: kernel input
// `carry` is read from the block (`cur`, edge `w`) at constant offsets from the cell's index c
// (under `clamp`, at the clamped cell), the preloaded inputs arrive as arguments, and shifted
// reads of other inputs go to their buffers.
std::string FusedCell(const Module& m, const Kernel& k, int carry, int64_t w,
                      const std::string& boundary) {
  const std::vector<int64_t> sizes = m.graph().at(k.output).type.sizes();
  const int64_t rows = sizes[0], cols = sizes[1];
  std::string body = "  let d0 = u32(gy);\n  let d1 = u32(gx);\n";
  for (const ExprStep& e : k.expr) {
    if (e.op == "shift" || std::find(e.operands.begin(), e.operands.end(), carry) == e.operands.end())
      continue;
    body += "  let x" + std::to_string(carry) + " = cur[u32(c)];\n";
    break;
  }
  body += ExpressionSteps(m, k, [&](const ExprStep& e, const std::string& name) {
    if (e.operands.at(0) != carry) return ShiftedLoad(m, k, e, 2, name);
    const auto shifts = m.graph().at(e.node).attrs.at("shifts").get<std::vector<int64_t>>();
    const std::string sy = I32(shifts[0]), sx = I32(shifts[1]);
    // The read's offset in the block: a constant, except under `clamp`.
    const std::string offset = I32(-(shifts[0] * w + shifts[1]));
    if (boundary == "wrap") return "  let " + name + " = cur[u32(c + " + offset + ")];\n";
    if (boundary == "clamp") {
      return "  let " + name + " = cur[u32((ly + clamp(gy - " + sy + ", 0i, " + I32(rows - 1) +
             ") - gy) * " + I32(w) + " + lx + clamp(gx - " + sx + ", 0i, " + I32(cols - 1) +
             ") - gx)];\n";
    }
    // `zero`: a block cell off the grid is loaded as 0 and never advanced, so the read itself
    // gives the boundary's 0 without a test.
    return "  let " + name + " = cur[u32(c + " + offset + ")];\n";
  });
  return body + "  return s" + std::to_string(k.expr.size() - 1) + ";\n";
}

// Game of Life on the torus, as GenerateStencil: alive when > 0.5, NaN among the nine gives NaN.
// The nine reads are written out at constant offsets from the cell: written as a loop, the
// blocked kernel ran slower on an H200 than one dispatch per generation.
std::string LifeCell(int64_t w) {
  std::string s = "  var n = 0u;\n  var nan = false;\n";
  for (int dy = -1; dy <= 1; ++dy) {
    for (int dx = -1; dx <= 1; ++dx) {
      const std::string v = "v" + std::to_string((dy + 1) * 3 + dx + 1);
      s += "  let " + v + " = cur[u32(c + " + I32(dy * w + dx) + ")];\n  nan = nan || is_nan_f32(" +
           v + ");\n";
      if (dy || dx) s += "  n = n + select(0u, 1u, " + v + " > 0.5);\n";
    }
  }
  return s + "  return select(select(0.0, 1.0, n == 3u || (v4 > 0.5 && n == 2u)), nan_f32(), nan);\n";
}

}  // namespace

Generated TemporalBlock(const Module& m, const Kernel& k, const BlockShape& b) {
  const std::vector<int64_t> sizes = m.graph().at(k.output).type.sizes();
  const int64_t rows = sizes[0], cols = sizes[1];
  const int64_t w = b.tile + 2 * b.halo, cells = w * w;
  const int64_t per_invocation = (cells + kInvocations - 1) / kInvocations;
  const bool life = k.kind == KernelKind::kOp && k.op == "life";
  const std::string boundary = life ? "wrap" : b.boundary;
  const std::string carry_buffer = "in" + std::to_string(b.carry);
  const std::vector<int> preloaded = life ? std::vector<int>{} : PreloadedInputs(k, b.carry);
  std::string cell_params, cell_args, preload;
  for (int n : preloaded) {
    const std::string x = "x" + std::to_string(n), pre = "pre" + std::to_string(n);
    cell_params += ", " + x + ": f32";
    cell_args += ", " + pre + "[j]";
    preload += "  var " + pre + ": array<f32, " + std::to_string(per_invocation) + ">;\n";
  }

  // The grid coordinates of block cell (ly, lx): through the torus for `wrap`; otherwise they
  // may lie outside the grid, where no cell is computed (nothing reads one).
  const std::string grid_coords =
      "    var gy = oy + ly;\n    var gx = ox + lx;\n" +
      (boundary == "wrap" ? "    gy = ((gy % " + I32(rows) + ") + " + I32(rows) + ") % " +
                                I32(rows) + ";\n    gx = ((gx % " + I32(cols) + ") + " +
                                I32(cols) + ") % " + I32(cols) + ";\n    let on_grid = true;\n"
                          : "    let on_grid = gy >= 0i && gy < " + I32(rows) + " && gx >= 0i && gx < " +
                                I32(cols) + ";\n");
  std::string s =
      "// " + std::to_string(b.steps) + " iterations per dispatch, " + std::to_string(b.tile) +
      "x" + std::to_string(b.tile) + " tiles, halo " + std::to_string(b.halo) + "\n" +
      Bindings(m, k) + (life ? std::string(kSpecialValueFns) : ExpressionHelpers(m, k)) +
      "var<workgroup> cur: array<f32, " + std::to_string(cells) +
      ">;\n\n"
      "fn cell(c: i32, ly: i32, lx: i32, gy: i32, gx: i32" + cell_params + ") -> f32 {\n" +
      (life ? LifeCell(w) : FusedCell(m, k, b.carry, w, boundary)) +
      "}\n\n"
      "@compute @workgroup_size(" +
      std::to_string(kInvocations) +
      ")\n"
      "fn main(@builtin(workgroup_id) wg: vec3<u32>,\n"
      "        @builtin(local_invocation_index) t: u32) {\n"
      "  let oy = i32(wg.y) * " +
      I32(b.tile) + " - " + I32(b.halo) +
      ";\n"
      "  let ox = i32(wg.x) * " +
      I32(b.tile) + " - " + I32(b.halo) +
      ";\n" +
      preload + "  var edge: array<i32, " + std::to_string(per_invocation) + ">;\n" +
      "  for (var j = 0u; j < " + U32(per_invocation) + "; j = j + 1u) {\n"
      "    let c = t + j * " + U32(kInvocations) + ";\n    if (c >= " + U32(cells) + ") { break; }\n"
      "    let ly = i32(c / " +
      U32(w) + ");\n    let lx = i32(c % " + U32(w) + ");\n" + grid_coords + "    cur[c] = select(0.0, " +
      carry_buffer + "[u32(select(0i, gy * " + I32(cols) + " + gx, on_grid))], on_grid);\n" +
      "    edge[j] = select(-1i, min(min(ly, lx), min(" + I32(w - 1) + " - ly, " + I32(w - 1) +
      " - lx)), on_grid);\n" +
      [&] {
        std::string loads;
        for (int n : preloaded)
          loads += "    pre" + std::to_string(n) + "[j] = select(0.0, " + GridRead(m, k, n) +
                   ", on_grid);\n";
        return loads;
      }() +
      "  }\n"
      "  workgroupBarrier();\n"
      "  for (var step = 1i; step <= " +
      I32(b.steps) +
      "; step = step + 1i) {\n"
      "    // The cells this iteration can advance: their neighbours were valid after the last.\n"
      "    let lo = step * " +
      I32(b.radius) + ";\n" + "    var next: array<f32, " +
      std::to_string(per_invocation) +
      ">;\n"
      "    for (var j = 0u; j < " +
      U32(per_invocation) +
      "; j = j + 1u) {\n"
      "      let c = t + j * " +
      U32(kInvocations) + ";\n      if (c >= " + U32(cells) +
      ") { break; }\n"
      "      if (edge[j] < lo) { continue; }\n"
      "      let ly = i32(c / " +
      U32(w) + ");\n      let lx = i32(c % " + U32(w) +
      ");\n" +
      [&] {
        std::string g = grid_coords;  // indented one level deeper
        std::string out;
        for (size_t p = 0; p < g.size(); ++p) {
          out += g[p];
          if (g[p] == '\n' && p + 1 < g.size()) out += "  ";
        }
        return "  " + out;
      }() +
      "      next[j] = cell(i32(c), ly, lx, gy, gx" + cell_args + ");\n"
      "    }\n"
      "    workgroupBarrier();\n"
      "    for (var j = 0u; j < " +
      U32(per_invocation) +
      "; j = j + 1u) {\n"
      "      let c = t + j * " +
      U32(kInvocations) + ";\n      if (c < " + U32(cells) +
      " && edge[j] >= lo) { cur[c] = next[j]; }\n"
      "    }\n"
      "    workgroupBarrier();\n"
      "  }\n"
      "  for (var c = t; c < " +
      U32(b.tile * b.tile) + "; c = c + " + U32(kInvocations) +
      ") {\n"
      "    let ly = i32(c / " +
      U32(b.tile) + ") + " + I32(b.halo) + ";\n    let lx = i32(c % " + U32(b.tile) + ") + " +
      I32(b.halo) +
      ";\n"
      "    let gy = oy + ly;\n"
      "    let gx = ox + lx;\n"
      "    if (gy < " +
      I32(rows) + " && gx < " + I32(cols) + ") { out[u32(gy * " + I32(cols) +
      " + gx)] = cur[u32(ly * " + I32(w) +
      " + lx)]; }\n"
      "  }\n"
      "}\n";
  Generated g;
  g.source = std::move(s);
  g.workgroups = {static_cast<uint32_t>((cols + b.tile - 1) / b.tile),
                  static_cast<uint32_t>((rows + b.tile - 1) / b.tile), 1};
  return g;
}

}  // namespace scellis::kernel::wgsl
