// The memory a training workflow's dataset takes, and how the run keeps it. Held, the trainer
// decodes both splits whole (images and labels as f32, data::LoadDataset) and gathers every batch
// from them in an order shuffled over all examples (data::EpochOrder). Streamed, it reads each
// batch's examples from the files at their offsets in that same order (data::StreamedSplit), so
// training gives the same bits, and holds only the batches of one run. The plan counts
// the dataset as a memory class (execplan::HostDataset): in the budget on the CPU reference, whose
// buffers are host memory; beside the device's buffers, against the host's memory, elsewhere.
// The set is held when the plan fits that way, streamed (a yellow plan, `streamed-dataset`) when
// only that fits, and a plan red even streamed names the largest batch that fits streamed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/json_util.h"
#include "block/program.h"
#include "data/dataset.h"
#include "pipeline/compile.h"
#include "pipeline/data_parallel.h"

namespace scellis::train {

struct HeldDataset {
  std::string source;
  data::DatasetShape train, test;
  int64_t bytes = 0;       // both splits' images and labels as f32
  int64_t eval_batch = 0;  // the test examples gathered at once for scoring (train.eval_batch)

  // The bytes of `batch` examples gathered (images and labels, f32).
  int64_t BatchBytes(int64_t batch) const;
  // The plan's view of it: held whole, or streamed holding `batches` batches of the size bound to
  // `batch_dim` (or `batch` where the batch is not symbolic); either way with the evaluation batch
  // gathered beside.
  execplan::HostDataset Held() const;
  execplan::HostDataset Streamed(const std::string& batch_dim, int64_t batch,
                                 int64_t batches) const;
};

// The dataset the training workflow `p` reads, measured from its files' headers (nothing is
// decoded); nullopt for a program without a dataset.
Result<std::optional<HeldDataset>> DatasetHeld(const block::Program& p);

enum class DatasetMode {
  kAuto,      // held when the plan fits with the whole set, else streamed when that fits
  kStreamed,  // streamed, whatever fits (--stream-dataset)
};

struct DatasetPlan {
  pipeline::Compiled compiled;  // at the execplan rung, the dataset counted
  bool streamed = false;
};

// Plans the training step `text` with its dataset `d` counted: held when that plan is not red (or
// is red for a reason streaming cannot change), else streamed with `batches` batches held (one
// submission's, which replace any PlanOptions::caller_host_bytes); a streamed plan is at least
// yellow, its first finding the warning `streamed-dataset` saying what is held instead of the whole
// set. A plan red even streamed carries the largest batch that fits streamed (api::ExplainRedPlan).
// `options` as the caller compiles with (limits, budget, bindings). A data-parallel rank's plan is
// its gradient half's (pipeline::SplitTrainStep), bound at one chunk's examples, with `batches` the
// rank's chunks of one batch: what the rank reads streamed.
// `streamed_why`, with kStreamed: why the set is streamed, as the warning says it (default: it
// was asked for, --stream-dataset).
Result<DatasetPlan> PlanWithDataset(std::string_view text, const pipeline::CompileOptions& options,
                                    const HeldDataset& d, int64_t batches, DatasetMode mode,
                                    const std::string& streamed_why = "");

// How a training step runs in one process, decided before anything is decoded or allocated.
struct StepPlanChoices {
  int64_t batch = 64;           // examples per step (the train section's batch)
  int64_t steps_per_run = 8;    // steps per submission (--steps-per-run)
  bool stream_dataset = false;  // --stream-dataset: stream the set whatever fits
  bool host_batches = false;    // --host-batches: on a GPU too, gather each batch on the host
  bool gpu = false;             // the step runs on a GPU backend
};

struct StepPlan {
  pipeline::CompileOptions options;  // the step's session is prepared with these
  pipeline::Compiled compiled;       // at the execplan rung; red: refused, its findings say why
  bool streamed = false;
  bool batches_on_device = false;
  std::string host_batches_reason;  // on a GPU, why each batch is gathered on the host instead
};

// The plan of the step as the trainer runs it in one process (`scellis train` prepares its session
// with it; `scellis plan --backend` prints it): two runs in flight of `steps_per_run` steps each,
// their batches staged on the device, the loss watched after every step; the dataset held whole or
// streamed (PlanWithDataset); and on a GPU, with the set held, each step's batch gathered on the
// device from the train split held there (block::LowerOptions::dataset_examples_on_device) unless
// that plan is red or --host-batches asks otherwise. With batches gathered on the host, the host
// holds a submission's gathered batches; gathered on the device, a submission's row indices or,
// while the session is prepared, the copy of the split handed to the device, whichever is larger.
// `options` as the caller compiles with (limits, budget, bindings).
Result<StepPlan> PlanStep(std::string_view text, const pipeline::CompileOptions& options,
                          const HeldDataset& d, const StepPlanChoices& choices);

// How a data-parallel training step runs on each of `ranks` ranks alike (`mpirun -np N scellis
// train --ranks N`), decided before anything is decoded or allocated.
struct DataParallelChoices {
  int64_t batch = 64;  // examples per step, over all ranks (the train section's batch)
  int ranks = 1;
  int chunks = 0;               // the batch's gradient summed over this many chunks; 0: one a rank
  bool stream_dataset = false;  // --stream-dataset
};

struct DataParallelPlan {
  pipeline::StepHalves halves;      // a rank's two sessions are prepared with these options
  pipeline::CompiledWorkPlan work;  // the halves planned and the WorkPlan over the ranks
  bool streamed = false;
  std::vector<Diagnostic> notes;  // `streamed-dataset` when the set is streamed
};

// The plan of a data-parallel step as the trainer runs it (`scellis train --ranks` prepares its
// sessions with it; `scellis plan --ranks` prints it): the step split into its gradient and update
// halves (pipeline::SplitTrainStep), each rank gathering its chunks of a batch on the host; the
// dataset held whole when a rank's whole step fits with it (both halves, its chunks' gradients and
// the gathered partials, as the WorkPlan counts them), else streamed; then the WorkPlan over the
// ranks, each with `options.plan.limits`. A rank's gradient half red even streamed is an error
// (its largest batch named, per chunk); a WorkPlan red is returned, its findings saying why.
Result<DataParallelPlan> PlanDataParallelStep(std::string_view text,
                                              const pipeline::CompileOptions& options,
                                              const HeldDataset& d,
                                              const DataParallelChoices& choices);

// A split of `source` opened for streaming. A gzipped file cannot be read at offsets, so it is
// inflated once into a plain IDX copy in the store at `store_root` ("": the default store): a blob
// filed under the SHA-256 of the compressed file (index kind `inflated-idx`), written atomically,
// checked against its name whenever it is opened again. Plain files are read where they are.
Result<data::StreamedSplit> OpenStreamedSplit(const std::string& source, const std::string& split,
                                              const std::string& store_root);

}  // namespace scellis::train
