// Rung 4: ExecPlan. Concrete dispatches and buffers, and the memory plan that settles feasibility
// before the first dispatch. Buffers are assigned by static liveness (a value's buffer is reused
// once its last reader has run); memory is accounted by class; the plan ends in a verdict:
// green (fits), yellow (runs, with warnings), red (refuses: what failed, why, what to change).
// A red plan never dispatches. FromKernel sets up the plan; the passes in execplan/passes/ fill it.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/determinism.h"
#include "base/json_util.h"
#include "base/result.h"
#include "kernel/module.h"
#include "kernel/tiling.h"

namespace scellis::execplan {

enum class MemClass {
  kParameters,
  // Mixed precision's f32 parameters: read by the step only through their f16 casts and by the
  // optimizer, which updates them in f32.
  kMasterWeights,
  kInputs,
  kActivations,  // forward values kept for the backward pass
  kGradients,
  kOptimizerState,
  kWorking,  // everything else: intermediates, outputs, constants
  // A training workflow's dataset on the host (PlanOptions::dataset): a class of the budget where
  // host memory is the device's memory (the CPU reference); never a buffer.
  kDataset,
};
inline constexpr int kMemClasses = 8;
const char* MemClassName(MemClass c);

// When a value needs storage, in steps: written by step `written` (-1: a source, there before the
// first step) and last read by step `last_read` (-1: never read). Values folded into kernels are
// not stored.
struct Lifetime {
  bool stored = false;
  int written = -1;
  int last_read = -1;
};

struct Buffer {
  int id = 0;
  int64_t bytes = 0;
  MemClass cls = MemClass::kWorking;
  bool pinned = false;      // lives for the whole run (params, inputs, outputs, state)
  std::vector<int> values;  // WebIR nodes stored here over the run
  // The partial results tiles hand on beyond their outputs (a whole-tensor sum's 256 lanes), for
  // the kernels cut into tiles under the binding cap, and the chunks' partial sums a wide sum's
  // first dispatch hands its second (kernel::SumSchedule); holds no value. At most one per plan,
  // pinned, shared by every such kernel (they run one at a time).
  bool tile_scratch = false;
};

struct Step {
  int kernel = 0;
  std::vector<int> reads;  // buffer ids, in Kernel::inputs order
  int write = 0;
  std::vector<int> extra_writes;  // buffer ids of Kernel::extra_outputs, in order

  // `write`, then `extra_writes`: the buffers written, in binding order.
  std::vector<int> Writes() const {
    std::vector<int> all = {write};
    all.insert(all.end(), extra_writes.begin(), extra_writes.end());
    return all;
  }
};

enum class Verdict { kGreen, kYellow, kRed };
const char* VerdictName(Verdict v);

// The fix a red training plan carries: the largest batch whose plan is not red, found by
// planning the workflow again at candidate batch sizes (api::FitBatch), never estimated.
struct BatchFit {
  std::string dim;      // the batch dimension's symbol ("B")
  int64_t planned = 0;  // the batch the red plan was made at
  int64_t largest = 0;  // the largest batch that plans green or yellow; 0: none
  Verdict verdict_at_largest = Verdict::kGreen;
  int64_t allocated_at_largest = 0;  // what that plan allocates
  // The largest batch that plans green (no warning; the largest that fits is often yellow, near
  // its budget); 0 when none does.
  int64_t largest_green = 0;
  int64_t allocated_at_largest_green = 0;
  int plans = 0;  // plans the search made
};

// How a run processes a streamed input (a dataset of rows declared `"stream": true`) whose whole
// plan does not fit: in chunks of rows, the chunk found by planning the workflow again at
// candidate row counts (api::PlanStreaming), never by dividing byte counts. The plan it is
// attached to is the plan of one chunk.
struct StreamFit {
  std::string input;  // the streamed input's name
  std::string dim;    // its first dimension's symbol ("N")
  int64_t rows = 0;   // N
  int64_t bytes = 0;  // the whole input
  int64_t chunk_rows = 0;
  int64_t chunks = 0;
  int64_t last_chunk_rows = 0;  // rows of the last chunk (chunk_rows when N divides evenly)
  int64_t whole_allocated = 0;  // what the plan of all N rows at once allocates (it is red)
  int plans = 0;                // plans the chunk search made
  // Outputs summed or averaged over the rows, carried across chunks on the host in the
  // reference's order.
  std::vector<std::string> reduced_outputs;
};

struct MemoryPlan {
  std::array<int64_t, kMemClasses> by_class{};  // allocated bytes per class
  int64_t allocated = 0;                        // all buffers
  int64_t peak_live = 0;                        // largest sum of live values at any step
  // The live values at that peak, by class, and the step where it is reached (-1: before the
  // first step, when only the sources are live). The largest of these is the class a smaller
  // plan has to shrink.
  std::array<int64_t, kMemClasses> at_peak{};
  int peak_step = -1;
  int64_t largest_tensor = 0;
  int64_t budget = 0;
  std::string budget_source;
  // Host copies a run holds besides the device's buffers: sources built or fed on the host before
  // upload, named outputs read back, and whatever the caller stages (PlanOptions).
  int64_t host_staging = 0;
  // On a WebGPU device, the fed inputs' per-step slots of PlanOptions::staged_steps steps (each
  // slot at a 256-byte offset, as the backend binds them): device memory beside the plan's
  // buffers, counted in `allocated` and in the class `inputs`.
  int64_t fed_staging = 0;
  // On a WebGPU device, the watched outputs' history and its read-back buffer for the staged steps
  // (PlanOptions::watched), a 256-byte-aligned slot per value and step: device memory beside the
  // plan's buffers, counted in `allocated` and in the class `working`. The host's copies of the
  // kept steps (and the read-back's padding): watched_history_host, also in host_staging.
  int64_t watched_history = 0;
  int64_t watched_history_host = 0;
};

// What the target device allows, for the verdict. A declared budget is a cap the user chooses;
// these are what the machine has, so a plan is judged against both.
struct DeviceLimits {
  std::string backend = "cpu";  // "cpu" | "webgpu" | "null": what computes, hence what it can keep
  std::string device = "cpu";
  int64_t max_buffer_bytes = int64_t{1} << 40;
  int64_t max_binding_bytes = int64_t{1} << 40;
  // Memory the device's buffers live in, when it is not the host's; 0 when it cannot be told.
  int64_t device_memory_bytes = 0;
  std::string device_memory_source;
  // The host's available memory; when 0, FromKernel reads it (every run stages through the host).
  int64_t host_memory_bytes = 0;
  std::string host_memory_source;
  // The device's buffers are host memory (the CPU reference, a software adapter): they count
  // against the host's memory along with the staging.
  bool buffers_in_host_memory = true;
  // Workgroup memory a kernel may declare: WebGPU's guaranteed 16 KiB, or the adapter's own
  // maxComputeWorkgroupStorageSize when a WebGPU device is selected (an H200 offers 48 KiB).
  int64_t max_workgroup_storage_bytes = 16384;
  // Storage buffers one kernel may bind: the adapter's maxStorageBuffersPerShaderStage on WebGPU
  // (WebGPU guarantees 8; SwiftShader and an H200 offer 10); 0 where nothing binds buffers (the
  // CPU reference).
  int64_t max_storage_buffers_per_kernel = 0;
};

// The limits of a backend that keeps its buffers in host memory, with the host's available memory
// read now.
DeviceLimits HostMemoryLimits(std::string backend, std::string device);

// The dataset a training run keeps on the host (train/dataset_memory.h): decoded whole (both
// splits as f32), or streamed from its files, holding only the batches of one run; either
// way with the test split's evaluation batch gathered beside it, for scoring. Where
// the backend's buffers live in host memory (the CPU reference) it is the memory class `dataset`,
// counted in the budget; elsewhere it is host memory beside the device's buffers, judged against
// the host's memory only (the device budget does not hold it).
struct HostDataset {
  std::string source;  // as the document names it ("fashion-mnist")
  int64_t train_examples = 0, test_examples = 0;
  int64_t features = 0;     // values per example
  int64_t whole_bytes = 0;  // both splits decoded whole
  // The evaluation batch: gathered from the test split (held or streamed, as the train split),
  // `example_bytes` per example; a fixed size, whatever the training batch is bound to.
  int64_t eval_examples = 0;
  int64_t example_bytes = 0;  // one example's image values and label, as f32
  bool streamed = false;
  // Streamed: `batches` batches of `example_bytes` per example are held, the batch being the size
  // `batch_dim` is bound to in the plan (so a plan at another batch counts its own), or `batch`
  // when the batch is not symbolic.
  std::string batch_dim;
  int64_t batch = 0;
  int64_t batches = 1;
};

struct PlanOptions {
  std::optional<int64_t> budget_bytes;  // from the command line; overrides the document
  DeviceLimits limits;
  // Host memory the caller holds for the run beyond the plan's own values (a trainer's batches
  // gathered ahead of a submission), and what it is, for the verdict's message.
  int64_t caller_host_bytes = 0;
  std::string caller_host_what;
  std::optional<HostDataset> dataset;  // a training run's dataset, when it has one
  // Steps whose fed inputs a GPU backend holds at once in staging buffers of its own, beside the
  // plan's buffers: the steps of the runs in flight (a session's steps per run times
  // runtime::kMaxRunsInFlight). Set by the callers that know their runs (the trainer, `scellis
  // run`); 0 counts none.
  int64_t staged_steps = 0;
  // Named outputs the caller reads back after every step (a run's history, the trainer's loss),
  // and how many steps of them it keeps on the host. A GPU session writes the watched values of
  // its staged_steps steps into a history buffer of each run and reads it back through a buffer of
  // the same size; the host keeps watched_steps_kept steps of them (or, on a GPU, at least the
  // steps in flight).
  std::vector<std::string> watched;
  int64_t watched_steps_kept = 0;
};

struct Plan {
  std::shared_ptr<const kernel::Module> module_ref;  // shared with the kernel rung, never copied
  DeviceLimits limits;                               // what the plan was made for
  std::vector<Lifetime> lifetimes;                   // per WebIR node (liveness)
  std::vector<MemClass> class_of;                    // per WebIR node (memory-classes)
  std::vector<Buffer> buffers;
  std::vector<int> buffer_of;  // per WebIR node; -1 for values folded into kernels
  std::vector<Step> steps;
  MemoryPlan memory;
  int64_t caller_host_bytes = 0;  // from PlanOptions
  std::string caller_host_what;
  int64_t staged_steps = 0;            // from PlanOptions
  std::vector<std::string> watched;    // from PlanOptions
  int64_t watched_steps_kept = 0;      // from PlanOptions
  std::optional<HostDataset> dataset;  // from PlanOptions
  int64_t dataset_bytes = 0;           // what the run holds for it, at this plan's batch
  Verdict verdict = Verdict::kGreen;
  std::vector<Diagnostic> findings;   // why the verdict is not green
  std::optional<BatchFit> batch_fit;  // a red training plan's computed fix, when searched
  std::optional<StreamFit> stream;    // a streamed input processed in chunks (a yellow plan)
  policy::Thresholds thresholds;      // the tolerance class resolved for the tier

  const kernel::Module& module() const { return *module_ref; }
  const webir::Graph& graph() const { return module_ref->graph(); }
  const RungHeader& header() const { return module_ref->header(); }
};

// The plan of `m`: one step per kernel, the budget resolved (the command line over the document
// over the detected one) and the tolerance thresholds for the tier; no buffers yet.
// Whether the plan counts its dataset in the budget (class `dataset`): it has one and the backend's
// buffers live in host memory.
bool DatasetInBudget(const Plan& p);

// The steps whose watched values the plan counts on the host: those its caller keeps
// (PlanOptions::watched_steps_kept), and on a WebGPU device at least the staged steps, whose
// read-back the host holds.
int64_t WatchedStepsKept(const Plan& p);

// The class with the most live bytes at the peak (the first of equals, in MemClass order).
MemClass DominantClass(const MemoryPlan& m);

// Records the batch search's result on a red plan and says it in the help of its memory
// findings (memory-over-budget, -host, -device), which a smaller batch answers.
void AttachBatchFit(Plan& p, BatchFit fit);

// The tiles kernel::PlanTiles cuts step `s` into when it binds a buffer over the plan's binding
// cap and its kernel does not tile element for element (kernel::TilesPerElement); nullopt when it
// needs no such tiles, or none fit.
std::optional<kernel::Tiling> StepTiling(const Plan& p, const Step& s);
// Bytes of the tile scratch step `s` binds beyond its operands: its tiles' (StepTiling), else a
// wide sum's partial sums between its two dispatches; 0 when none.
int64_t StepScratchBytes(const Plan& p, const Step& s);

Result<Plan> FromKernel(std::shared_ptr<const kernel::Module> m, const PlanOptions& options);
std::string Print(const Plan& p);
Json ToJson(const Plan& p);
Status Verify(const Plan& p);

// The host's available memory in bytes (MemAvailable, or the free physical pages where that
// cannot be read); 0 when neither can. In WebAssembly, the room left in the module's memory: its
// maximum size less what the heap has taken.
int64_t AvailableHostMemory();
// What AvailableHostMemory measures, as diagnostics name it ("available host memory").
const char* AvailableHostMemorySource();
std::string FormatBytes(int64_t bytes);
// What a plan's run keeps of its dataset (`p.dataset` set), and where that memory is counted.
std::string DescribeDataset(const Plan& p);

// a + b and a * b, held at INT64_MAX instead of overflowing: memory totals are compared against
// limits, and an overflowed total must never look small.
int64_t SaturatingAdd(int64_t a, int64_t b);
int64_t SaturatingMul(int64_t a, int64_t b);

}  // namespace scellis::execplan
