// The trainer: runs a workflow's "train" section. Batches come from its dataset block in a seeded
// order, many steps go into one submission of a prepared session (weights and optimizer moments
// never leave the backend), the trained weights are scored on the test split after each epoch,
// and checkpoints are written atomically and resumed bit-exactly on the reference.
//
// Every front end (the CLI, the Python package, the Studio server) calls this; none keeps a loop
// of its own. The trainer never writes to a terminal: it reports through TrainEvents and returns
// a TrainResult the caller prints.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"
#include "pipeline/compile.h"
#include "runtime/backends/select.h"

namespace scellis::train {

struct TrainOptions {
  pipeline::CompileOptions compile;  // tier, budget; the batch dimension is bound by the trainer
  runtime::SelectOptions select;
  int epochs = 0;          // 0: the document's
  int steps_per_run = 8;   // steps per run (one read-back), 1 to 64
  int64_t max_steps = 0;   // caps each epoch's steps (quick checks); 0: a whole epoch
  std::string resume;      // continue from this checkpoint
  std::string init_out;    // write the initial state here (for peers to start from)
  std::string checkpoint;  // write the state here after each epoch
  std::string losses_out;  // write every step's loss here, as a JSON array
  // Data parallelism (workplan/): the batch's gradient summed over `chunks` chunks by the
  // WorkPlan's fixed tree, the chunks shared among `ranks` processes of an MPI job. A run of one
  // rank with the same chunks gives the same bits on the CPU reference. chunks 0: one per rank;
  // ranks 1 and chunks 0 or 1: the step in one piece, as before.
  int ranks = 1;
  int chunks = 0;
  double collective_timeout_seconds = 300;  // a rank waiting longer for the others gives up
  // Data parallel: record the run's last step for `scellis verify --shard` (train/shards.h) in
  // the store at store_root ("": the default store).
  bool record_shards = false;
  std::string store_root;
  // Read the dataset from its files batch by batch even where the plan fits with it held whole
  // (the same batches, the same bits); without it the trainer streams only when the plan fits no
  // other way (train/dataset_memory.h). A gzipped file's inflated copy goes into the store at
  // store_root. Data parallel, each rank reads its chunks of each batch from the files, and its
  // plan counts what it holds.
  bool stream_dataset = false;
  // Feed every step's batch from the host even where the train split could be held on the
  // device (--host-batches; the same bits, for comparisons). Without it a step on a GPU gathers
  // its batch on the device from the split held there whenever that plan is not red
  // (block::LowerOptions::dataset_examples_on_device); the CPU reference, a streamed dataset and
  // data parallelism always feed batches from the host.
  bool host_batches = false;
};

struct Progress {
  int epoch = 0, epochs = 0;  // 1-based
  int64_t step = 0, total = 0;
  float loss = 0;               // the latest step's
  double steps_per_second = 0;  // over this epoch so far
};

struct EpochResult {
  int epoch = 0, epochs = 0;  // 1-based
  double mean_loss = 0;
  double test_accuracy = 0;
  int64_t examples = 0;  // test examples scored
  int64_t steps = 0;
  double seconds = 0;        // training and evaluation
  double train_seconds = 0;  // training alone
  double steps_per_second() const;
};

struct TrainEvents {
  std::function<void(const Diagnostic&)> note;  // compiler notes and warnings
  // The backend chosen, with the reason when `auto` fell back (before any session is prepared).
  std::function<void(const std::string& backend, const std::optional<std::string>& fallback)>
      backend;
  // The device this rank's step runs on ("adapter 2 of 2: NVIDIA H200 (vulkan), by MPI local
  // rank 1"); called on every rank of a job, unlike the other events, so each rank can say which
  // GPU it opened. Not called on backends with one device.
  std::function<void(int rank, const std::string& adapter)> device;
  // A checkpoint was restored: training continues after `epoch` (and global `step`).
  std::function<void(int epoch, int64_t step)> resumed;
  std::function<void(const Progress&)> progress;  // after every submission
  std::function<void(const EpochResult&)> epoch;  // after each epoch's evaluation
  // Asked after every submission: true stops the training with `cancelled` (the Studio's page
  // went away). Nothing is written: no checkpoint or output of a cancelled run.
  std::function<bool()> cancelled;
};

struct TrainResult {
  std::string backend;   // "cpu" | "webgpu"
  std::string executor;  // "reference" | "fused-encoder"
  std::optional<std::string> fallback_reason;
  std::string determinism_tier;
  std::string content_id;  // the document's
  std::string profile;     // the device profile the step ran on (DeviceProfile::key)
  std::string plan_hash;   // workplan::PlanHash of the plan holding the trained state
  std::string tolerance;   // that plan's tolerance class, and its thresholds at the run's tier
  double atol = 0, rtol = 0;
  std::string dataset;            // the dataset's source, as the document names it
  bool dataset_streamed = false;  // read from its files batch by batch, not held whole
  // Where each step's batch was gathered: "device" (from the train split held there, the step
  // fed its row indices) or "host" (gathered and fed whole), and on a GPU why "host".
  std::string batches = "host";
  std::optional<std::string> host_batches_reason;
  int steps_per_run = 0;
  std::vector<EpochResult> epochs;  // those run by this call (after a resume, the later ones)
  std::vector<float> losses;        // every step's loss, in order
  int rank = 0, ranks = 1;          // this process's rank of the job, and the job's ranks
  int chunks = 1;                   // the chunks the batch's gradient was summed over
  std::string shard_record;         // the id of the recorded step's shards (--record-shards)
  std::string adapter;              // which adapter of the host (DeviceProfile::adapter), or ""
  int64_t batch = 0;                // examples per step (the whole batch, over every rank)
  // Where this rank's training steps spent their time, in seconds summed over the run. A
  // data-parallel step: "weights_copy" (the update half's params copied into the gradient half's,
  // on the device), "gradients" (batch chunks uploaded, the gradient half run, its gradients read
  // back),
  // "reduce_local" (this rank's partial sums), "all_gather" (the collective), "combine" (the
  // fixed tree over every partial), "update" (the gradient uploaded, the update half run). A step
  // in one piece: "steps" (upload, run and loss read-back of the submissions).
  std::vector<std::pair<std::string, double>> step_seconds;
  // Bytes this rank moved per data-parallel step: gradient values read back, and sent into the
  // all-gather.
  int64_t gradient_bytes_per_step = 0;

  double seconds_per_epoch() const;
  // `{"backend", "executor", "fallback_reason", "steps_per_run", "determinism_tier", "rank",
  //   "ranks", "chunks", "shard_record" (null unless recorded), "adapter" (null when none),
  //   "batch", "dataset_streamed", "batches", "host_batches_reason", "step_seconds": {phase:
  //   seconds}, "gradient_bytes_per_step", "epochs": [{"epoch", "mean_loss", "test_accuracy",
  //   "seconds", "train_seconds", "steps"}], "seconds_per_epoch", "test_accuracy": [...]}`.
  Json ToJson() const;
};

class Trainer {
 public:
  // Which input a failure concerns, so a front end can name the file.
  enum class Concern {
    kDocument,    // the document (or the run of it)
    kOptions,     // the options or the machine (a backend that cannot be had)
    kResume,      // the checkpoint being resumed
    kInitOut,     // the initial-state file being written
    kCheckpoint,  // the checkpoint being written
    kLossesOut,   // the losses file being written
  };

  explicit Trainer(TrainOptions options, TrainEvents events = {});

  // Trains the document `text` (a workflow with a "train" section). The named diagnostics:
  //   no-train-section, missing-field (no "data"), bad-flag (steps_per_run out of 1..64);
  //   the dataset's and the compiler's own; on resume, the safetensors reader's,
  //   checkpoint-mismatch (another document wrote it) and bad-checkpoint (epoch, step or tensors
  //   that do not describe this run's state, or a tensor that is not F32).
  // Over several ranks, a rank that fails stops every rank (workplan::Collective::Abort): only
  // a run that succeeded, or failed on every rank alike before the ranks joined, returns.
  Result<TrainResult> Train(std::string_view text);

  // What the last failure of Train concerned.
  Concern failure_concern() const { return concern_; }

 private:
  TrainOptions options_;
  TrainEvents events_;
  Concern concern_ = Concern::kDocument;
};

// The first dataset of `document` whose source names files ("idx:<images>,<labels>") rather than
// a dataset the engine knows by name, as `dataset-path-refused` at its source: what a server
// refuses, since it must not read paths that a request names. None when every dataset is named.
std::optional<Diagnostic> DatasetFromFiles(const doc::Document& document);

}  // namespace scellis::train
