// The passes of the kernel rung, in the order the pipeline runs them. Each transforms the module in
// place and leaves it verifiable (kernel::Verify).
#pragma once

#include "base/result.h"
#include "kernel/module.h"

namespace scellis::kernel {

// One kernel per computed WebIR node, in graph order: an elementwise node is an elementwise kernel
// of one step, any other op a kernel of its own. Constants nobody reads get no kernel.
Status Partition(Module& m);

// Folds elementwise kernels into their consumer: a node is folded when it is not a named output and
// every reader is elementwise, and it has one reader or is a constant (`full`, copied into every
// reader as a literal). What remains are the roots, each one kernel evaluating its steps in order.
Status FuseElementwise(Module& m);

// A `uniform` (a counter hash of seed, step and element index) read only by fused elementwise
// kernels of its shape, at each element's own index, costs no kernel and no buffer: each reader
// computes it as a step of its own expression from the same seed, step value and element index
// (a tile's index counted in the whole tensor), so it gives the bits the uniform kernel stored.
// An Ising sweep's random draws are a step of its update instead of a dispatch before it.
Status FuseGenerators(Module& m);

// A rank-2 transpose read only by rank-2 matmuls costs no kernel: the matmuls read its operand with
// swapped strides (backward passes are full of them: x^T @ g, g @ w^T).
Status FoldTransposes(Module& m);

// A fused elementwise kernel that reads a matmul's f32 result as its only reader, has the result's
// shape and reads it at each element's own index becomes the matmul's epilogue (Kernel::expr):
// the matmul applies it to each finished sum and stores the epilogue's result, so the result gets
// no buffer and the elementwise kernel no dispatch (bias + activation after a linear layer, the
// activation's gradient after dh = dy W^T). The sum is the unfused matmul's, in the same order,
// and the epilogue's steps are the elementwise kernel's: the same bits.
Status FuseMatmulEpilogue(Module& m);

// An optimizer update split into one op per output (adam_update, adam_m, adam_v over the same
// param, grad, moments and step; momentum_update and momentum_velocity) becomes one kernel that
// writes the new parameter and then each new moment (Kernel::extra_outputs): one dispatch and one
// read of the shared inputs per parameter instead of one per output. Each output is computed by
// the same operations as its own kernel computed it.
Status MergeOptimizerOutputs(Module& m);

// An optimizer kernel's output that replaces an input element for element — the new parameter
// or moment carried into the old one after the step — is written over that input
// (Kernel::in_place) where no later kernel reads the old value and it is no named output: one
// read_write binding instead of two buffers, and the carry between steps moves nothing. Every
// element is read, then written, by its own invocation alone: the same bits.
Status WriteStateInPlace(Module& m);

// Consecutive optimizer kernels of one op (each a parameter's update, after merge-optimizer-
// outputs and write-state-in-place) become one kernel over the parameters' elements one after
// the other (one invocation per element of the concatenated ranges, each range with its own
// bindings; OptimizerParts), as long as it binds at most kMaxStorageBindings storage buffers, with
// the step they share bound once, as a uniform; a kernel binding a tensor over the binding cap is
// left alone. Each element is computed by the operations of its own kernel: the same bits, in
// fewer dispatches (Adam in place: two parameters per dispatch).
Status MergeOptimizerKernels(Module& m);

// An optimizer kernel whose every output is written over its input, and whose gradients are
// exactly what one plain rank-2 matmul computes — its product and the column sums of B it adds
// (merge-bias-gradient: a weight's gradient and its bias's) — read by nothing else, runs inside
// that matmul where it ran: the matmul applies each parameter's update to each finished element
// of its gradient, in registers (Kernel::update_product). The gradients get no buffer and the
// update no dispatch; the sums are the unfused matmul's, in the same order, and each update is the
// operations of its own kernel: the same bits on the CPU reference and on SwiftShader (tested). A
// driver may contract a multiply and an add differently in the larger shader: on an H200, 2 of 5
// elements of a bias's second moment came out 1 ulp apart after five steps (bench/RESULTS.md),
// each plan still the same bits run to run. Left alone where the matmul's operands are
// overwritten between the two, a tensor is over the binding cap (tiles take no update) or the
// fused kernel would bind more than kMaxStorageBindings storage buffers.
Status FuseOptimizerIntoGradient(Module& m);

// The loss merged with its gradient (merge-loss-gradient) and a product that takes the gradient
// as its A — the MLP's gradient back through w2, with its ReLU mask — become one dispatch of row
// stages (KernelKind::kRowStages): workgroup 0 sums the loss's tree as the loss's kernel does,
// and every other workgroup takes a block of rows through the gradient and then the product,
// both row-local (a row of the product reads only its own row of the gradient). Each dependent
// dispatch costs a GPU several microseconds however little it computes; this saves one, and
// spreads the product over as many workgroups as there are row blocks. Each stage computes as its
// kernel did — every element of a product adds its K products in increasing order from zero,
// then its epilogue — so the plan's bits do not change. Left alone where the product cannot move
// next to the loss (a kernel in between writes what it reads or reads what it writes), its K is
// over 32 (each element is one lane's loop), a tensor is over the binding cap, or the kernel would
// bind more than kMaxStorageBindings storage buffers.
Status FuseGradientProductIntoLoss(Module& m);

// A loss and its gradient over the same logits and targets (cross_entropy, cross_entropy_grad)
// become one kernel that writes the loss and then the gradient (Kernel::extra_outputs): one
// dispatch and one walk of each row instead of two. The loss sums its rows in the tree order of
// its own kernel, and each gradient element is computed by the operations its own kernel used:
// the same bits. A kernel that would bind a tensor over the binding cap is left alone.
Status MergeLossGradient(Module& m);

// A column sum (f32 `sum` over axis 0 of a rank-2 value: a bias's gradient) becomes the next
// output of a kernel that has the summed value at hand: a rank-2 matmul that reads it as its B
// operand (x^T @ dy: the weight's gradient) and whose B is small (at most 2^18 elements), which
// adds the columns in its first workgroup — first, so that fuse-optimizer-into-gradient can update
// the weight and the bias inside it — else the merged loss-and-gradient kernel that writes it (its
// one workgroup adds the columns once the gradient is written). One dispatch less each; every
// column is added in row order from 0.0, as the sum kernel adds it: the same bits.
Status MergeBiasGradient(Module& m);

// A constant the step would recompute for an op (the loss gradient's seed, a `full` of one f32
// element, read as the last arguments of a loss or its gradient) becomes a literal of the op's
// kernel (Kernel::literals): no kernel computes it and no buffer holds it, and the op reads the
// same value. Constants read by elementwise kernels are literals already (fuse-elementwise).
Status FoldConstantInputs(Module& m);

// Loop-invariant hoisting in a repeated graph (`"repeat": N`): a kernel none of whose inputs
// depends, directly or through other kernels, on a carried input (and whose output is not itself
// carried) computes the same value in every iteration; it is marked hoisted and moved, in order,
// ahead of the loop body, so executors run it once per step before the first iteration and keep
// its output through the loop. Kernels are renumbered. A graph without a loop is left alone.
Status HoistLoopInvariants(Module& m);

// The schedules the pass picks from. Large: 128x128 tiles over K steps of 16, 8x8 outputs per
// invocation (256 invocations), the next step's tiles prefetched into registers (on an H100 the
// fastest of the schedules tried for large products, bench/RESULTS.md); medium: 64x64 tiles, 4x4
// per invocation (256), or where both operands load as vec4 8x8 (64) with prefetch; small: the
// 16x16 one-output kernel (chosen with K staged 16, 32 or 64 deep by the length of K).
const MatmulSchedule& LargeMatmulSchedule();
const MatmulSchedule& MediumMatmulSchedule();
const MatmulSchedule& MediumVec4MatmulSchedule();
const MatmulSchedule& SmallMatmulSchedule();
// `s` with vec4 loads for each operand whose layout allows them under `s`.
MatmulSchedule WithVec4Loads(MatmulSchedule s, const MatmulShape& shape);
// Whether `s` can run `shape`: its workgroup memory within `workgroup_storage_bytes` (by default
// WebGPU's guaranteed 16 KiB, which every chosen schedule keeps to) and its grid within 65535
// workgroups per dimension. The per-element schedule runs anything.
bool MatmulScheduleFits(const MatmulSchedule& s, const MatmulShape& shape,
                        int64_t workgroup_storage_bytes = 16384);
// The largest tile whose grid still fills a large GPU, else the small one; per-element only when
// no tile fits (an empty output, a grid too large).
MatmulSchedule ChooseMatmulSchedule(const MatmulShape& shape);
// Sets every matmul kernel's schedule (ChooseMatmulSchedule of its shape); emit-wgsl follows it.
Status ScheduleMatmul(Module& m);

// Whether a fused elementwise kernel can load and store four elements at a time: every buffer it
// binds holds 32-bit elements, its element count is a multiple of 4, and every input is read at
// the element's own index or broadcast in whole vectors (a single element, or trailing dimensions
// of a multiple of 4 elements: ReadPeriod); a shifted load keeps it scalar.
bool ElementwiseVectorisable(const Module& m, const Kernel& k);
// vec4, 256 invocations per workgroup, up to 4 vectors each, where ElementwiseVectorisable; else
// one element per invocation.
ElementwiseSchedule ChooseElementwiseSchedule(const Module& m, const Kernel& k);
// Sets every elementwise kernel's schedule (ChooseElementwiseSchedule); emit-wgsl follows it.
Status ScheduleElementwise(Module& m);

// The shortest axis a sum along it runs wide on (its elements after the axis numbering 1). A
// shorter line is summed serially by one invocation per output in one dispatch; the wide order
// takes two dispatches and one workgroup of 256 lanes per 1024 elements of every line, which
// only pays once each line fills several chunks (4 at this length: the finish then adds more
// than one partial per row, and the serial walk is long enough to leave a GPU idle when there
// are few outputs). A function of the shape alone, so the order never depends on the device.
inline constexpr int64_t kWideAxisMinLength = 4096;
// Rows (outputs) a sum along an axis runs wide over at most: one grid dimension's limit.
inline constexpr int64_t kMaxWideRows = 65535;
// Along an axis with elements after it, outputs are columns, and one invocation per output walks
// its column with its neighbours reading neighbouring addresses: that fills a large GPU from about
// 64 Ki outputs on (2 048 warps), so only fewer outputs run wide, and only along an axis long
// enough (1024 steps) to give the second dispatch's partial sums something to save.
inline constexpr int64_t kMaxWideColumnOutputs = 65536;
inline constexpr int64_t kWideColumnMinLength = 1024;
// The wide schedule of an f32 sum or mean (SumSchedule), if it runs wide: prod or fast tier, a
// non-empty input within the module's binding cap, nothing merged into the kernel, and either
// over the whole tensor (one row), along an axis with nothing after it of at least
// kWideAxisMinLength elements (one row per output, at most kMaxWideRows), or along an axis of at
// least kWideColumnMinLength with elements after it and at most kMaxWideColumnOutputs outputs.
std::optional<SumSchedule> ChooseSumSchedule(const Module& m, const Kernel& k);
bool SumRunsWide(const Module& m, const Kernel& k);
// Sets ChooseSumSchedule's schedule on every kernel; emit-wgsl and the device program follow it.
Status ScheduleSum(Module& m);

// A gather of rows (index_select along axis 0 by a rank-1 index, of 32-bit elements: a batch's
// examples and labels picked from a split held on the device, an embedding's rows) read only by
// kernels that load each input element by element — matmuls, the loss and its gradient, their row
// stages — costs no kernel and no buffer: each reader binds the table and the index and loads
// element e of the gathered value from the table's row index[e / row] (Kernel::row_gathers).
// A gather moves bits, so every reader reads the values it read before: the same bits, one
// dependent dispatch less per gather. Left alone where a reader would bind more than
// kMaxStorageBindings storage buffers or a tensor over the binding cap (tiles read windows, not
// rows), loads the value as vec4 with rows not a multiple of 4 long, or where a kernel up to the
// last reader writes the table or the index in place. Runs after the schedules, which it reads.
Status FoldRowGathers(Module& m);

// Generates every kernel's WGSL (and its dispatch grid) for the module's determinism tier.
Status EmitWgsl(Module& m);

// Butterfly blocking of an unrolled network of stages (a bitonic sort's compare-exchanges): a
// run of consecutive rank-1 elementwise kernels of 32-bit values, each reading earlier ones'
// values at its own element or at a butterfly partner i ^ mask with mask below the tile (a power
// of two up to 4096, its carried values within 16 KiB of workgroup memory), and any other input
// at the element (or one element everywhere), becomes one kernel of stages (Kernel::stages): one
// dispatch in which each workgroup runs every stage over its tile in workgroup memory, writing
// only the values read after the run. A stage whose partner lies outside the tile ends the run;
// a run that would bind more than 8 buffers stays as it was.
// Every stage evaluates its own expression on the same operands: the unblocked plan's bits. A
// repeated graph is left alone.
Status BlockButterflyStages(Module& m);

// Temporal blocking of a repeated graph (`"repeat": N`) whose body (the kernels not hoisted) is
// one rank-2 stencil kernel (a fused expression shifting its carried value, or `life`): a second
// WGSL source that runs several iterations per dispatch over tiles with recomputed halos
// (Kernel::blocking), as many as divide N and fit the halo. Otherwise Module::not_blocked_because
// says why. Every iteration computes what the unblocked kernel computes, bit for bit.
Status BlockTemporally(Module& m);

}  // namespace scellis::kernel
