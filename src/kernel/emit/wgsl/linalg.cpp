// WGSL matrix products, one kernel per schedule (kernel::MatmulSchedule, chosen by the
// schedule-matmul pass). Whatever the schedule, each output element is one invocation's
// accumulator, which adds its K products in increasing order starting from zero (no split-K),
// the reference's order; the schedules differ only in how many outputs an invocation owns and what
// the workgroup stages:
//   - tiled 1x1: 16x16 output tiles, one output each, K staged 16 to 64 deep in workgroup memory;
//   - tiled, register-blocked: tile_m x tile_n outputs per workgroup, block_m x block_n per
//     invocation held in vec4 registers, K staged tile_k at a time, optionally loaded as vec4;
//   - per-element: one invocation per output over a linear grid, for grids too large to tile.
// Rows and columns past the edge load zeros; their products add exact zeros after the last real
// term, so every element still sums its K products in increasing order.
#include <algorithm>
#include <functional>
#include <tuple>
#include <utility>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {

namespace {

constexpr const char* kFirstWorkgroup = "wg.x == 0u && wg.y == 0u && wg.z == 0u";

struct Operands {
  MatmulShape shape;
  std::vector<int64_t> batch, sa, sb;  // batch dims of the output; A's and B's broadcast strides
  // One tile of a larger product (kernel/tiling.h) when `tiled`: `shape` is the tile's, the
  // operands keep their own row lengths (lda, ldb, ldo, in elements), and the tile's first element
  // of each lies at off_a, off_b, off_o of its bound window, less where its first product starts
  // (a batched tile adds each of its products' starts, from the product's index batch0 + z in the
  // whole batch, so these may be negative: taken modulo 2^32, as the u32 sums they start). A tile
  // that `continues` starts each accumulator from the partial sum an earlier tile along K stored.
  bool tiled = false, continues = false;
  int64_t lda = 0, ldb = 0, ldo = 0, off_a = 0, off_b = 0, off_o = 0, batch0 = 0;
  MatmulShape whole;  // the untiled product's shape (its matrices' sizes give the batch strides)
};

Operands OperandsOf(const Module& m, const Kernel& k) {
  Operands o;
  o.shape = MatmulShapeOf(m, k);
  const webir::Node& node = m.graph().at(k.OpNode());
  std::vector<int64_t> out_sizes = node.type.sizes();
  o.batch.assign(out_sizes.begin(), out_sizes.end() - 2);
  std::vector<int64_t> sizes_a = m.graph().at(node.args[0]).type.sizes();
  std::vector<int64_t> sizes_b = m.graph().at(node.args[1]).type.sizes();
  o.sa = BroadcastStrides({sizes_a.begin(), sizes_a.end() - 2}, o.batch);
  o.sb = BroadcastStrides({sizes_b.begin(), sizes_b.end() - 2}, o.batch);
  o.lda = o.shape.trans_a ? o.shape.m : o.shape.k;
  o.ldb = o.shape.trans_b ? o.shape.k : o.shape.n;
  o.ldo = o.shape.n;
  o.whole = o.shape;
  return o;
}

// A u32 literal of `v` modulo 2^32: a tile's offset before its product's start is added.
std::string Wrapped(int64_t v) {
  return U32(v & 0xffffffffLL);
}

// Element offsets of A's and B's matrices for batch element `index` (a WGSL u32 expression).
// A tile's index is its product's in the tile; the product's in the whole batch is batch0 on.
std::string BatchOffsets(const Operands& o, const std::string& index) {
  const int64_t M = o.whole.m, K = o.whole.k, N = o.whole.n;
  const std::string at = o.batch0 ? index + " + " + U32(o.batch0) : index;
  std::string s = "  var rem = " + at + ";\n  var off_a = " + Wrapped(o.off_a) +
                  ";\n  var off_b = " + Wrapped(o.off_b) + ";\n";
  if (o.tiled) s += "  let off_o = " + Wrapped(o.off_o) + " + rem * " + U32(M * N) + ";\n";
  for (int d = static_cast<int>(o.batch.size()) - 1; d >= 0; --d) {
    std::string size = U32(std::max<int64_t>(o.batch[d], 1));
    s += "  { let bd = rem % " + size + "; rem = rem / " + size + "; off_a = off_a + bd * " +
         U32(o.sa[d] * M * K) + "; off_b = off_b + bd * " + U32(o.sb[d] * K * N) + "; }\n";
  }
  return s;
}

// A folded transpose (rank 2 only) is read with swapped strides: A^T's element (r, k) is at
// k * M + r of its operand, B^T's element (k, c) at c * K + k.
std::string AIndex(const Operands& o, const std::string& row, const std::string& col) {
  return o.shape.trans_a ? "off_a + " + col + " * " + U32(o.lda) + " + " + row
                         : "off_a + " + row + " * " + U32(o.lda) + " + " + col;
}
std::string BIndex(const Operands& o, const std::string& row, const std::string& col) {
  return o.shape.trans_b ? "off_b + " + col + " * " + U32(o.ldb) + " + " + row
                         : "off_b + " + row + " * " + U32(o.ldb) + " + " + col;
}
// The output element (row, col) of batch element wg.z (a tile's from off_o, which BatchOffsets
// declares).
std::string OutIndex(const Operands& o, const std::string& row, const std::string& col) {
  if (o.tiled) return "off_o + " + row + " * " + U32(o.ldo) + " + " + col;
  return "wg.z * " + U32(o.shape.m * o.shape.n) + " + " + row + " * " + U32(o.shape.n) + " + " +
         col;
}
// An accumulator's first value: zero, or the partial sum a tile continues (where the element is
// inside the tile; the others are never stored).
std::string AccStart(const Operands& o, const std::string& index, const std::string& inside) {
  if (!o.continues) return "0.0";
  return inside.empty() ? "out[" + index + "]" : "select(0.0, out[" + index + "], " + inside + ")";
}

// An f16 product: its operands are loaded as f32 (exact), the products and their sum are f32 in
// increasing K, and the sum is rounded once to f16 when stored, as the reference rounds it. (Each
// product of two f16 values is exact in f32, so a fused multiply-add gives the same bits.)
bool HalfProduct(const Module& m, const Kernel& k) {
  return m.graph().at(k.OpNode()).type.dtype == DType::kF16;
}
// What is stored for the finished sum `acc` of the output element at `index` (a u32 expression):
// the sum, or its epilogue's result.
std::string Stored(const Module& m, const Kernel& k, const std::string& acc,
                   const std::string& index) {
  if (k.HasEpilogue()) return "epilogue(" + acc + ", " + index + ")";
  return HalfProduct(m, k) ? "f16(round_f16(" + acc + "))" : acc;
}

// The statement storing the finished sum `acc` of output element `index`: into `out` (through the
// epilogue), or, in a matmul that updates parameters, the update of that element of its parameter.
std::string StoreSum(const Module& m, const Kernel& k, const std::string& acc,
                     const std::string& index) {
  if (k.UpdatesParameters())
    return GradientUpdateFn(k, k.update_product) + "(" + index + ", " + acc + ");";
  return "out[" + index + "] = " + Stored(m, k, acc, index) + ";";
}

// fn epilogue(x0: f32, e: u32) -> f32: the epilogue's steps (Kernel::expr) applied to the sum x0
// of output element e. It is the elementwise kernel the epilogue was (EpilogueKernel), with the
// sum in a register instead of a buffer: its inputs of the output's shape are read at e,
// broadcast ones at their index of e. Binding j + 1 holds the elementwise kernel's input j
// (bindings 0 and 1 are A and B). A matmul with an epilogue is never tiled (the
// fuse-matmul-epilogue pass leaves a matmul that needs tiles alone), so e is the whole output's.
// `with_helpers`: preceded by the helper functions its steps need (ExpressionHelpers).
std::string EpilogueFn(const Module& m, const Kernel& k, bool with_helpers = true) {
  if (!k.HasEpilogue()) return "";
  const Kernel e = EpilogueKernel(k);
  const std::vector<int64_t> sizes = m.graph().at(k.output).type.sizes();
  const std::vector<int64_t> row_major = RowMajorStrides(sizes);
  std::string body;
  bool indexed = false;
  for (size_t j = 1; j < e.inputs.size(); ++j) {
    const std::vector<int64_t> strides =
        BroadcastStrides(m.graph().at(e.inputs[j]).type.sizes(), sizes);
    std::string index = "e";
    if (strides != row_major) {
      if (!indexed) {
        body += "  var rem = e;\n";
        for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
          const std::string size = U32(std::max<int64_t>(sizes[d], 1));
          body += "  let d" + std::to_string(d) + " = rem % " + size + ";\n";
          if (d) body += "  rem = rem / " + size + ";\n";
        }
        indexed = true;
      }
      index.clear();
      for (size_t d = 0; d < sizes.size(); ++d) {
        if (!strides[d]) continue;
        if (!index.empty()) index += " + ";
        index += "d" + std::to_string(d) + " * " + U32(strides[d]);
      }
      if (index.empty()) index = "0u";
    }
    body += "  let x" + std::to_string(j) + " = " +
            RegisterValue(m.graph().at(e.inputs[j]).type.dtype,
                          "in" + std::to_string(j + 1) + "[" + index + "]") +
            ";\n";
  }
  body += ExpressionSteps(m, e, [](const ExprStep&, const std::string&) { return std::string(); });
  return (with_helpers ? ExpressionHelpers(m, e) : std::string()) +
         "fn epilogue(x0: f32, e: u32) -> f32 {\n" + body + "  return s" +
         std::to_string(e.expr.size() - 1) + ";\n}\n";
}
// An operand element as f32: converted for an f16 product, as it is for f32.
std::string Loaded(const Module& m, const Kernel& k, const std::string& element) {
  return HalfProduct(m, k) ? "f32(" + element + ")" : element;
}
std::string HalfHelpers(const Module& m, const Kernel& k) {
  return HalfProduct(m, k) ? kRoundToHalf : "";
}

// Whether the matmul also sums the columns of its B operand (merge-bias-gradient: a bias's
// gradient beside its weight's, both read from the same upstream gradient).
bool HasColumnSums(const Kernel& k) {
  return k.UpdatesParameters() ? k.update_column_sums >= 0 : !k.extra_outputs.empty();
}

// The column sums of B: out1[c] adds B's column c in row order from 0.0, as the sum kernel does
// (in a matmul that updates parameters, the bias's update takes the sum instead). The invocations
// for which `first` holds do it, lane `lane` of `lanes` taking columns lane, lane + lanes, ...; B
// is bound as vec4 when `vec4_b`.
std::string ColumnSumsOfB(const Kernel& k, const MatmulShape& s, const std::string& first,
                          const std::string& lane, int64_t lanes, bool vec4_b) {
  const bool updates = k.UpdatesParameters();
  if (!HasColumnSums(k)) return "";
  const std::string store =
      updates ? GradientUpdateFn(k, k.update_column_sums) + "(sc, cs);" : "out1[sc] = cs;";
  const std::string N = U32(s.n), at = "sr * " + N + " + sc";
  const std::string load = vec4_b ? "in1[(" + at + ") / 4u][(" + at + ") % 4u]" : "in1[" + at + "]";
  return "  if (" + first + ") {\n    for (var sc = " + lane + "; sc < " + N + "; sc = sc + " +
         U32(lanes) +
         ") {\n"
         "      var cs = 0.0;\n"
         "      for (var sr = 0u; sr < " +
         U32(s.k) + "; sr = sr + 1u) { cs = cs + " + load +
         "; }\n"
         "      " +
         store +
         "\n"
         "    }\n"
         "  }\n";
}

// A tiled matmul's column sums, in a workgroup of their own: the first of one more row of
// workgroups past the product's `grid` (the rest of that row return at once), so they run beside
// the product's tiles. Done by the product's first workgroup before its own tile, they held that
// workgroup, and with it the whole dispatch, back by their K dependent loads and the bias's update
// (the MLP step's two weight updates, whose grids are one wave on a large GPU). A grid with no row
// to spare keeps them in its first workgroup.
std::string TiledColumnSums(const Kernel& k, const MatmulShape& s, const std::string& lane,
                            int64_t lanes, bool vec4_b, std::array<uint32_t, 3>& grid) {
  if (!HasColumnSums(k)) return "";
  if (grid[1] >= kMaxWorkgroupsPerDim)
    return ColumnSumsOfB(k, s, kFirstWorkgroup, lane, lanes, vec4_b);
  const std::string own_row = "wg.y == " + U32(grid[1]);
  grid[1] += 1;
  return ColumnSumsOfB(k, s, own_row + " && wg.x == 0u && wg.z == 0u", lane, lanes, vec4_b) +
         "  if (" + own_row + ") { return; }\n";
}

void PerElement(const Module& m, const Kernel& k, const Operands& o, Generated& out) {
  const MatmulShape& s = o.shape;
  // Sizes of 0 would be constant divisions by zero, which WGSL rejects; an empty output returns
  // before reaching them, so 1 serves. (K = 0 is fine: the loop adds nothing and writes zeros.)
  auto nonzero = [](int64_t v) { return U32(std::max<int64_t>(v, 1)); };
  const int64_t elements = s.batches * s.m * s.n;
  const std::string out_at = o.tiled ? OutIndex(o, "r", "c") : "i";
  out.source = "// matmul per-element\n" + Bindings(m, k) + HalfHelpers(m, k) + EpilogueFn(m, k) +
               GradientUpdateFns(m, k) + "\n" + LinearEntry(elements) +
               ColumnSumsOfB(k, s, "i < " + U32(s.n), "i", s.n, false) +
               BatchOffsets(o, "i / " + nonzero(s.m * s.n)) + "  let r = (i / " + nonzero(s.n) +
               ") % " + nonzero(s.m) + ";\n  let c = i % " + nonzero(s.n) +
               ";\n  var acc = " + AccStart(o, out_at, "") + ";\n  for (var kk = 0u; kk < " +
               U32(s.k) + "; kk = kk + 1u) {\n    acc = acc + " +
               Loaded(m, k, "in0[" + AIndex(o, "r", "kk") + "]") + " * " +
               Loaded(m, k, "in1[" + BIndex(o, "kk", "c") + "]") + ";\n  }\n  " +
               StoreSum(m, k, "acc", out_at) + "\n}\n";
  out.workgroups = LinearGrid(elements);
}

// One output per invocation; the workgroup is tile x tile invocations. A K step stages tile_k
// (a multiple of the tile) values of each operand, each invocation loading tile_k / tile of each:
// a deeper step means fewer barriers and more loads in flight, which is what a grid too small to
// fill the GPU (a skinny product: few rows, long K) waits on.
//
// Neighbouring invocations (along lid.x) load neighbouring elements: along K for A and along N for
// B as stored, but along M for a transposed A (a weight's gradient, x^T · dy) and along K for a
// transposed B, whose elements lie M (for A^T) or K (for B^T) floats apart the other way, so that
// a warp's loads fall in a few cache lines instead of one line each. Only which invocation loads
// which element changes: the tiles hold the same values, and every sum adds them in the same order.
void TiledOneOutput(const Module& m, const Kernel& k, const Operands& o, const MatmulSchedule& sch,
                    Generated& out) {
  const MatmulShape& s = o.shape;
  const int tile = sch.tile_m;
  const int depth = sch.tile_k / tile;  // loads of each operand per invocation and K step
  const std::string T = U32(tile), TK = U32(sch.tile_k);
  const std::string M = U32(s.m), N = U32(s.n), K = U32(s.k);
  // A's rows are 16 floats apart (as the 16-deep tile's are), so that the two rows of invocations
  // in a warp of a 16 x 16 tile read their broadcast elements from different banks of workgroup
  // memory; padding the 8 x 8 tile's rows 8 banks apart instead (72 floats for 64 deep) made the
  // MLP's first product slower on an H100 (2026-12-06), so it is not done. Where a warp writes
  // down a tile's column (the transposed loads), A's rows lie 32 / tile banks apart and B's rows
  // are 32 / tile floats longer than the tile, so that its writes fall in distinct banks and its
  // reads stay in distinct ones.
  const bool by_rows = 32 % tile == 0 && sch.tile_n == tile;  // warps span whole rows
  const bool swap_a = s.trans_a && by_rows, swap_b = s.trans_b && by_rows;
  // The least stride from tile_k up whose rows lie `banks` banks apart.
  auto padded = [&](int64_t banks) { return sch.tile_k + ((banks - sch.tile_k) % 32 + 32) % 32; };
  const int64_t row_a = swap_a ? padded(32 / tile) : (depth == 1 ? sch.tile_k : sch.tile_k + 16);
  const int64_t row_b = swap_b ? tile + 32 / tile : tile;
  const std::string RA = U32(row_a), RB = U32(row_b);
  std::string loads;
  for (int j = 0; j < depth; ++j) {
    // The first load's names and indices are the single-load kernel's own.
    const std::string sfx = depth == 1 ? "" : std::to_string(j);
    const std::string shift = j == 0 ? "" : " + " + U32(int64_t{j} * tile);
    const std::string ka = "ka" + sfx, kb = "kb" + sfx;
    // A's element (row, t + kq) of the tile; B's (t + kq, col).
    const std::string a_row = swap_a ? "lid.x" : "lid.y", a_k = swap_a ? "lid.y" : "lid.x";
    const std::string b_k = swap_b ? "lid.x" : "lid.y", b_col = swap_b ? "lid.y" : "lid.x";
    const std::string ra = swap_a ? "rt" : "r", cb = swap_b ? "ct" : "c";
    const std::string b_row = j == 0 ? b_k : "(" + b_k + shift + ")";
    loads += "    let " + ka + " = t + " + a_k + shift + ";\n    let " + kb + " = t + " + b_k +
             shift + ";\n    tile_a[" + a_row + " * " + RA + " + " + a_k + shift +
             "] = select(0.0, " + Loaded(m, k, "in0[" + AIndex(o, ra, ka) + "]") + ", " + ra +
             " < " + M + " && " + ka + " < " + K + ");\n    tile_b[" + b_row + " * " + RB + " + " +
             b_col + "] = select(0.0, " + Loaded(m, k, "in1[" + BIndex(o, kb, cb) + "]") + ", " +
             kb + " < " + K + " && " + cb + " < " + N + ");\n";
  }
  out.workgroups = {static_cast<uint32_t>((s.n + sch.tile_n - 1) / sch.tile_n),
                    static_cast<uint32_t>((s.m + sch.tile_m - 1) / sch.tile_m),
                    static_cast<uint32_t>(s.batches)};
  const std::string column_sums =
      TiledColumnSums(k, s, "lid.y * " + U32(sch.tile_n) + " + lid.x",
                      int64_t{sch.tile_m} * sch.tile_n, false, out.workgroups);
  std::string transposed_loads;
  if (swap_a) transposed_loads += "  let rt = wg.y * " + T + " + lid.x;\n";
  if (swap_b) transposed_loads += "  let ct = wg.x * " + T + " + lid.y;\n";
  out.source = "// matmul " + sch.Name() + "\n" + Bindings(m, k) + HalfHelpers(m, k) +
               EpilogueFn(m, k) + GradientUpdateFns(m, k) + "var<workgroup> tile_a: array<f32, " +
               std::to_string(tile * row_a) + ">;\nvar<workgroup> tile_b: array<f32, " +
               std::to_string(sch.tile_k * row_b) + ">;\n\n@compute @workgroup_size(" +
               std::to_string(sch.tile_n) + ", " + std::to_string(sch.tile_m) +
               ")\nfn main(@builtin(workgroup_id) wg: vec3<u32>,\n"
               "        @builtin(local_invocation_id) lid: vec3<u32>) {\n" +
               column_sums + BatchOffsets(o, "wg.z") + "  let r = wg.y * " + T +
               " + lid.y;\n  let c = wg.x * " + T + " + lid.x;\n" + transposed_loads +
               "  var acc = " + AccStart(o, OutIndex(o, "r", "c"), "r < " + M + " && c < " + N) +
               ";\n  for (var t = 0u; t < " + K + "; t = t + " + TK + ") {\n" + loads +
               "    workgroupBarrier();\n    for (var kk = 0u; kk < " + TK +
               "; kk = kk + 1u) {\n      acc = acc + tile_a[lid.y * " + RA +
               " + kk] * tile_b[kk * " + RB +
               " + lid.x];\n    }\n    workgroupBarrier();\n  }\n  if (r < " + M + " && c < " + N +
               ") { " + StoreSum(m, k, "acc", OutIndex(o, "r", "c")) + " }\n}\n";
}

// One operand of a register-blocked matmul as its workgroup tile sees it: the tile holds quads of
// 4 consecutive elements along M (A) or N (B), `extent` of them, at each of tile_k values of k
// ([k][quad], K-major), so the inner loop reads a quad with one load.
struct TileOperand {
  std::string tile, buffer;  // "tile_a", "in0"
  int extent, tile_k;        // tile_m (or tile_n), tile_k
  int vec;                   // 4: the buffer is read as vec4 along its contiguous dimension
  bool quads_contiguous;     // the operand is contiguous along the quads' dimension (A^T, or B)
  std::string base, bound;   // the tile's first row (or column) and the operand's M (or N)
  bool whole;                // M (or N) and K are whole numbers of tiles: no load needs a bound
  std::function<std::string(const std::string& q, const std::string& k)> index;  // element index
  int64_t q_stride = 1, k_stride = 1;  // how far apart index() puts neighbours along q and k

  // Read as vec4 along K: 4 x 4 blocks, transposed in registers into 4 quads.
  bool Blocks() const { return vec == 4 && !quads_contiguous; }
  // The units a K step's tile is loaded in: blocks, or quads.
  int Units() const { return Blocks() ? extent / 4 * tile_k / 4 : extent / 4 * tile_k; }
  // Units are numbered in lines of this many: a unit's number e gives its line (e / this: a row
  // of blocks or quads along q, or a k for quads contiguous along q) and its place in the line.
  int UnitsPerLine() const {
    return Blocks() ? tile_k / 4 : quads_contiguous ? extent / 4 : tile_k;
  }
  // Whether a line of units lies at one k, not one quad (or row of blocks) along q.
  bool LineAlongK() const { return !Blocks() && quads_contiguous; }
};

// How TileLoads loads a tile: at once (global memory to workgroup memory), or in two halves
// around the multiply-adds of the tile before it: fetch (global memory to the invocation's prefetch
// registers, TilePrefetchRegisters) and store (those registers to workgroup memory).
enum class TileStage { kAtOnce, kFetch, kStore };

// The invocations that load an operand's tile: tid in [first, first + count), the whole workgroup
// or one of its halves. With prefetch A's tile is loaded by the first half and B's by the second,
// into the same registers (pf_0, pf_1, ...): each invocation holds one operand's share of the next
// step, not both (16 registers in place of 24 for 128 x 128 tiles, the 4096^3 product 39.0 -> 41.8
// TFLOP/s on an H100, 2026-12-06), and every warp issues as many loads as the others.
struct TileLoaders {
  int first, count;
  // The loaders' coordinates and their first unit's source index are computed once, before the
  // loop (HoistedLoaderCoordinates), each round's and each K step's loads adding constants and the
  // step's k to them (TiledBlocked says what it gains, and the loop order that goes with it). Only
  // for prefetched tiles where neither operand's loads need a bound and each loader's rounds start
  // at the same place in a line.
  bool hoisted = false;
};

// The first unit's number of an invocation among the operand's loaders.
std::string LoaderLane(const TileLoaders& loaders) {
  return loaders.first ? "(tid - " + U32(loaders.first) + ")" : "tid";
}

// Whether an operand's loaders may hoist their coordinates (TileLoaders::hoisted).
bool CanHoist(const TileOperand& t, const TileLoaders& loaders) {
  return t.whole && loaders.count % t.UnitsPerLine() == 0 && t.Units() % loaders.count == 0;
}

// The names of a unit's k in the tile and quad along q in the tile: kb and qb for a block, kq and
// qq for a quad, after `prefix`.
std::pair<std::string, std::string> UnitNames(const TileOperand& t, const std::string& prefix) {
  return {prefix + (t.Blocks() ? "kb" : "kq"), prefix + (t.Blocks() ? "qb" : "qq")};
}

// The declarations (each line after `indent`) of the unit numbered `e`'s k and quad, named
// `names` (UnitNames), from its line and its place in the line (TileOperand::UnitsPerLine).
std::string UnitCoordinates(const TileOperand& t, const std::string& indent, const std::string& e,
                            const std::pair<std::string, std::string>& names) {
  const std::string line = U32(t.UnitsPerLine());
  const auto& [k, q] = names;
  const std::string by_line = e + " / " + line, in_line = e + " % " + line;
  if (t.Blocks())
    return indent + "let " + k + " = (" + in_line + ") * 4u;\n" + indent + "let " + q + " = " +
           by_line + ";\n";
  return indent + "let " + k + " = " + (t.LineAlongK() ? by_line : in_line) + ";\n" + indent +
         "let " + q + " = " + (t.LineAlongK() ? in_line : by_line) + ";\n";
}

// The hoisted loaders' coordinates, declared before the loop: their first unit's k and quad in
// the tile (tile_a_kb and tile_a_qb for blocks, tile_b_kq and tile_b_qq for quads), and that
// unit's index in its buffer at the product's first k (tile_a_src).
std::string HoistedLoaderCoordinates(const TileOperand& t, const TileLoaders& loaders) {
  if (!loaders.hoisted) return "";
  const auto names = UnitNames(t, t.tile + "_");
  return UnitCoordinates(t, "  ", LoaderLane(loaders), names) + "  let " + t.tile +
         "_src = " + t.index("(" + t.base + " + " + names.second + " * 4u)", names.first) + ";\n";
}

// The loads of one K step's tile, shared among the invocations, each quad written whole by one
// invocation. Three ways by the operand's layout: read as vec4 along the quads (one load per
// quad); read as vec4 along K (a 4 x 4 block per invocation, transposed in registers into 4 quads);
// read as scalars (4 per quad, consecutive invocations along the contiguous dimension). `k0` is
// the tile's first k. The caller confines a half's loads to its invocations.
std::string TileLoads(const TileOperand& t, const TileLoaders& loaders, const std::string& K,
                      TileStage stage = TileStage::kAtOnce, const std::string& k0 = "t") {
  auto u = [](int64_t v) { return U32(v); };
  // value, or zero where `inside` fails; just the value where every load is inside.
  auto bounded = [&](const std::string& zero, const std::string& value, const std::string& inside) {
    return t.whole ? value : "select(" + zero + ", " + value + ", " + inside + ")";
  };
  const char* lane = "xyzw";
  const int per_k = t.extent / 4;  // quads at one k
  const bool blocks = t.Blocks();
  const int units = t.Units();
  const bool load = stage != TileStage::kStore, store = stage != TileStage::kFetch;
  const int count = loaders.count;
  const bool line_along_k = t.LineAlongK();
  std::string src;
  for (int l = 0; l * count < units; ++l) {
    // The prefetch register of round l's unit (and of its block's row r).
    auto reg = [&](int r) { return "pf_" + std::to_string(blocks ? l * 4 + r : l); };
    std::string body;
    // The unit's k and quad in the tile, and the buffer index of its element (or block row) r.
    std::string kt, qt;
    std::function<std::string(int)> at;
    if (loaders.hoisted) {
      // Round l is count units on: count / UnitsPerLine() lines further along k or q.
      const int64_t lines = int64_t{l} * count / t.UnitsPerLine();
      const auto [k, q] = UnitNames(t, t.tile + "_");
      auto shifted = [&](const std::string& v) {
        return lines ? "(" + v + " + " + u(lines) + ")" : v;
      };
      kt = line_along_k ? shifted(k) : k;
      qt = line_along_k ? q : shifted(q);
      // The first K step's loads (k0 "0u") add a constant only.
      at = [&t, &k0, lines, line_along_k](int r) {
        const int64_t along_q = (line_along_k ? 0 : 4 * lines) + r,
                      along_k = line_along_k ? lines : 0;
        int64_t offset = along_q * t.q_stride;
        std::string k_at;
        if (k0 == "0u") {
          offset += along_k * t.k_stride;
        } else {
          k_at = along_k ? "(" + k0 + " + " + U32(along_k) + ")" : k0;
          k_at = " + " + (t.k_stride == 1 ? k_at : k_at + " * " + U32(t.k_stride));
        }
        return t.tile + "_src" + (offset ? " + " + U32(offset) : "") + k_at;
      };
    } else {
      src += "    {\n      let e = " + LoaderLane(loaders) + " + " + u(int64_t{l} * count) + ";\n";
      std::tie(kt, qt) = UnitNames(t, "");
      body += UnitCoordinates(t, "      ", "e", {kt, qt});
      if (load)
        body += "      let g = " + t.base + " + " + qt + " * 4u;\n      let gk = " + k0 + " + " +
                kt + ";\n";
      at = [&t, blocks](int r) {
        return t.index(blocks || t.vec == 1 ? "(g + " + U32(r) + ")" : "g", "gk");
      };
    }
    auto inside = [&](int r) {
      return (blocks || t.vec == 1 ? "g + " + u(r) : "g") + " < " + t.bound + " && gk < " + K;
    };
    if (blocks) {
      // The 4 x 4 block's rows: v0..v3 at once, or the prefetch registers.
      auto row = [&](int r) {
        return stage == TileStage::kAtOnce ? "v" + std::to_string(r) : reg(r);
      };
      for (int r = 0; load && r < 4; ++r)
        body += std::string(stage == TileStage::kAtOnce ? "      let " : "      ") + row(r) +
                " = " + bounded("vec4<f32>(0.0)", t.buffer + "[(" + at(r) + ") / 4u]", inside(r)) +
                ";\n";
      for (int c = 0; store && c < 4; ++c)
        body += "      " + t.tile + "[(" + kt + " + " + u(c) + ") * " + u(per_k) + " + " + qt +
                "] = vec4<f32>(" + row(0) + "." + lane[c] + ", " + row(1) + "." + lane[c] + ", " +
                row(2) + "." + lane[c] + ", " + row(3) + "." + lane[c] + ");\n";
    } else {
      std::string value;
      if (load) {
        if (t.vec == 4) {
          value = bounded("vec4<f32>(0.0)", t.buffer + "[(" + at(0) + ") / 4u]", inside(0));
        } else {
          value = "vec4<f32>(";
          for (int r = 0; r < 4; ++r)
            value += std::string(r ? ", " : "") +
                     bounded("0.0", t.buffer + "[" + at(r) + "]", inside(r));
          value += ")";
        }
      }
      const std::string slot =
          "      " + t.tile + "[" + kt + " * " + u(per_k) + " + " + qt + "] = ";
      if (stage == TileStage::kAtOnce) body += slot + value + ";\n";
      if (stage == TileStage::kFetch) body += "      " + reg(0) + " = " + value + ";\n";
      if (stage == TileStage::kStore) body += slot + reg(0) + ";\n";
    }
    if (loaders.hoisted) {
      src += body;  // every round is whole (CanHoist)
      continue;
    }
    // The last round's extra invocations have no unit to load.
    if ((l + 1) * count > units) {
      src += "      if (e < " + u(units) + ") {\n" + body + "      }\n";
    } else {
      src += body;
    }
    src += "    }\n";
  }
  return src;
}

// The registers TileLoads' fetch fills, shared by the two operands' loaders: a vec4 per unit an
// invocation loads (4, a 4 x 4 block's rows, where it reads vec4 along K), as many as the operand
// that needs more.
std::string TilePrefetchRegisters(const TileOperand& a, const TileLoaders& a_loaders,
                                  const TileOperand& b, const TileLoaders& b_loaders) {
  auto registers = [](const TileOperand& t, const TileLoaders& loaders) {
    return (t.Units() + loaders.count - 1) / loaders.count * (t.Blocks() ? 4 : 1);
  };
  std::string src;
  for (int n = 0; n < std::max(registers(a, a_loaders), registers(b, b_loaders)); ++n)
    src += "  var pf_" + std::to_string(n) + " = vec4<f32>(0.0);\n";
  return src;
}

// Register-blocked: invocation (x, y) of a (tile_n / block_n) x (tile_m / block_m) workgroup owns
// the output rows 4 * (y + i * wy) + 0..3 and columns 4 * (x + j * wx) + 0..3 of its tile, for
// i < block_m / 4 and j < block_n / 4: interleaved by quads, so that neighbouring invocations read
// neighbouring quads of workgroup memory. Both tiles are stored K-major ([k][m] and [k][n]), so
// each K step reads block_m / 4 + block_n / 4 quads of consecutive floats and does
// block_m * block_n multiply-adds, each a separate product then sum, as the reference does. The
// tiles are arrays of quads, each read with one load and written whole by one invocation
// (TileLoads): a store to one component of a vec4 in workgroup memory may be carried out as a
// write of the whole vec4, racing with the invocations that write its other components.
void TiledBlocked(const Module& m, const Kernel& k, const Operands& o, const MatmulSchedule& sch,
                  Generated& out) {
  const MatmulShape& s = o.shape;
  const int TM = sch.tile_m, TN = sch.tile_n, TK = sch.tile_k;
  const int wx = TN / sch.block_n, wy = TM / sch.block_m, invocations = wx * wy;
  const int bm4 = sch.block_m / 4, bn4 = sch.block_n / 4;
  const int va = sch.vec4_a ? 4 : 1, vb = sch.vec4_b ? 4 : 1;
  const std::string M = U32(s.m), N = U32(s.n), K = U32(s.k);
  auto u = [](int64_t v) { return U32(v); };
  const char* lane = "xyzw";

  std::string src = "// matmul " + sch.Name() + "\n";
  // A and B (as vec4 where the schedule loads them so), an epilogue's or an update's inputs, then
  // the outputs that have bindings.
  src += Bindings(m, k, {va == 4, vb == 4});
  src += EpilogueFn(m, k) + GradientUpdateFns(m, k);
  src += "var<workgroup> tile_a: array<vec4<f32>, " + std::to_string(TK * TM / 4) + ">;\n";
  src += "var<workgroup> tile_b: array<vec4<f32>, " + std::to_string(TK * TN / 4) + ">;\n\n";
  src += "@compute @workgroup_size(" + std::to_string(wx) + ", " + std::to_string(wy) + ")\n";
  src +=
      "fn main(@builtin(workgroup_id) wg: vec3<u32>,\n"
      "        @builtin(local_invocation_id) lid: vec3<u32>,\n"
      "        @builtin(local_invocation_index) tid: u32) {\n";
  out.workgroups = {static_cast<uint32_t>((s.n + TN - 1) / TN),
                    static_cast<uint32_t>((s.m + TM - 1) / TM), static_cast<uint32_t>(s.batches)};
  src += TiledColumnSums(k, s, "tid", invocations, vb == 4, out.workgroups);
  src += BatchOffsets(o, "wg.z");
  src += "  let row0 = wg.y * " + u(TM) + ";\n  let col0 = wg.x * " + u(TN) + ";\n";
  for (int i = 0; i < sch.block_m; ++i)
    for (int j = 0; j < bn4; ++j)
      src += "  var acc_" + std::to_string(i) + "_" + std::to_string(j) + " = vec4<f32>(0.0);\n";
  // A continuing tile's accumulators start from the partial sums stored in its output window.
  for (int i = 0; o.continues && i < sch.block_m; ++i)
    for (int j = 0; j < bn4; ++j) {
      src += "  {\n    let r = row0 + (lid.y + " + u(int64_t{i / 4} * wy) + ") * 4u + " + u(i % 4) +
             ";\n    let c = col0 + (lid.x + " + u(int64_t{j} * wx) + ") * 4u;\n";
      std::string parts;
      for (int c = 0; c < 4; ++c)
        parts += (c ? ", " : "") + AccStart(o, OutIndex(o, "r", "c + " + u(c)),
                                            "r < " + M + " && c + " + u(c) + " < " + N);
      src += "    acc_" + std::to_string(i) + "_" + std::to_string(j) + " = vec4<f32>(" + parts +
             ");\n  }\n";
    }
  const bool whole_k = s.k % TK == 0;
  auto a_index = [&](const std::string& q, const std::string& kq) { return AIndex(o, q, kq); };
  auto b_index = [&](const std::string& q, const std::string& kq) { return BIndex(o, kq, q); };
  const bool whole_m = s.m % TM == 0, whole_n = s.n % TN == 0;
  const bool whole_a = whole_k && whole_m, whole_b = whole_k && whole_n;
  TileOperand tile_a{"tile_a", "in0", TM, TK, va, s.trans_a, "row0", M, whole_a, a_index};
  TileOperand tile_b{"tile_b", "in1", TN, TK, vb, !s.trans_b, "col0", N, whole_b, b_index};
  // A's element (q, k) lies q * lda + k past off_a (A^T's: k * lda + q); B's k * ldb + q (B^T's:
  // q * ldb + k).
  tile_a.q_stride = s.trans_a ? 1 : o.lda;
  tile_a.k_stride = s.trans_a ? o.lda : 1;
  tile_b.q_stride = s.trans_b ? o.ldb : 1;
  tile_b.k_stride = s.trans_b ? 1 : o.ldb;
  // With prefetch each operand is loaded by half of the invocations (TileLoaders), and the next
  // step's loads are issued before the multiply-adds of the current one. Where no load of either
  // operand needs a bound, both operands' addresses are hoisted, the first step's tiles are loaded
  // and stored before the loop, and each step stores the registers as the next step's tiles after
  // the barrier that ends its multiply-adds ("loads first"). Otherwise the first step's loads go
  // before the loop, and each step stores the registers, waits at the barrier, then issues the
  // next loads. The order and the hoisting gain together: the 4096^3 product 43.7-44.0 ->
  // 44.6-44.7 TFLOP/s on an H100, where either alone loses (42.9-43.1, 2026-12-06).
  const int half = invocations / 2;
  TileLoaders a_loaders = sch.prefetch ? TileLoaders{0, half} : TileLoaders{0, invocations};
  TileLoaders b_loaders =
      sch.prefetch ? TileLoaders{half, invocations - half} : TileLoaders{0, invocations};
  a_loaders.hoisted = b_loaders.hoisted =
      sch.prefetch && CanHoist(tile_a, a_loaders) && CanHoist(tile_b, b_loaders);
  // One branch for the two halves, not two: the 4096^3 product 42.3-42.7 -> 43.5-43.7 TFLOP/s on
  // an H100 (2026-12-06).
  auto loads = [&](TileStage stage, const std::string& k0) {
    const std::string a = TileLoads(tile_a, a_loaders, K, stage, k0);
    const std::string b = TileLoads(tile_b, b_loaders, K, stage, k0);
    if (!sch.prefetch) return a + b;
    return "    if (tid < " + u(half) + ") {\n" + a + "    } else {\n" + b + "    }\n";
  };
  const bool loads_first = a_loaders.hoisted;
  if (sch.prefetch)
    src +=
        TilePrefetchRegisters(tile_a, a_loaders, tile_b, b_loaders) +
        HoistedLoaderCoordinates(tile_a, a_loaders) + HoistedLoaderCoordinates(tile_b, b_loaders) +
        "  {\n" + loads(TileStage::kFetch, "0u") +
        (loads_first ? loads(TileStage::kStore, "0u") + "  }\n  workgroupBarrier();\n" : "  }\n");
  src += "  for (var t = 0u; t < " + K + "; t = t + " + u(TK) + ") {\n";
  const std::string more = "    if (t + " + u(TK) + " < " + K + ") {\n";
  if (!sch.prefetch)
    src += loads(TileStage::kAtOnce, "t") + "    workgroupBarrier();\n";
  else if (loads_first)
    src += more + loads(TileStage::kFetch, "(t + " + u(TK) + ")") + "    }\n";
  else
    src += loads(TileStage::kStore, "t") + "    workgroupBarrier();\n" + more +
           loads(TileStage::kFetch, "(t + " + u(TK) + ")") + "    }\n";
  // The K steps of a tile written out one after the other, not as a loop: the driver's compiler
  // does not unroll it, and unrolled the 4096^3 product ran 9 % faster on the H200 (written out
  // 8, 4, 2 or 1 at a time inside a loop, 8 to 15 % slower on an H100, 2026-12-06).
  for (int kk = 0; kk < TK; ++kk) {
    src += "    {\n";
    for (int i = 0; i < bm4; ++i)
      src += "      let a" + std::to_string(i) + " = tile_a[" + u(int64_t{kk} * (TM / 4) + i * wy) +
             " + lid.y];\n";
    for (int j = 0; j < bn4; ++j)
      src += "      let b" + std::to_string(j) + " = tile_b[" + u(int64_t{kk} * (TN / 4) + j * wx) +
             " + lid.x];\n";
    for (int i = 0; i < sch.block_m; ++i)
      for (int j = 0; j < bn4; ++j) {
        const std::string acc = "acc_" + std::to_string(i) + "_" + std::to_string(j);
        src += "      " + acc + " = " + acc + " + a" + std::to_string(i / 4) + "." + lane[i % 4] +
               " * b" + std::to_string(j) + ";\n";
      }
    src += "    }\n";
  }
  src += "    workgroupBarrier();\n";
  if (loads_first) src += more + loads(TileStage::kStore, "t") + "    }\n    workgroupBarrier();\n";
  src += "  }\n";

  for (int i = 0; i < sch.block_m; ++i) {
    src += "  {\n    let r = row0 + (lid.y + " + u(int64_t{i / 4} * wy) + ") * 4u + " + u(i % 4) +
           ";\n";
    for (int j = 0; j < bn4; ++j) {
      const std::string acc = "acc_" + std::to_string(i) + "_" + std::to_string(j);
      src += "    {\n      let c = col0 + (lid.x + " + u(int64_t{j} * wx) + ") * 4u;\n";
      for (int c = 0; c < 4; ++c) {
        const std::string store =
            StoreSum(m, k, acc + "." + lane[c], OutIndex(o, "r", "c + " + u(c)));
        src += whole_m && whole_n
                   ? "      " + store + "\n"
                   : "      if (r < " + M + " && c + " + u(c) + " < " + N + ") { " + store + " }\n";
      }
      src += "    }\n";
    }
    src += "  }\n";
  }
  src += "}\n";
  out.source = std::move(src);
}

}  // namespace

StageSource MatmulRowsStage(const Module& m, const Kernel& k) {
  const Operands o = OperandsOf(m, k);
  const MatmulShape& s = o.shape;
  const std::string N = U32(std::max<int64_t>(s.n, 1));  // an empty row: no element, no division
  return {EpilogueFn(m, k, false),
          "  let off_a = 0u;\n  let off_b = 0u;\n"
          "  for (var e = r0 * " +
              N + " + t; e < r1 * " + N + "; e = e + " + U32(kWorkgroupLanes) +
              ") {\n"
              "    let r = e / " +
              N + ";\n    let c = e % " + N +
              ";\n"
              "    var acc = 0.0;\n"
              "    for (var kk = 0u; kk < " +
              U32(s.k) +
              "; kk = kk + 1u) {\n"
              "      acc = acc + " +
              Loaded(m, k, "in0[" + AIndex(o, "r", "kk") + "]") + " * " +
              Loaded(m, k, "in1[" + BIndex(o, "kk", "c") + "]") +
              ";\n"
              "    }\n"
              "    " +
              StoreSum(m, k, "acc", "e") +
              "\n"
              "  }\n"
              "}\n"};
}

Status CheckMatmulSchedule(const MatmulSchedule& sch, const MatmulShape& s,
                           int64_t workgroup_storage_bytes) {
  auto bad = [&](const std::string& why) {
    return InternalError("wgsl.GenerateLinalg", "matmul schedule " + sch.Name() + " " + why);
  };
  if (sch.kind == MatmulSchedule::Kind::kPerElement) return Status::Ok();
  if (s.m * s.n * s.batches <= 0) return bad("tiles an empty output");
  if ((s.n + sch.tile_n - 1) / sch.tile_n > kMaxWorkgroupsPerDim ||
      (s.m + sch.tile_m - 1) / sch.tile_m > kMaxWorkgroupsPerDim ||
      s.batches > kMaxWorkgroupsPerDim)
    return bad("needs more than 65535 workgroups in a dimension");
  if (sch.block_m <= 0 || sch.block_n <= 0 || sch.tile_m % sch.block_m || sch.tile_n % sch.block_n)
    return bad("does not divide its tile into blocks");
  if (sch.Invocations() > 256) return bad("has more than WebGPU's 256 invocations per workgroup");
  if (sch.WorkgroupBytes() > workgroup_storage_bytes)
    return bad("takes more workgroup memory than the device's " +
               std::to_string(workgroup_storage_bytes) + " bytes");
  if (sch.block_m == 1 && sch.block_n == 1) {
    if (sch.tile_m != sch.tile_n || sch.tile_k < sch.tile_m || sch.tile_k % sch.tile_m ||
        sch.vec4_a || sch.vec4_b || sch.prefetch)
      return bad(
          "has one output per invocation but not square tiles of scalar loads, K staged "
          "in multiples of the tile, no prefetch");
    return Status::Ok();
  }
  if (sch.block_m % 4 || sch.block_n % 4 || sch.tile_k % 4)
    return bad("blocks by other than multiples of 4");
  if (sch.prefetch && sch.Invocations() < 2)
    return bad("prefetches with one invocation: each operand is loaded by half of them");
  const int va = sch.vec4_a ? 4 : 1, vb = sch.vec4_b ? 4 : 1;
  if ((sch.tile_m * sch.tile_k) % (sch.Invocations() * va) ||
      (sch.tile_k * sch.tile_n) % (sch.Invocations() * vb))
    return bad("does not share its tile loads evenly among its invocations");
  if (sch.vec4_a && (s.trans_a ? s.m : s.k) % 4)
    return bad("loads A as vec4 but its rows are not a multiple of 4 long");
  if (sch.vec4_b && (s.trans_b ? s.k : s.n) % 4)
    return bad("loads B as vec4 but its rows are not a multiple of 4 long");
  return Status::Ok();
}

namespace {

// matmul_q: one invocation per output element (row m of a, row n of b's blocks), over a linear
// grid. It decodes each block of row n from the packed words as it goes — header, then each
// scale group's weights — exactly as the reference (kernel/ref/linalg.cpp), and adds
// a[m, k] * w[n, k] to its accumulator in increasing k from zero: the reference's order.
const char* kBlockReaders =
    "fn byte_at(o: u32) -> u32 { return (in1[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu; }\n"
    // IEEE binary16 to f32 from the bits, exact (a subnormal is mant * 2^-24, a normal f32).
    "fn half_at(o: u32) -> f32 {\n"
    "  let h = byte_at(o) | (byte_at(o + 1u) << 8u);\n"
    "  let sign = (h & 0x8000u) << 16u;\n"
    "  let e = (h >> 10u) & 0x1fu;\n"
    "  let mant = h & 0x3ffu;\n"
    "  if (e == 0u) {\n"
    "    let v = f32(mant) * 5.9604644775390625e-8;\n"
    "    return select(v, -v, sign != 0u);\n"
    "  }\n"
    "  if (e == 31u) { return bitcast<f32>(sign | 0x7f800000u | (mant << 13u)); }\n"
    "  return bitcast<f32>(sign | ((e + 112u) << 23u) | (mant << 13u));\n"
    "}\n";

void MatmulQ(const Module& m, const Kernel& k, Generated& out) {
  const webir::Node& node = m.graph().at(k.output);
  const TensorType& tb = m.graph().at(k.inputs[1]).type;
  const int64_t K = tb.dims[1].size, N = tb.dims[0].size;
  const int64_t total = node.type.elements();
  const std::string blocks = U32(K / kBlockValues);
  std::string body =
      "  let m = i / " + U32(std::max<int64_t>(N, 1)) + ";\n  let n = i % " +
      U32(std::max<int64_t>(N, 1)) + ";\n  var acc = 0.0;\n  for (var blk = 0u; blk < " + blocks +
      "; blk = blk + 1u) {\n    let base = (n * " + blocks + " + blk) * " +
      U32(BlockBytes(tb.dtype)) + ";\n    let row = m * " + U32(K) + " + blk * 256u;\n";
  if (tb.dtype == DType::kQ4K) {
    body +=
        "    let d = half_at(base);\n"
        "    let dmin = half_at(base + 2u);\n"
        "    for (var j = 0u; j < 8u; j = j + 1u) {\n"
        "      var sc = byte_at(base + 4u + j) & 63u;\n"
        "      var mn = byte_at(base + 8u + j) & 63u;\n"
        "      if (j >= 4u) {\n"
        "        sc = (byte_at(base + 8u + j) & 15u) | ((byte_at(base + j) >> 6u) << 4u);\n"
        "        mn = (byte_at(base + 8u + j) >> 4u) | ((byte_at(base + 4u + j) >> 6u) << 4u);\n"
        "      }\n"
        "      let dsc = d * f32(sc);\n"
        "      let dm = dmin * f32(mn);\n"
        "      let shift = (j & 1u) * 4u;\n"
        "      let qs = base + 16u + (j >> 1u) * 32u;\n"
        "      for (var l = 0u; l < 32u; l = l + 1u) {\n"
        "        let w = dsc * f32((byte_at(qs + l) >> shift) & 15u) - dm;\n"
        "        acc = acc + in0[row + j * 32u + l] * w;\n"
        "      }\n"
        "    }\n";
  } else {
    body +=
        "    let d = half_at(base + 208u);\n"
        "    for (var g = 0u; g < 16u; g = g + 1u) {\n"
        "      let dsc = d * f32(bitcast<i32>(byte_at(base + 192u + g) << 24u) >> 24u);\n"
        "      for (var l = 0u; l < 16u; l = l + 1u) {\n"
        "        let v = g * 16u + l;\n"
        "        let h = v >> 7u;\n"
        "        let r = v & 127u;\n"
        "        let low = (byte_at(base + 64u * h + (r & 63u)) >> (4u * (r >> 6u))) & 15u;\n"
        "        let high = (byte_at(base + 128u + 32u * h + (r & 31u)) >> (2u * (r >> 5u))) & "
        "3u;\n"
        "        let w = dsc * f32(i32(low | (high << 4u)) - 32);\n"
        "        acc = acc + in0[row + v] * w;\n"
        "      }\n"
        "    }\n";
  }
  body += "  }\n  out[i] = acc;\n}\n";
  out.source = Bindings(m, k) + kBlockReaders + "\n" + LinearEntry(total) + body;
  out.workgroups = LinearGrid(total);
}

// matmul_fixed: one invocation per output element. Each product of two i32 is formed modulo 2^64
// from 16-bit pieces (WGSL has no 64-bit integers) and added to a 64-bit accumulator (two u32
// words, k rising); the sum shifted right by frac_bits is rounded half to even. Only the low 64
// bits of the sum are kept: they hold the result exactly, since the run proved it fits i32
// (base/fixed_point.h computes the same in 128 bits).
void MatmulFixed(const Module& m, const Kernel& k, Generated& out) {
  const webir::Node& node = m.graph().at(k.output);
  const TensorType& ta = m.graph().at(k.inputs[0]).type;
  const TensorType& tb = m.graph().at(k.inputs[1]).type;
  const int64_t K = ta.dims[1].size, N = tb.dims[1].size;
  const int frac_bits = node.attrs["frac_bits"].get<int>();
  const std::string f = U32(frac_bits);
  const std::string helpers =
      "fn mul_wide(x: u32, y: u32) -> vec2<u32> {\n"
      "  let xl = x & 0xffffu;\n"
      "  let xh = x >> 16u;\n"
      "  let yl = y & 0xffffu;\n"
      "  let yh = y >> 16u;\n"
      "  let ll = xl * yl;\n"
      "  let lh = xl * yh;\n"
      "  let hl = xh * yl;\n"
      "  let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);\n"
      "  return vec2<u32>((ll & 0xffffu) | (mid << 16u),\n"
      "                   xh * yh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u));\n"
      "}\n"
      // The signed product modulo 2^64: the unsigned one less 2^32 times each operand whose
      // partner is negative.
      "fn mul_i32_wide(a: i32, b: i32) -> vec2<u32> {\n"
      "  let ua = bitcast<u32>(a);\n"
      "  let ub = bitcast<u32>(b);\n"
      "  let p = mul_wide(ua, ub);\n"
      "  return vec2<u32>(p.x, p.y - select(0u, ub, a < 0) - select(0u, ua, b < 0));\n"
      "}\n";
  std::string body = "  let m = i / " + U32(std::max<int64_t>(N, 1)) + ";\n  let n = i % " +
                     U32(std::max<int64_t>(N, 1)) +
                     ";\n  var lo = 0u;\n  var hi = 0u;\n  for (var k = 0u; k < " + U32(K) +
                     "; k = k + 1u) {\n    let p = mul_i32_wide(in0[m * " + U32(K) +
                     " + k], in1[k * " + U32(std::max<int64_t>(N, 1)) +
                     " + n]);\n    let s = lo + p.x;\n    hi = hi + p.y + select(0u, 1u, s < lo);\n"
                     "    lo = s;\n  }\n";
  if (frac_bits == 0) {
    body += "  out[i] = bitcast<i32>(lo);\n}\n";
  } else {
    body += "  var q = (lo >> " + f + ") | (hi << " + U32(32 - frac_bits) + ");\n  let r = lo & " +
            U32((int64_t{1} << frac_bits) - 1) +
            ";\n  let half = " + U32(int64_t{1} << (frac_bits - 1)) +
            ";\n  if (r > half || (r == half && (q & 1u) == 1u)) { q = q + 1u; }\n"
            "  out[i] = bitcast<i32>(q);\n}\n";
  }
  out.source = Bindings(m, k) + helpers + "\n" + LinearEntry(node.type.elements()) + body;
  out.workgroups = LinearGrid(node.type.elements());
}

void Generate(const Module& m, const Kernel& k, const Operands& o, Generated& out) {
  const MatmulSchedule& sch = *k.matmul_schedule;
  if (sch.kind == MatmulSchedule::Kind::kPerElement)
    PerElement(m, k, o, out);
  else if (sch.block_m == 1 && sch.block_n == 1)
    TiledOneOutput(m, k, o, sch, out);
  else
    TiledBlocked(m, k, o, sch, out);
}

}  // namespace

bool GenerateLinalg(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind == KernelKind::kOp && k.op == "matmul_q") {
    MatmulQ(m, k, out);
    return true;
  }
  if (k.kind == KernelKind::kOp && k.op == "matmul_fixed") {
    MatmulFixed(m, k, out);
    return true;
  }
  if (k.kind != KernelKind::kOp || k.op != "matmul" || !k.matmul_schedule) return false;
  Generate(m, k, OperandsOf(m, k), out);
  return true;
}

Generated MatmulTile(const Module& m, const Kernel& k, const Tile& t,
                     const std::array<int64_t, 3>& offsets) {
  // The kernel's own schedule over the tile's rows, columns and stretch of K, each operand read
  // with its own row length from its window. Every output element adds the tile's K products in
  // increasing order after the partial sum of the tiles before it, so the tiles give the untiled
  // kernel's bits.
  Operands o = OperandsOf(m, k);
  o.tiled = true;
  o.continues = t.Continues();
  o.shape.m = t.rows;
  o.shape.n = t.cols;
  o.shape.k = t.depth;
  o.shape.batches = t.batch_count;
  o.batch0 = t.batch0;
  o.off_a = offsets[0];
  o.off_b = offsets[1];
  o.off_o = offsets[2];
  MatmulSchedule sch = *k.matmul_schedule;
  // A vec4 load needs the vector inside the tile and aligned in its window: the operand's row
  // length, the tile's offset and its extent along the contiguous dimension multiples of 4.
  auto vec4_ok = [](int64_t ld, int64_t off, int64_t extent) {
    return ld % 4 == 0 && off % 4 == 0 && extent % 4 == 0;
  };
  sch.vec4_a = sch.vec4_a && vec4_ok(o.lda, o.off_a, o.shape.trans_a ? t.rows : t.depth);
  sch.vec4_b = sch.vec4_b && vec4_ok(o.ldb, o.off_b, o.shape.trans_b ? t.depth : t.cols);
  Kernel tiled = k;
  tiled.matmul_schedule = sch;
  Generated out;
  Generate(m, tiled, o, out);
  return out;
}

}  // namespace scellis::kernel::wgsl
