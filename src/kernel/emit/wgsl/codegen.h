// WGSL generation for KernelIR. Every kernel gets a compute shader specialized to its shapes
// (sizes are constants in the source; pipelines are cached by source hash, so a shape seen again
// compiles nothing).
//
// Binding convention, shared with the WebGPU executor: @group(0) @binding(i) for i < inputs is
// `var<storage, read> in<i>: array<T>` in Kernel::inputs order; the next binding is the output
// `var<storage, read_write> out: array<T>`. T is the storage type of the node's dtype (f32, f16,
// i32, u32 for u32 and bool). Elementwise kernels compute f32, f16 (in f32, rounded once per
// step), bool (0.0 or 1.0 in f32) and i32/u32 (in their own integer types, wrapping); layout and
// index kernels move elements as they are; sum also takes i32 and f16; every other kernel takes
// f32 alone.
// Kernels over more than 65535 workgroups fold their grid into two dimensions and recover the
// linear index from num_workgroups.
//
// The source never names its kernel: identical kernels have identical WGSL, so they share one
// pipeline and one hash. Printers put names beside the source (kernel::PrintWgsl).
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "kernel/module.h"
#include "kernel/tiling.h"

namespace scellis::kernel::wgsl {

inline constexpr uint32_t kWorkgroupSize = 64;
inline constexpr uint32_t kMaxWorkgroupsPerDim = 65535;

struct Generated {
  std::string source;
  std::array<uint32_t, 3> workgroups = {1, 1, 1};
  // A user op's kernel: the line of `source` where the user's WGSL begins (1-based) and how many
  // lines it has; 0 for the engine's own kernels.
  int user_first_line = 0;
  int user_lines = 0;
};

// WGSL for one kernel of `m`.
Result<Generated> Generate(const Module& m, const Kernel& k);
// The WGSL of kernel `k` emitted as it reads (UnfoldRowGathers) with its folded row gathers read
// from their tables (Kernel::row_gathers): index bindings after the inputs, outputs after them.
Result<std::string> ReadRowGathers(const Module& m, const Kernel& k, const std::string& source);

// Grid for `invocations` threads at kWorkgroupSize per group, folded into (x, y) when needed.
std::array<uint32_t, 3> LinearGrid(int64_t invocations);
// The WGSL element type a buffer of `t` is bound as.
const char* StorageType(DType t);
// Prelude declaring in0..in<n-1>, out and, for a kernel of several outputs, out1..out<m> after it,
// with the element types of k's nodes (and `enable f16;`
// when one is f16); inputs flagged in `vec4_inputs`, and the output when `vec4_output`, as arrays
// of vec4 of that type. A uniform input (Kernel::uniform_inputs) is declared as its one element;
// an input an output is written over (Kernel::in_place) is read_write and that output gets no
// binding (the outputs that have one are numbered after the inputs, in order). LinearEntry declares
// the linear index `let i` with its bound check.
std::string Bindings(const Module& m, const Kernel& k, const std::vector<bool>& vec4_inputs = {},
                     bool vec4_output = false);
std::string LinearEntry(int64_t total);
// WGSL literal for a float/uint.
std::string F32(double v);
std::string U32(int64_t v);

// Families: each returns false when `k` is not one of its ops.
using FamilyGen = bool (*)(const Module& m, const Kernel& k, Generated& out);
bool GenerateElementwise(const Module& m, const Kernel& k, Generated& out);
bool GenerateReduce(const Module& m, const Kernel& k, Generated& out);
bool GenerateLinalg(const Module& m, const Kernel& k, Generated& out);
// Whether the linalg emitter can run `sch` on `shape` with `workgroup_storage_bytes` of workgroup
// memory (Generate checks it before emitting, against the module's device).
Status CheckMatmulSchedule(const MatmulSchedule& sch, const MatmulShape& shape,
                           int64_t workgroup_storage_bytes = 16384);
bool GenerateLayout(const Module& m, const Kernel& k, Generated& out);
// Whether `op` is a layout op (moves elements as they are, in any storage type).
bool IsLayoutOp(const std::string& op);
bool GenerateStencil(const Module& m, const Kernel& k, Generated& out);
bool GenerateNn(const Module& m, const Kernel& k, Generated& out);
bool GenerateOptim(const Module& m, const Kernel& k, Generated& out);
// A matmul that updates parameters (Kernel::update_product): per parameter, a function
// `fn <GradientUpdateFn>(i: u32, grad: f32)` updating its element i from its gradient's, `grad`,
// by the operations of the optimizer kernel it was (optim.cpp), stored over its inputs; "" for any
// other kernel. The matmul calls it on each finished element of its product or column sums.
std::string GradientUpdateFns(const Module& m, const Kernel& k);
std::string GradientUpdateFn(const Kernel& k, int gradient);
bool GenerateRandom(const Module& m, const Kernel& k, Generated& out);
bool GenerateIndex(const Module& m, const Kernel& k, Generated& out);
// A user op's kernel (kernel/emit/wgsl/user.cpp): the document's WGSL wrapped in bindings,
// accessors, shape constants and the entry point.
bool GenerateUser(const Module& m, const Kernel& k, Generated& out);
// index_select, gather, index_add, scatter_add: their port dtypes (the op table) are their rule.
bool IsIndexOp(const std::string& op);

// A fused elementwise kernel over output elements [base, base + count) only, for tensors larger
// than one storage binding: inputs of the output's shape and the output are bound from `base`
// (indexed by the tile-local `i`), broadcast inputs are bound whole. Generate() is the tile that
// covers everything. A kernel scheduled wide (Kernel::elementwise_schedule) gets VectorTile when
// the tile starts and ends on a vector boundary, else the one-element-per-invocation kernel.
Generated ElementwiseTile(const Module& m, const Kernel& k, int64_t base, int64_t count);
// uniform or dropout over output elements [base, base + count): operands of the output's shape
// bound from `base`, the step bound whole, and each element hashed with its index in the whole
// tensor, so the tiles give the untiled kernel's bits.
Generated RandomTile(const Module& m, const Kernel& k, int64_t base, int64_t count);
// A kernel that tiles element for element (kernel::TilesPerElement) over output elements
// [base, base + count): ElementwiseTile or RandomTile.
Generated PerElementTile(const Module& m, const Kernel& k, int64_t base, int64_t count);
// The wide kernel of `s` over output elements [base, base + count), both multiples of s.width:
// each workgroup loads, computes and stores chunks of consecutive vectors, every component
// through the one per-element function of the fused expression, so it computes every element
// exactly as the scalar kernel does.
Generated VectorTile(const Module& m, const Kernel& k, const ElementwiseSchedule& s, int64_t base,
                     int64_t count);
// The register value of a loaded element of `t` (`load` is its storage value): integers and f32
// as they are, bool and f16 as f32. StorageValue is the way back, for the output.
std::string RegisterValue(DType t, const std::string& load);
std::string StorageValue(DType t, const std::string& value);
// One tile of a kernel cut by kernel::PlanTiles, for tensors larger than one storage binding.
// `window` holds, per binding (the kernel's inputs, then its output), the element its bound window
// starts at. A whole-tensor sum's tiles bind one more buffer, between the input and the output:
// the 256 lanes' partial sums (f32) the tiles hand on. A tile that continues along depth reads the
// partial sums earlier tiles stored; the last one along depth finishes.
Generated TileSource(const Module& m, const Kernel& k, const Tiling& tiling, const Tile& t,
                     const std::vector<int64_t>& window);
// The families' tiles; `offsets` are where the tile's first element of each binding lies in its
// window.
Generated MatmulTile(const Module& m, const Kernel& k, const Tile& t,
                     const std::array<int64_t, 3>& offsets);
Generated SumTile(const Module& m, const Kernel& k, const Tiling& tiling, const Tile& t,
                  const std::array<int64_t, 2>& offsets);
Generated SoftmaxTile(const Module& m, const Kernel& k, const Tile& t, int64_t offset);
// A tile of softmax rows cut along themselves (Tiling::passes == 3): the pass t.pass of each row's
// stretch t.depth0.., carrying the rows' maximum, NaN flag and sum in the scratch binding.
Generated SoftmaxRowTile(const Module& m, const Kernel& k, const Tiling& tiling, const Tile& t,
                         int64_t offset);
// cross_entropy's rows (and, merged with its gradient, the gradient's): offsets of the logits,
// the labels and the gradient.
Generated CrossEntropyTile(const Module& m, const Kernel& k, const Tiling& tiling, const Tile& t,
                           const std::array<int64_t, 3>& offsets);
Generated CrossEntropyGradTile(const Module& m, const Kernel& k, const Tile& t,
                               const std::array<int64_t, 3>& offsets);
// A layout copy's box of elements (kernel::CopyTileSpace, JoinTileSpace, PadTileSpace,
// ScatterTileSpace): offsets per binding, the inputs then the output; a tile of a copy in parts
// reads its part's input only (a pad's fill, none).
Generated CopyTile(const Module& m, const Kernel& k, const Tiling& tiling, const Tile& t,
                   const std::vector<int64_t>& offsets);
Generated CumsumTile(const Module& m, const Kernel& k, const Tiling& tiling, const Tile& t,
                     const std::array<int64_t, 2>& offsets);

// The helper functions a fused kernel's steps need, each once.
std::string ExpressionHelpers(const Module& m, const Kernel& k);
// pcg_u32, stream_bits and step_u32: base/random.h's counter hash in u32 arithmetic (WGSL wraps
// it modulo 2^32 as the reference does); step_u32 needs kSpecialValueFns.
extern const char* const kCounterHashFns;
// round_f16(x: f32) -> f32: x rounded to the nearest f16, exactly as the reference rounds.
extern const char* const kRoundToHalf;
// `let s<n> = ...;` for each step of a fused kernel, reading kernel input j as `x<j>` (the caller
// declares those); a shift or butterfly step's load is `shifted_load(step, "s<n>")`, which
// declares s<n>; an arange step reads the output element's index `d0..d<rank-1>`, a uniform step
// its linear index in the whole tensor `gi` (the caller declares those).
using ShiftedLoadFn = std::function<std::string(const ExprStep&, const std::string&)>;
std::string ExpressionSteps(const Module& m, const Kernel& k, const ShiftedLoadFn& shifted_load);
// A shift step's load from its operand's buffer at the output element's index `d0..d<rank-1>`
// moved back by the shifts, the boundary applied per axis as the reference's ShiftedRead.
std::string ShiftedLoad(const Module& m, const Kernel& k, const ExprStep& e, size_t out_rank,
                        const std::string& name);

// A temporally blocked rank-2 loop body (kernel/passes/block_temporally.cpp chooses it): `steps`
// iterations per dispatch over `tile`×`tile` output tiles, each with a halo of `halo` =
// `radius` × `steps` cells. Kernel input `carry` is the loop-carried value the kernel's output
// replaces; `boundary` is its shifts' ("zero", "wrap" or "clamp"; a life kernel is on the torus).
struct BlockShape {
  int64_t steps = 1;
  int64_t tile = 32;
  int64_t halo = 0;
  int64_t radius = 0;
  int carry = 0;
  std::string boundary = "zero";
};
Generated TemporalBlock(const Module& m, const Kernel& k, const BlockShape& b);

// A run of elementwise stages in one dispatch (Kernel::stages, the block-butterfly-stages pass):
// one workgroup per tile of Kernel::stage_tile elements, every stage in turn over the tile, the
// values later stages read in workgroup memory. StageSlots gives each stage's slot of workgroup
// memory (-1: no later stage reads it), reused once its value's last reader has read it.
std::vector<int> StageSlots(const Kernel& k);
Generated TiledStages(const Module& m, const Kernel& k);

// WGSL expression of an elementwise op applied to operand expressions a (and b, c), each an f32
// (a bool is 0.0 or 1.0); "" if unknown.
std::string ElementwiseExpr(const std::string& op, const std::string& a, const std::string& b,
                            const std::string& c = "");
// The fixed 256-wide reduction tree, the one order every whole-tensor reduction uses (the CPU
// reference mirrors it in kernel/ref/tree_sum.h): a body for a kernel of @workgroup_size(256)
// whose lane t sums `term(j)` for j = t, t + 256, ... below `count` in order, then the lanes
// combine pairwise (w = 128, 64, ..., 1: lane t < w adds lane t + w). `term` is a WGSL expression
// of `j`. Declares `partial` and `main(local_invocation_index t)`; after the tree, lane 0 runs
// `finish`, which reads the total as `partial[0]`. `type` is the WGSL type summed: f32, or i32
// for an exact integer sum (wrapping modulo 2^32, so its order changes no bit). `start`, a WGSL
// expression of `t`, is each lane's first value (zero when empty): a tile of a larger sum starts
// from the lane's partial sum of the tiles before.
std::string TreeReduce256(const std::string& term, int64_t count, const std::string& finish,
                          const std::string& type = "f32", const std::string& start = "");
// The statements of TreeReduce256's main after its opening line, through its closing brace: the
// tree as the body of a function of the lane `t` (the loss's stage of a kernel of row stages).
std::string TreeReduce256Body(const std::string& term, int64_t count, const std::string& finish,
                              const std::string& type = "f32", const std::string& start = "");

// A kernel of row stages (KernelKind::kRowStages; row_stages.cpp).
Generated RowStages(const Module& m, const Kernel& k);
// A stage's WGSL, written with the names the stage's kernel would bind alone (in0.., out, out1..):
// module-scope functions, and the statements of the stage's function through its closing brace.
// The caller renames the bindings (RenameIdentifiers) and writes the function's opening line:
// fn(t: u32) for the loss, fn(t: u32, r0: u32, r1: u32) for a stage over rows [r0, r1).
struct StageSource {
  std::string functions;
  std::string body;
};
// The loss (cross_entropy) as its own kernel computes it: the 256-lane tree over every row. Its
// functions need kSpecialValueFns.
StageSource LossStage(const Module& m, const Kernel& k);
// The loss's gradient (cross_entropy_grad) over rows [r0, r1), lane t taking rows r0 + t,
// r0 + t + 256, ..., each as the gradient's own kernel computes it. Needs kSpecialValueFns.
StageSource GradientRowsStage(const Module& m, const Kernel& k);
// A rank-2 f32 product, optionally with an epilogue (whose function is `epilogue`; its helpers
// are the caller's: ExpressionHelpers of the epilogue), over output rows [r0, r1): lane t computes
// the rows' elements t, t + 256, ..., each adding its K products in increasing order from zero,
// as every matmul does.
StageSource MatmulRowsStage(const Module& m, const Kernel& k);
// `source` with every identifier that is a key of `names` replaced by its value, all at once.
std::string RenameIdentifiers(const std::string& source,
                              const std::map<std::string, std::string>& names);
// The entry of one tile of such a tree whose lanes hand their partial sums on from tile to tile
// in the `lanes` binding (the tile's `count` terms start at a multiple of 256 of the whole sum,
// so lane t's are its own): each lane starts from its stored partial sum when the tile
// `continues`; a tile that does not finish stores the lanes, the last one combines them as the
// untiled tree does and runs `finish`. Also names `out`, so every binding stays in the layout.
std::string LaneTileEntry(const std::string& term, int64_t count, bool continues, bool finishes,
                          const std::string& finish);
// The same tree over an f32 buffer `in0` bound as vec4 (count a multiple of 4), summed by 64
// invocations that each hold four lanes: invocation t's vector in0[t + 64 r] is the r-th term of
// lanes 4t..4t+3, so each component adds its lane's terms in the tree's order, while the loads,
// 16 bytes wide and many in flight, keep the memory system busier than one float per lane could.
std::string TreeReduce256Vec4(int64_t count, const std::string& finish);
// The pairwise half of the 256-wide tree, once every lane's sum is in `partial` (a workgroup array
// of 256) and `t` is the lane: w = 128, 64, ..., 1, lane t < w adds lane t + w; then lane 0 runs
// `finish`. Closes the entry point.
std::string TreeCombine(const std::string& finish);
// A wide sum's second dispatch (Kernel::sum_schedule with two stages): binding 0 the chunks'
// partial sums (f32), binding 1 the output; the partials summed in the 256-lane tree, the mean
// divided once by the element count.
Generated WideSumFinish(const Module& m, const Kernel& k);

// Helper functions an op's expression needs (e.g. erf for gelu), one complete WGSL function
// (or group) per entry, in dependency order; ops that share a helper list the same entry.
std::vector<std::string> ElementwiseHelpers(const std::string& op);

// WGSL functions for special values, tested on the bits: is_nan_f32(x), is_below_zero_f32(x) (x < 0
// and not NaN, -0 excluded), nan_f32() and inf_f32(). A NaN or infinite constant expression is a
// shader-creation error in WGSL, so the constants are made at run time from their bits.
inline constexpr const char* kSpecialValueFns =
    "fn is_nan_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n"
    "fn is_below_zero_f32(x: f32) -> bool {\n"
    "  let b = bitcast<u32>(x);\n"
    "  return b > 0x80000000u && b <= 0xff800000u;\n"
    "}\n"
    "fn nan_f32() -> f32 {\n"
    "  var bits = 0x7fc00000u;\n"
    "  return bitcast<f32>(bits);\n"
    "}\n"
    "fn inf_f32() -> f32 {\n"
    "  var bits = 0x7f800000u;\n"
    "  return bitcast<f32>(bits);\n"
    "}\n";

}  // namespace scellis::kernel::wgsl
