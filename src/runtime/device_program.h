// The device program: an ExecPlan flattened into what a WebGPU device executes — buffers with
// their sizes, the initial contents of the sources, the compute pipelines (WGSL and entry point),
// the dispatch list in order with its bindings and workgroup counts, the outputs, and the carries a
// session ping-pongs between steps. It is plain data with a JSON form
// ("scellis.device-program/1"), so the browser runtime (web/runtime) executes exactly what the
// native WebGPU backend executes: the native backend takes its pipelines, dispatches, buffers and
// sources from the same BuildDeviceProgram, so the WGSL cannot drift between the two.
//
// Model (shared with web/runtime, which reads the JSON):
//   * Buffers are the plan's buffers, indexed by id; each is allocated `size` bytes (its byte
//     count rounded up to 4, at least 4), with usage storage | uniform | copy-src | copy-dst (an
//     optimizer kernel over several parameters binds the step they share as a uniform).
//   * Sources (params, inputs with inline data, stored constants) are written once, before the
//     first step, from `data` (little-endian bytes of the dtype's storage layout; the writer pads
//     to a multiple of 4). A feed for a source's name replaces its data.
//   * Inputs without inline data must be fed: `fed` ones every step, `carried` ones once (their
//     later values come from the carry).
//   * A dispatch binds its kernel's inputs, then its outputs: the last `writes` bindings (1 when
//     the JSON leaves `writes` out; more for a kernel of several outputs, an optimizer update
//     writing a parameter and its moments). An output written over its input (an optimizer's
//     state updated in place) is written through that input's binding and has none of its own,
//     so `writes` may be 0: the inputs' bindings are never poisoned.
//   * One step is the dispatch list in order, all in one compute pass. A binding of size 0 binds
//     the buffer from `offset` to its end. Where a bound buffer is over the storage-binding cap of
//     `limits`, an elementwise kernel's dispatch is split into tiles, each binding a window of at
//     most the cap (its own WGSL, from kernel::wgsl::ElementwiseTile); a matmul, a sum, a softmax,
//     a cross entropy (merged with its gradient too: its tiles write several outputs) or a layout
//     copy is split into the tiles of kernel::PlanTiles (kernel/tiling.h), each binding windows of
//     its operands (kernel::wgsl::TileSource). Tiles along a reduced axis run in order, each after
//     the first continuing the partial sums left in the output (`tile.continues`); a whole-tensor
//     sum's tiles also bind, between inputs and outputs, a scratch buffer of the 256 lanes'
//     partial sums, listed after the plan's buffers. Grids over 65535 workgroups are already folded
//     into y and z by the emitter. A wide sum (kernel::SumSchedule, prod and fast tiers) of several
//     chunks per row is two dispatches: its chunks' partial sums into the plan's tile scratch,
//     then those, one workgroup per row, into its output.
//   * A fed input's buffer may be replaced, per step, by a slot of a staging buffer holding that
//     step's feed: the runtime substitutes the binding (offset + the slot's start; a size of 0 then
//     means the input's byte count rounded up to 4).
//   * An output marked `writes_into_history_slot` may be written, in a run of several steps,
//     straight into its slot of a buffer holding the run's history of watched values: every
//     binding of its buffer in a step then binds that step's slot instead (offset + the slot's
//     start; a size of 0 then means the buffer's `size`), and no copy is needed. A runtime does
//     so only for a value no dispatch binds together with another value so slotted (one dispatch
//     may not bind one buffer both read-only and writable), and not while it poisons outputs.
//   * A step runs the graph `repeat` times (a document's `"repeat": N`, a loop body). The first
//     `hoisted_dispatches` dispatches (the loop's invariants) are recorded once per step, before
//     the first iteration; the rest are the body. A temporally blocked body's dispatch runs
//     `iterations_per_dispatch` iterations, so the body's dispatches are recorded
//     repeat / iterations_per_dispatch times per step; carries swap after each round.
//   * After each round every carry swaps the roles of its two buffers: the buffer that held
//     `from` now holds the input `to`, and the other becomes `from`'s buffer for the next step. A
//     name read after a step (an output or an input) is found through that mapping. A carry whose
//     two buffers are one (written in place) swaps nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"
#include "execplan/plan.h"
#include "runtime/executor.h"

namespace scellis::runtime {

inline constexpr const char* kDeviceProgramFormat = "scellis.device-program/1";

// The device limits a program is laid out for. The defaults are WebGPU's guaranteed limits, which
// every browser adapter offers; a device with larger limits can run a program made for these.
struct ProgramLimits {
  uint64_t max_storage_buffer_binding_size = uint64_t{128} << 20;
  uint32_t min_storage_buffer_offset_alignment = 256;
  uint32_t max_compute_workgroups_per_dimension = 65535;
};

struct ProgramBuffer {
  int id = 0;
  int64_t bytes = 0;  // what the plan stores there
  uint64_t size = 0;  // what to allocate: bytes rounded up to 4, at least 4
  std::string cls;    // memory class name ("parameters", "working", ...)
};

// Initial contents of a buffer, written before the first step.
struct ProgramSource {
  std::string name;  // the feed name of the node (a feed by this name replaces the data)
  std::string role;  // "param" | "input" | "const"
  int buffer = 0;
  std::vector<std::byte> data;  // the tensor's bytes, unpadded
};

// A named input or param of the graph: what a feed (or an upload, or a download) refers to.
struct ProgramInput {
  std::string name;
  std::string role;  // "input" | "param"
  int buffer = 0;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  int64_t bytes = 0;
  bool fed = false;      // must be fed every step (no inline data, not carried)
  bool carried = false;  // the input end of a carry
  bool initial = false;  // has a source (initializer or inline data)
};

struct ProgramPipeline {
  int id = 0;
  std::string kernel;  // the kernel it was generated for (the first, when kernels share a source)
  std::string entry_point;
  std::string wgsl;  // exactly the text the device compiles
  std::string hash;  // "sha256:<hex>" of wgsl
  // A user op's kernel: the op, and where its WGSL lies in `wgsl` (kernel::EmittedSource), so
  // that a compile error is told in the user's line numbers (runtime/user_wgsl.h).
  std::string user_op;
  int user_first_line = 0;
  int user_lines = 0;
};

struct ProgramBinding {
  int buffer = 0;
  uint64_t offset = 0;
  uint64_t size = 0;  // 0: to the end of the buffer
};

struct ProgramDispatch {
  int step = 0;  // the plan step it belongs to
  std::string kernel;
  int pipeline = 0;
  // @binding(0..n-1): the kernel's inputs, then its outputs (the last `writes` bindings).
  std::vector<ProgramBinding> bindings;
  int writes = 1;
  std::array<uint32_t, 3> workgroups = {1, 1, 1};
  int64_t tile_base = 0;    // first output element of this tile
  int64_t tile_count = -1;  // elements in this tile; -1 when the dispatch is not tiled
  // Continues the partial sums an earlier tile of the step left in its output window (a tile
  // along a reduced axis past the first): the output must not be cleared before it.
  bool continues = false;
};

struct ProgramOutput {
  std::string name;
  int buffer = 0;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  int64_t bytes = 0;
  // Whether the kernel that computes the output can write it into a slot of a run's history of
  // watched values, bound in place of the output's own buffer: a computed value, not empty, alone
  // in its buffer (no other value placed there, nothing carried through it), which a dispatch of
  // every step writes whole (not in tiles, which bind windows of a buffer over the binding cap).
  bool writes_into_history_slot = false;
};

// After a step, the value of `from` (an output's or an updated state's node) becomes the input
// `to`.
struct ProgramCarry {
  std::string from;  // the node's output name if it has one, else its WebIR name
  int from_buffer = 0;
  std::string to;  // the input's feed name
  int to_buffer = 0;
};

struct DeviceProgram {
  std::string name;
  std::string content_id;  // of the document
  std::string tier;
  std::string tolerance;          // the tolerance class
  policy::Thresholds thresholds;  // the class resolved for the tier
  ProgramLimits limits;
  std::vector<ProgramBuffer> buffers;
  std::vector<ProgramSource> sources;
  std::vector<ProgramInput> inputs;
  std::vector<ProgramPipeline> pipelines;
  std::vector<ProgramDispatch> dispatches;
  std::vector<ProgramOutput> outputs;
  std::vector<ProgramCarry> carries;
  int64_t max_steps_per_submission = static_cast<int64_t>(kMaxStepsPerRun);
  int64_t repeat = 1;                   // the graph's iterations per step
  int64_t iterations_per_dispatch = 1;  // > 1 when the body is temporally blocked
  // The leading dispatches that run once per step, before the loop (hoisted kernels).
  int64_t hoisted_dispatches = 0;
  // How many times one step records the body's dispatches (carries swap after each).
  int64_t Rounds() const { return repeat / iterations_per_dispatch; }
};

// The program of `plan` for a device with `limits`. `feeds` replace the initial contents of the
// sources they name (validated as for a run). A red plan is refused with its findings; a kernel
// without WGSL, or one binding a buffer over the cap that cannot be tiled, is an internal error.
Result<DeviceProgram> BuildDeviceProgram(const execplan::Plan& plan, const Feeds& feeds,
                                         const ProgramLimits& limits = {});

Json ToJson(const DeviceProgram& p);

// Standard base64 (RFC 4648, with padding), as the JSON form carries bytes.
std::string Base64Encode(const std::vector<std::byte>& bytes);

}  // namespace scellis::runtime
