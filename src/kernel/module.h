// Rung 3: KernelIR. The WebIR graph partitioned into kernels: chains of elementwise ops fused into
// one kernel (a chain of N elementwise ops is one kernel, not N), every other op its own kernel.
// A kernel is target-neutral (its ops, expression, inputs, output and dispatch grid); the sources
// emitters produce for it are data beside it, keyed by target, so another emitter adds a target
// without changing the rung. Every kernel is executable by the CPU reference, the oracle it is
// checked against. FromWebir only wraps the graph; the passes in kernel/passes/ make the kernels.
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"
#include "webir/graph.h"

namespace scellis::kernel {

enum class KernelKind {
  kElementwise,  // a fused expression over broadcast inputs
  kOp,           // one non-elementwise op
  kTiledStages,  // a run of elementwise kernels in one dispatch over tiles (Kernel::stages)
  kRowStages,    // a loss's tree beside row-local stages over blocks of rows, one dispatch (stages)
};

// One step of a fused expression. Operands refer to kernel inputs (>= 0: index into
// Kernel::inputs) or to earlier steps (< 0: step -(k+1)).
struct ExprStep {
  std::string op;  // an elementwise op, or "full" (a literal `value`)
  std::vector<int> operands;
  double value = 0;  // for "full"
  int node = -1;     // the WebIR node this step computes
};

inline int StepRef(int step) {
  return -(step + 1);
}
inline bool IsStepRef(int operand) {
  return operand < 0;
}
inline int StepOf(int operand) {
  return -operand - 1;
}

inline constexpr const char* kWgslTarget = "wgsl";
// The temporally blocked variant of a loop body's kernel (kernel/passes/block_temporally.cpp).
inline constexpr const char* kWgslBlockedTarget = "wgsl-blocked";
// The second dispatch of a wide sum (SumSchedule): the chunks' partial sums into the result (one
// workgroup per row).
inline constexpr const char* kWgslSumFinishTarget = "wgsl-sum-finish";

// How a matmul kernel is cut into workgroups and invocations; chosen per shape by the
// schedule-matmul pass, read by the emitter. Every schedule keeps each output's sum in increasing K
// order (no split-K): a schedule changes which invocation computes an element and what it stages in
// workgroup memory, never the order of its additions.
struct MatmulSchedule {
  enum class Kind {
    kTiled,       // workgroup tiles of tile_m x tile_n outputs, K staged tile_k at a time
    kPerElement,  // one invocation per output over a linear grid, nothing staged (any size)
  };
  Kind kind = Kind::kTiled;
  int tile_m = 16, tile_n = 16, tile_k = 16;
  // Outputs per invocation: block_m x block_n (1 x 1, or multiples of 4 held in vec4 registers).
  int block_m = 1, block_n = 1;
  // Global loads of an operand as vec4: along its contiguous dimension, which must be a multiple
  // of 4 (K for A and B^T, M for A^T, N for B).
  bool vec4_a = false, vec4_b = false;
  // Register-blocked: each invocation loads its share of the next K step's tiles from global
  // memory into registers before the current step's multiply-adds, and stores them to workgroup
  // memory after, so that the loads' latency passes under the multiply-adds (A's tile by the
  // first half of the invocations, B's by the second).
  bool prefetch = false;

  int Invocations() const { return (tile_m / block_m) * (tile_n / block_n); }
  // Bytes of workgroup memory the tiles of both operands take.
  int64_t WorkgroupBytes() const;
  // "128x128x16/8x8/vec4/pf", "16x16x16/1x1", "per-element"; "/vec4a" or "/vec4b" when one
  // operand; "/pf" last with prefetch.
  std::string Name() const;
  bool operator==(const MatmulSchedule&) const = default;
};

// How an f32 sum or mean runs wide in the prod and fast tiers; chosen by the schedule-sum pass from
// the shape alone (never from the device), so the order of the additions, and thus the bits,
// depend only on the shape. The sum is `rows` independent rows of `elements` consecutive elements
// each: the whole tensor as one row, or along an axis with nothing after it (each output's line
// contiguous) one row per output. Each row is cut into `groups` consecutive chunks of `chunk`
// elements (the last one shorter), one workgroup each: lane t of its 256 adds, per component c of
// a vec4, the row's elements chunk start + 4 (t + 256 r) + c for r = 0, 1, ... in order, then
// folds its components as (c0 + c1) + (c2 + c3), and the lanes combine pairwise (w = 128, 64,
// ..., 1). A second dispatch, one workgroup per row, sums the row's chunks' partial sums in the
// 256-lane tree of the debug order (lane t adds partials t, t + 256, ...). One chunk per row
// needs no second dispatch: the first writes the result.
//
// Along an axis with elements after it (`inner` > 1, each output a column: rows x axis x inner),
// a workgroup takes `columns` consecutive columns (a power of two up to 64) and one chunk of
// `chunk` steps along the axis: lane t adds, for column t % columns, the chunk's steps
// t / columns + L r (L = 256 / columns lanes per column) in increasing r; a column's L lanes
// combine pairwise (w = L / 2, ..., 1). A second dispatch sums each output's chunks the same way,
// FinishColumns() columns to a workgroup (64 lanes per column where there are 4), not one
// invocation per output walking its chunks: that walk over a thousand chunks cost a fifth of a
// column sum of 2^26 elements.
struct SumSchedule {
  static constexpr int64_t kStep = 1024;       // elements one pass of 256 lanes loads as vec4
  static constexpr int64_t kMaxGroups = 2048;  // chunks per row at most: the partial sums' scratch
  int64_t chunk = kStep;  // a multiple of kStep (with inner > 1: of the lanes per column)
  int64_t groups = 1;     // ceil(elements / chunk), per row
  int64_t rows = 1;       // rows summed independently: 1 for a whole-tensor sum
  int64_t inner = 1;      // columns per row (elements after the axis)
  int columns = 1;        // with inner > 1: columns per workgroup

  // Elements 0: the one-chunk schedule of an empty sum. `elements` counts one row's. A chunk of
  // the fewest passes that keep a row within kMaxGroups chunks, more (up to 8) where many rows
  // leave the grid full anyway. `chunk` > 0 asks for chunks of that many elements
  // (Module::sum_chunk_override).
  static SumSchedule For(int64_t elements, int64_t rows = 1, int64_t chunk = 0);
  // Rows x `length` (the axis) x `inner` columns, inner > 1: the chunks sized so that the grid
  // has about kFillWorkgroups workgroups, each lane adding at least 16 steps.
  static SumSchedule ForColumns(int64_t length, int64_t rows, int64_t inner);
  // Whether the partial sums take a second dispatch (more than one chunk per row).
  bool TwoStages() const { return groups > 1; }
  // Partial sums the first dispatch writes: rows x groups (x inner).
  int64_t Partials() const { return rows * groups * inner; }
  // With inner > 1: the columns each workgroup of the second dispatch sums (at most 4).
  int FinishColumns() const { return std::min(columns, 4); }
  // The second dispatch's grid: a workgroup per row, or with inner > 1 one per FinishColumns()
  // columns of each row.
  std::array<uint32_t, 3> FinishWorkgroups() const;
  // "wide 977x1024" (chunks x elements per chunk); with several rows "wide 4x977x1024"; along
  // columns "wide 4x8x512 of 300 columns by 64".
  std::string Name() const;
  bool operator==(const SumSchedule&) const = default;
};

// How a fused elementwise kernel covers its output; chosen by the schedule-elementwise pass, read
// by the emitter. An elementwise result is per element, so a schedule changes which invocation
// computes an element and how it is loaded and stored, never its bits.
struct ElementwiseSchedule {
  // Elements per load and store: 1, or 4 where every input is read at the element's own index or
  // broadcast whole-vector-wise (see the pass), every buffer holds 32-bit elements and the element
  // count is a multiple of 4.
  int width = 1;
  int workgroup_size = 64;
  // Vectors each invocation computes: a workgroup covers chunks of workgroup_size x
  // per_invocation consecutive vectors; the grid is one workgroup per chunk, no larger than
  // kMaxWorkgroups (beyond it a workgroup takes every kMaxWorkgroups-th chunk).
  int per_invocation = 1;
  static constexpr int64_t kMaxWorkgroups = 65535;  // one grid dimension, no folding needed

  // "vec4/256x4" (width / workgroup size x per invocation), or "scalar".
  std::string Name() const;
  bool operator==(const ElementwiseSchedule&) const = default;
};

// A kernel's source for one target, generated for the module's determinism tier.
struct EmittedSource {
  std::string target;  // "wgsl"
  std::string source;
  std::string entry_point = "main";
  std::string source_hash;  // sha256 of source
  // A user op's kernel: where the document's WGSL lies in `source` (its first line, 1-based, and
  // its line count), so a compiler's message can be told in the user's own line numbers. 0: none.
  int user_first_line = 0;
  int user_lines = 0;
};

struct Kernel {
  int id = 0;
  std::string name;  // e.g. "k2_fused_mul_relu", "k3_matmul"
  KernelKind kind = KernelKind::kOp;
  std::string op;           // kOp: the op; kElementwise: "fused"
  std::vector<int> nodes;   // WebIR nodes computed here, in order; the last is the output
  std::vector<int> inputs;  // WebIR nodes read from buffers
  int output = -1;          // WebIR node written
  // Nodes written after `output`, in order, by a kernel of several outputs (the merge-optimizer-
  // outputs pass: one optimizer kernel writes the new parameter, then its new moments). Each is
  // an op of its own over the same inputs as `output`'s op (or over another parameter's, in a
  // kernel of merge-optimizer-kernels: OptimizerParts); they are bound after it. The kernel
  // reads every input of an element before writing any output of it, and no output shares a
  // buffer with an input (buffer assignment gives each its own, but to an output written in
  // place, below), so one pass over the elements computes what the separate kernels computed.
  std::vector<int> extra_outputs;
  // Outputs written over an input (the write-state-in-place pass): per output, in Outputs()
  // order, the index in `inputs` of the value it replaces, or -1; empty when none is. Such an
  // output has no buffer and no binding of its own: the input's binding is read and written
  // (WebGPU forbids one buffer in a writable binding and another binding of one dispatch). Only
  // optimizer updates are written in place: each element is read, then written, by its own
  // invocation alone, and the replaced value is read by no later kernel (a carried state: the
  // parameter, a moment).
  std::vector<int> in_place;
  // Inputs bound as uniform buffers rather than storage (per input; empty when none is): the
  // single-element step an optimizer kernel over several parameters reads (merge-optimizer-
  // kernels). Uniform bindings do not count against the storage buffers a stage may bind.
  std::vector<bool> uniform_inputs;
  // kOp: constant arguments folded in (the fold-constant-inputs pass), the op's arguments after
  // `inputs`: single-element f32 `full` values that no kernel computes and no buffer holds. The
  // WGSL declares literal j as the private array in<inputs.size() + j> holding the value, where
  // its binding was, and the CPU reference hands the op a pointer to it: the op reads the same
  // number it read from the constant's buffer.
  struct Literal {
    int node = -1;
    double value = 0;
  };
  std::vector<Literal> literals;
  // kElementwise: the fused expression. A kOp matmul with an epilogue (the fuse-matmul-epilogue
  // pass): expr[0] is the matmul itself (op "matmul", operands {0, 1}: inputs 0 and 1 are its
  // operands), and every later step an elementwise op applied to each finished f32 element before
  // it is stored, reading step 0 (the element's sum), earlier steps, or inputs from index 2 on
  // (the epilogue's own, at the element's broadcast index). `output` is then the last step's node.
  std::vector<ExprStep> expr;
  // kOp matmul whose results are gradients an optimizer update takes (the fuse-optimizer-into-
  // gradient pass): the node of its product and of the column sums of B it adds (-1: none). Neither
  // is stored: `output`, `extra_outputs`, `in_place` and `uniform_inputs` are the optimizer
  // kernel's (UpdateKernel), which runs on each finished element of the product, and on each
  // finished column sum, in registers.
  int update_product = -1;
  int update_column_sums = -1;
  // kOp matmul: per input, whether it is read transposed — a rank-2 `transpose` folded into the
  // matmul, whose input is then the transpose's own operand (no kernel, no buffer for it).
  std::vector<bool> transposed;
  // Values read through a folded row gather (the fold-row-gathers pass): an `index_select` of
  // rows (axis 0 of `table`, by the rank-1 `index`) that no kernel computes; the kernel reads its
  // element e straight from the table, at index[e / row] * row + e % row (row: the table's
  // elements per row). Input `input` is bound to the table (k.inputs[input] == table), and the
  // index is bound as input `index`, after the inputs the kernel read before the fold: as a
  // uniform (UniformInput) where its length allows (kMaxUniformRowIndex), so that it takes none of
  // the storage bindings a kernel may have.
  // UnfoldRowGathers gives the kernel as it reads: the emitters and the CPU reference run that.
  struct RowGather {
    int node = -1;   // the index_select folded in
    int input = -1;  // where the kernel reads it: bound to its table
    int index = -1;  // the input that binds its index
    bool operator==(const RowGather&) const = default;
  };
  std::vector<RowGather> row_gathers;
  // kOp matmul: set by the schedule-matmul pass before emission.
  std::optional<MatmulSchedule> matmul_schedule;
  // kElementwise: set by the schedule-elementwise pass; none means the one-element-per-invocation
  // kernel.
  std::optional<ElementwiseSchedule> elementwise_schedule;
  // kOp f32 sum or mean in the prod and fast tiers, whole-tensor or along a long contiguous axis:
  // set by the schedule-sum pass; none means the 256-lane tree of the debug order (the CPU
  // reference's) in one workgroup, or along an axis one invocation per output.
  std::optional<SumSchedule> sum_schedule;

  // In a repeated graph: no input depends, even through other kernels, on a carried value, so the
  // kernel runs once per step, before the loop's first iteration, and its output stays valid
  // through every iteration (set by the hoist-loop-invariants pass; hoisted kernels come first).
  bool hoisted = false;

  // The dispatch grid, in workgroups; set by the emitter, which chooses the workgroup size.
  std::array<uint32_t, 3> workgroups = {1, 1, 1};
  std::vector<EmittedSource> sources;  // at most one per target

  // Temporal blocking: in a repeated graph whose body is this one kernel, the kWgslBlockedTarget
  // source runs `steps` iterations per dispatch, each workgroup over a `tile`×`tile` block of the
  // output with a halo of `halo` cells it recomputes (no neighbour exchange between workgroups).
  struct Blocking {
    int64_t steps = 1;  // 1: not blocked
    int64_t tile = 0;
    int64_t halo = 0;
    std::array<uint32_t, 3> workgroups = {1, 1, 1};
  } blocking;

  // kTiledStages (the block-butterfly-stages pass): the elementwise kernels this one dispatch
  // runs, in order, each as it was planned alone (its inputs are WebIR nodes: the run's own
  // inputs or earlier stages' outputs). Each workgroup owns `stage_tile` consecutive elements and
  // keeps the stages' values that later stages read in workgroup memory: a stage reads an earlier
  // stage's value at its own element or at a butterfly partner i ^ mask with mask < stage_tile,
  // which lies in the same tile. `inputs` are what the stages read from buffers; `output` and
  // `extra_outputs` the stage outputs read after the run (or named outputs), in stage order.
  // kRowStages (the fuse-gradient-product-into-loss pass): stages[0] is a loss (cross_entropy)
  // whose tree over every row workgroup 0 runs, as the loss's own kernel does; stages[1] its
  // gradient (cross_entropy_grad) and stages[2..] products whose A is that gradient, row-local
  // kernels that every other workgroup runs in turn over its block of `stage_tile` rows, a
  // storage barrier between two stages, reading what the earlier ones wrote for those rows. No
  // workgroup reads what another writes. `inputs` are the values no stage writes, in order of
  // first use; `output` and `extra_outputs` every stage's outputs, in stage order; `literals` the
  // stages' literals, in stage order.
  std::vector<Kernel> stages;
  int64_t stage_tile = 0;  // kRowStages: rows per block
  // Bytes of workgroup memory the stages' carried values take.
  int64_t stage_workgroup_bytes = 0;

  // The node the kernel's op computes: `output`, or a matmul's own node under an epilogue, whose
  // shape and operands the matmul's schedule and code follow.
  int OpNode() const {
    return HasEpilogue() ? expr.front().node : UpdatesParameters() ? update_product : output;
  }
  bool HasEpilogue() const { return kind == KernelKind::kOp && !expr.empty(); }
  bool UpdatesParameters() const { return update_product >= 0; }
  // `output`, then `extra_outputs`: the nodes written, in binding order.
  std::vector<int> Outputs() const;
  // The input output `j` (in Outputs() order) is written over, or -1.
  int InPlaceOf(size_t j) const { return j < in_place.size() ? in_place[j] : -1; }
  bool UniformInput(size_t i) const { return i < uniform_inputs.size() && uniform_inputs[i]; }
  // Storage buffers the kernel binds: its inputs but the uniform ones, and its outputs but those
  // written in place. WebGPU guarantees 8 per shader stage.
  int StorageBindings() const;

  const EmittedSource* Source(std::string_view target) const;
  // The WGSL source; an empty one before the emit-wgsl pass ran.
  const EmittedSource& Wgsl() const;
  EmittedSource& Wgsl();
};

struct Module {
  std::shared_ptr<const webir::Graph> graph_ref;  // shared with the WebIR rung, never copied
  // When set, schedule-matmul gives every matmul this schedule instead of choosing one, with vec4
  // loads kept only for operands whose layout allows them; a matmul it cannot run (an empty
  // output, too many workgroups) keeps the chosen schedule.
  std::optional<MatmulSchedule> matmul_schedule_override;
  // When set, schedule-elementwise gives every kernel it can widen this workgroup size and
  // per-invocation count in place of its own choice (benchmarks sweep them); width stays the
  // pass's.
  std::optional<ElementwiseSchedule> elementwise_schedule_override;
  // When set, schedule-sum cuts every wide sum along a contiguous line (the whole tensor, or each
  // row) into chunks of this many elements in place of its own (benchmarks sweep them): rounded
  // up to SumSchedule::kStep, and up again where a row would take more than kMaxGroups chunks.
  std::optional<int64_t> sum_chunk_override;
  // When set, block-butterfly-stages tiles runs of stages by at most this many elements (a power
  // of two) in place of its 4096: tests cover several workgroups with few elements.
  std::optional<int64_t> stage_tile_override;
  // The storage-binding cap of the device the module is lowered for, in bytes (0: none given).
  // fuse-matmul-epilogue leaves alone a matmul that binds more: tiles take no epilogue.
  uint64_t binding_cap = 0;
  // The workgroup memory a kernel may declare on that device (WebGPU guarantees 16 KiB): a forced
  // matmul schedule may take up to this much.
  int64_t workgroup_storage_bytes = 16384;
  std::vector<Kernel> kernels;
  // Why a repeated graph's body is not temporally blocked; empty when it is or there is no loop.
  std::string not_blocked_because;

  const webir::Graph& graph() const { return *graph_ref; }
  const RungHeader& header() const { return *graph_ref; }
  // Whether any of `nodes` is larger than binding_cap (never when none is given): a kernel
  // binding it runs in tiles, which the passes that merge kernels leave alone.
  bool OverBindingCap(const std::vector<int>& nodes) const;
  // How many kernels run once per step, before the loop (the leading hoisted ones).
  int HoistedKernels() const;
};

// An op whose kernel can be one step of a fused elementwise expression (constants included). A
// `shift` or `butterfly` is one too: its step loads its operand, always a kernel input, at a
// permuted index; an `arange` is its element's index, computed where it is read.
bool IsElementwiseNode(const webir::Graph& g, const webir::Node& n);

// Steps that load their operand, a kernel input, at other elements' indices: shift, butterfly.
bool IsPermutedLoad(std::string_view op);
// Steps computed from the output element's index: an index ramp (arange, its place along an axis)
// and a uniform inlined into its reader (fuse-generators: its linear index in the whole tensor).
bool IsIndexedStep(std::string_view op);
// Steps that need no operand and no buffer, cheap enough to recompute in every kernel that reads
// them: a constant (full) and an index ramp (arange).
bool IsFreeStep(std::string_view op);

// True when kernel input `input` is read by a shift or butterfly step, at indices other than the
// element's own: such an input must be bound whole (it cannot be tiled with the output).
bool ReadsShifted(const Kernel& k, int input);

// Where an elementwise kernel reads input `input` for output element i: at i % period, when the
// input is the output's trailing dimensions (period: their element count; the whole output for an
// input of the output's shape, 1 for a single element broadcast everywhere). nullopt for any other
// broadcast, or when the input is read by a shift step.
std::optional<int64_t> ReadPeriod(const Module& m, const Kernel& k, int input);

// The shape of a matmul kernel as its schedule sees it: A is m x k, B is k x n (after folded
// transposes), over `batches` broadcast batch elements.
struct MatmulShape {
  int64_t m = 0, n = 0, k = 0, batches = 1;
  bool trans_a = false, trans_b = false;
};
MatmulShape MatmulShapeOf(const Module& m, const Kernel& k);
// A matmul kernel's epilogue as the fused elementwise kernel it would be unfused: input 0 is the
// matmul's node (the finished sum), then the matmul kernel's inputs from index 2 on; its steps are
// the epilogue's. The CPU reference and the WGSL emitter evaluate an epilogue through it, so an
// epilogue computes what the elementwise kernel computed, step for step.
Kernel EpilogueKernel(const Kernel& matmul);

// The kernel as it reads its folded row gathers (Kernel::row_gathers): each gathered input is the
// index_select's value again and the indices bound for the gathers are gone, so the emitters and
// the CPU reference see the inputs they saw before the fold. A kernel without any: itself.
Kernel UnfoldRowGathers(const Kernel& k);
// The inputs a kernel binds for its row gathers' indices, after those it reads itself.
size_t RowGatherIndexInputs(const Kernel& k);

// A matmul kernel that updates parameters (Kernel::update_product) as the optimizer kernel it
// took in: its inputs are the matmul kernel's, then the product's node and the column sums' (when
// there are any), which the matmul holds in registers; its outputs and the inputs they are written
// over are the matmul kernel's. The CPU reference and the WGSL emitter evaluate the update through
// it, so each parameter is updated by the operations its own kernel used.
Kernel UpdateKernel(const Module& m, const Kernel& matmul);

// Whether any buffer `k` binds (its inputs and outputs) is over the module's binding cap: a kernel
// that would bind one runs in tiles, which the passes that merge kernels leave alone.
bool BindsOverCap(const Module& m, const Kernel& k);

// Storage buffers every WebGPU device lets one shader stage bind (maxStorageBuffersPerShaderStage's
// guaranteed minimum): the passes that merge kernels keep to it, so a plan suits every device.
inline constexpr int kMaxStorageBindings = 8;

// The longest row gather index bound as a uniform: a multiple of 4 elements (an array of vec4 in
// uniform memory) within WebGPU's guaranteed 64 KiB uniform binding.
inline constexpr int64_t kMaxUniformRowIndex = 16384;
inline bool RowIndexFitsUniform(int64_t elements) {
  return elements > 0 && elements % 4 == 0 && elements <= kMaxUniformRowIndex;
}

// Invocations of each workgroup of a kernel of row stages (a loss's tree takes 256 lanes).
inline constexpr int64_t kWorkgroupLanes = 256;

// Whether `op` is an optimizer update (ops::OpKind::kOptimizer): each element of its output is
// computed from its inputs at that element alone (and the single-element step).
bool IsOptimizerOp(const Module& m, const std::string& op);
// The parameters an optimizer kernel updates, in order: each the indices (in Outputs() order) of
// the consecutive outputs over one argument list (a parameter's new value, then its new moments).
// One part, unless merge-optimizer-kernels put several parameters' updates in the kernel: its
// invocations then cover the parts' elements one after the other.
std::vector<std::vector<size_t>> OptimizerParts(const Module& m, const Kernel& k);

// Numbers the kernels in order and names each after its number and what it computes
// ("k2_fused_mul_relu", "k3_matmul"); passes that add or remove kernels call it.
void NameKernels(Module& m);
// Removes the kernels flagged in `erased` (one flag per kernel, in order; a pass that merged or
// folded them into others), keeps the rest in order and names them again (NameKernels).
void EraseKernels(Module& m, const std::vector<bool>& erased);

// The module of `g` with no kernels yet (the partition pass makes them).
Result<Module> FromWebir(std::shared_ptr<const webir::Graph> g);
std::string Print(const Module& m);
// All kernels' WGSL, each under a comment naming the kernel.
std::string PrintWgsl(const Module& m);
Json ToJson(const Module& m);
Status Verify(const Module& m);

}  // namespace scellis::kernel
