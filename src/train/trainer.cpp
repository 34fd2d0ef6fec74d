#include "train/trainer.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <span>

#include "api/run.h"
#include "api/session.h"
#include "base/atomic_file.h"
#include "data/dataset.h"
#include "pipeline/data_parallel.h"
#include "store/safetensors.h"
#include "store/store.h"
#include "train/dataset_memory.h"
#include "train/shards.h"
#include "webir/passes/append_train_step.h"
#include "workplan/mpi/mpi_job.h"
#include "workplan/workplan.h"

namespace scellis::train {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The host-tensor storage is touched only by these helpers.
runtime::HostTensor F32Tensor(std::vector<int64_t> sizes, const std::vector<float>& values) {
  return HostTensor::FromFloats(MakeType(sizes), values);
}

float ScalarOf(const runtime::HostTensor& t) {
  return t.view<float>()[0];
}

std::string BytesOf(const runtime::HostTensor& t) {
  return std::string(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
}

// A checkpoint tensor (F32, checked by the caller) as the host tensor an upload takes.
runtime::HostTensor F32TensorOf(const store::NamedTensor& nt) {
  HostTensor t{MakeType(nt.shape), std::vector<std::byte>(nt.bytes.size())};
  std::memcpy(t.bytes.data(), nt.bytes.data(), nt.bytes.size());
  return t;
}

// How many rows of `logits` (batch × classes) have their largest value (the first, on ties) at
// the row's label.
int64_t CountCorrect(const runtime::HostTensor& logits, const std::vector<float>& labels,
                     int64_t batch) {
  std::span<const float> v = logits.view<float>();
  int64_t classes = static_cast<int64_t>(v.size()) / batch;
  int64_t correct = 0;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (v[b * classes + c] > v[b * classes + best]) best = c;
    correct += best == static_cast<int64_t>(labels[b]);
  }
  return correct;
}

// A non-negative decimal, as checkpoint metadata holds it.
bool ParseCount(const std::string& text, int64_t& out) {
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || v < 0) return false;
  out = v;
  return true;
}

// A carried input (a param or an optimizer moment) and the type it has in the step's plan.
struct StateTensor {
  std::string name;
  TensorType type;
};

// Every carried input: the params and their optimizer moments.
std::vector<StateTensor> StateOf(const api::Session& s) {
  std::vector<StateTensor> state;
  const webir::Graph& g = s.plan().graph();
  for (const webir::Carry& c : g.carries)
    state.push_back({runtime::FeedName(g.at(c.to)), g.at(c.to).type});
  return state;
}

// The safetensors name of a dtype ("F32" for f32).
std::string SafetensorsDtype(DType t) {
  std::string s = DTypeName(t);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string ShapeText(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// The index of the first element that is NaN or infinite, or -1 when all are finite.
int64_t FirstNonFinite(std::span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) return static_cast<int64_t>(i);
  return -1;
}

std::string NonFiniteText(float v) {
  return std::isnan(v) ? "NaN" : (v > 0 ? "+infinity" : "-infinity");
}

// Refuses a state tensor (params, moments) that holds a NaN or an infinity: training from it, or
// keeping it, could only give NaN.
Status CheckFinite(const runtime::HostTensor& t, const std::string& name) {
  std::span<const float> v = t.view<float>();
  int64_t bad = FirstNonFinite(v);
  if (bad < 0) return Status::Ok();
  return RuntimeError("non-finite-state", "the trained state \"" + name + "\" holds " +
                                              NonFiniteText(v[bad]) + " at element " +
                                              std::to_string(bad) + "; training diverged");
}

// The name the plans know a block's input by.
std::string FeedNameOf(const block::Block& b) {
  return b.label.empty() ? b.id : b.label;
}

}  // namespace

double EpochResult::steps_per_second() const {
  return steps / std::max(train_seconds, 1e-9);
}

double TrainResult::seconds_per_epoch() const {
  double total = 0;
  for (const EpochResult& e : epochs) total += e.seconds;
  return epochs.empty() ? 0.0 : total / epochs.size();
}

Json TrainResult::ToJson() const {
  Json j;
  j["backend"] = backend;
  j["executor"] = executor;
  j["fallback_reason"] = fallback_reason ? Json(*fallback_reason) : Json();
  j["steps_per_run"] = steps_per_run;
  j["rank"] = rank;
  j["ranks"] = ranks;
  j["chunks"] = chunks;
  j["shard_record"] = shard_record.empty() ? Json() : Json(shard_record);
  j["adapter"] = adapter.empty() ? Json() : Json(adapter);
  j["batch"] = batch;
  j["dataset_streamed"] = dataset_streamed;
  j["batches"] = batches;
  j["host_batches_reason"] = host_batches_reason ? Json(*host_batches_reason) : Json();
  j["step_seconds"] = Json::object();
  for (const auto& [phase, seconds] : step_seconds) j["step_seconds"][phase] = seconds;
  j["gradient_bytes_per_step"] = gradient_bytes_per_step;
  j["determinism_tier"] = determinism_tier;
  j["epochs"] = Json::array();
  j["test_accuracy"] = Json::array();
  for (const EpochResult& e : epochs) {
    j["epochs"].push_back({{"epoch", e.epoch},
                           {"mean_loss", e.mean_loss},
                           {"test_accuracy", e.test_accuracy},
                           {"seconds", e.seconds},
                           {"train_seconds", e.train_seconds},
                           {"steps", e.steps}});
    j["test_accuracy"].push_back(e.test_accuracy);
  }
  j["seconds_per_epoch"] = seconds_per_epoch();
  return j;
}

Trainer::Trainer(TrainOptions options, TrainEvents events)
    : options_(std::move(options)), events_(std::move(events)) {}

namespace {

// One training run: the sessions, the data and where the run stands.
class Training {
 public:
  Training(const TrainOptions& o, const TrainEvents& e, Trainer::Concern& concern)
      : o_(o), e_(e), concern_(concern) {}

  // Reads the train section, loads both splits and prepares the step and evaluation sessions.
  Status Prepare(std::string_view text) {
    concern_ = Trainer::Concern::kOptions;
    if (o_.ranks < 1 || o_.chunks < 0) return UserError("bad-flag", "", "--ranks takes 1 or more");
    data_parallel_ = o_.ranks > 1 || o_.chunks > 1;
    if (o_.record_shards && !data_parallel_)
      return UserError("bad-flag", "", "--record-shards records a data-parallel step",
                       "add --ranks=N (under mpirun) or --chunks=K");
    if (o_.ranks > 1) {
      SCELLIS_ASSIGN_OR_RETURN(world_,
                               workplan::JoinMpiJob(o_.ranks, o_.collective_timeout_seconds));
    } else {
      world_ = workplan::SingleProcess();
    }
    result_.rank = world_->rank();
    result_.ranks = world_->size();
    text_ = std::string(text);
    // The ranks train one replica in lockstep: rank 0 alone reports (events_ stays silent on the
    // others, so a front end prints each line once).
    device_event_ = e_.device;
    if (result_.rank != 0) {
      TrainEvents silent;
      silent.cancelled = e_.cancelled;
      e_ = std::move(silent);
    }
    concern_ = Trainer::Concern::kDocument;
    pipeline::CompileOptions head_options = o_.compile;
    head_options.up_to = pipeline::Rung::kBlock;
    SCELLIS_ASSIGN_OR_RETURN(head_, pipeline::Compile(text, head_options));
    if (e_.note)
      for (const Diagnostic& d : head_.notes) e_.note(d);
    if (!head_.program->train) {
      return UserError("no-train-section", "", "the document has no \"train\" section",
                       "add \"train\": {\"loss\": ..., \"optimizer\": {...}, \"data\": {...}}");
    }
    const block::Program& prog = *head_.program;
    spec_ = *prog.train;
    if (spec_.dataset < 0) {
      return UserError("missing-field", "/train",
                       "the train section needs \"data\": {\"dataset\", \"images\", \"labels\"}");
    }
    if (spec_.eval_output < 0) {
      return UserError("missing-field", "/train",
                       "the train section needs \"eval_output\", the block scored for accuracy");
    }
    epochs_ = o_.epochs > 0 ? o_.epochs : spec_.epochs;
    if (o_.steps_per_run < 1 || o_.steps_per_run > api::kMaxStepsPerSubmission) {
      concern_ = Trainer::Concern::kOptions;
      return UserError("bad-flag", "", "--steps-per-run takes 1 to 64");
    }
    // The batch dimension is the first dimension of the images input, so it needs one.
    const block::Block& images = prog.blocks[spec_.images];
    if (images.tensor_type.rank() < 1) {
      return UserError(
          "bad-train-section", images.pointer,
          "the images input \"" + images.id + "\" is a scalar; it needs a batch dimension first",
          "give it a shape such as [\"B\", 784]");
    }
    const std::string source = prog.blocks[spec_.dataset].params["source"].get<std::string>();
    // Measured from the files' headers; decoded (or opened for streaming) once the plan says how.
    SCELLIS_ASSIGN_OR_RETURN(std::optional<HeldDataset> measured, DatasetHeld(prog));
    if (!measured) return InternalError("train", "the dataset block names no source");
    dataset_ = std::move(*measured);
    SCELLIS_TRY(CheckStepsWillRun());
    SCELLIS_TRY(CheckOutputsSpareTheDataset(source));
    const std::string batch_dim = images.tensor_type.dims[0].symbol;
    pipeline::CompileOptions step_options = o_.compile;
    if (!batch_dim.empty()) step_options.lower.bind[batch_dim] = spec_.batch;
    pipeline::CompileOptions eval_options = step_options;
    eval_options.lower.mode = block::LowerMode::kForward;
    if (!batch_dim.empty()) eval_options.lower.bind[batch_dim] = spec_.eval_batch;
    // What the host holds beside the plan's values: for the step, as PlanStep or PrepareHalves
    // plans it.
    eval_options.plan.caller_host_bytes = BatchHostBytes(1, spec_.eval_batch);
    eval_options.plan.caller_host_what = "the evaluation batch gathered";

    concern_ = Trainer::Concern::kOptions;
    SCELLIS_ASSIGN_OR_RETURN(runtime::Selection step_backend, runtime::SelectBackend(o_.select));
    SCELLIS_ASSIGN_OR_RETURN(runtime::Selection eval_backend, runtime::SelectBackend(o_.select));
    result_.backend = step_backend.backend;
    result_.fallback_reason = step_backend.fallback_reason;
    result_.profile = step_backend.profile.key;
    result_.adapter = step_backend.profile.adapter;
    result_.batch = spec_.batch;
    if (device_event_ && !result_.adapter.empty()) device_event_(result_.rank, result_.adapter);
    result_.content_id = head_.doc.content_id;
    result_.dataset = source;
    result_.steps_per_run = o_.steps_per_run;
    if (e_.backend) e_.backend(result_.backend, result_.fallback_reason);

    concern_ = Trainer::Concern::kDocument;
    // The dataset is held or streamed as the step's plan (a data-parallel rank's) chooses, before
    // anything is decoded or allocated.
    if (data_parallel_) {
      SCELLIS_TRY(PrepareHalves(text, step_options, std::move(step_backend)));
      SCELLIS_TRY(LoadSplits(source));
    } else {
      step_options.plan.limits = step_backend.limits;
      SCELLIS_ASSIGN_OR_RETURN(StepPlan planned, PlanStep(text, step_options, dataset_,
                                                          {.batch = spec_.batch,
                                                           .steps_per_run = o_.steps_per_run,
                                                           .stream_dataset = o_.stream_dataset,
                                                           .host_batches = o_.host_batches,
                                                           .gpu = step_backend.backend != "cpu"}));
      const execplan::Plan& plan = *planned.compiled.plan;
      if (plan.verdict == execplan::Verdict::kRed) return Status(plan.findings);
      for (const Diagnostic& d : plan.findings)
        if (d.code == "streamed-dataset" && e_.note) e_.note(d);
      streamed_ = planned.streamed;
      batches_on_device_ = planned.batches_on_device;
      if (batches_on_device_) result_.batches = "device";
      if (!planned.host_batches_reason.empty())
        result_.host_batches_reason = planned.host_batches_reason;
      step_options = std::move(planned.options);
      SCELLIS_TRY(LoadSplits(source));
      runtime::Feeds tables;
      if (batches_on_device_) {
        const block::Program& p = *head_.program;
        tables[webir::DatasetTableName(FeedNameOf(p.blocks[spec_.images]))] =
            F32Tensor({train_.count(), train_.features()}, train_.held.images);
        tables[webir::DatasetTableName(FeedNameOf(p.blocks[spec_.labels]))] =
            F32Tensor({train_.count()}, train_.held.labels);
      }
      SCELLIS_ASSIGN_OR_RETURN(
          step_, api::Session::Prepare(text, step_options, std::move(step_backend), tables));
    }
    result_.dataset_streamed = streamed_;
    SCELLIS_ASSIGN_OR_RETURN(eval_,
                             api::Session::Prepare(text, eval_options, std::move(eval_backend)));
    result_.executor = state().executor();
    result_.determinism_tier = policy::TierName(state().plan().graph().tier);
    result_.plan_hash = workplan::PlanHash(state().plan());
    result_.tolerance = policy::ToleranceName(state().plan().graph().tolerance);
    result_.atol = state().plan().thresholds.atol;
    result_.rtol = state().plan().thresholds.rtol;
    state_ = StateOf(state());
    SCELLIS_TRY(CheckLabels());
    images_feed_ = FeedNameOf(prog.blocks[spec_.images]);
    labels_feed_ = FeedNameOf(prog.blocks[spec_.labels]);
    for (int p : spec_.params) param_names_.push_back(FeedNameOf(prog.blocks[p]));
    for (const webir::Node& n : eval_->plan().graph().nodes)
      eval_reads_step_ |= n.role == webir::Role::kInput && n.label == webir::kStepInput;
    return Status::Ok();
  }

  // The session holding the trained state: the whole step's, or the update half's.
  api::Session& state() { return data_parallel_ ? *update_ : *step_; }

  // Data parallelism: the step's two halves as sessions, planned as PlanDataParallelStep plans
  // them, and the WorkPlan of their plans that shares the batch among the ranks (refused when red).
  Status PrepareHalves(std::string_view text, pipeline::CompileOptions step_options,
                       runtime::Selection gradients_backend) {
    step_options.plan.limits = gradients_backend.limits;
    SCELLIS_ASSIGN_OR_RETURN(DataParallelPlan planned,
                             PlanDataParallelStep(text, step_options, dataset_,
                                                  {.batch = spec_.batch,
                                                   .ranks = o_.ranks,
                                                   .chunks = o_.chunks,
                                                   .stream_dataset = o_.stream_dataset}));
    streamed_ = planned.streamed;
    for (const Diagnostic& d : planned.notes)
      if (e_.note) e_.note(d);
    // Both halves on one device: the update half's params are copied into the gradient half's
    // there after each update, so the weights never leave it; only the gradients do.
    SCELLIS_ASSIGN_OR_RETURN(
        update_, api::Session::Prepare(text, planned.halves.update, std::move(gradients_backend)));
    SCELLIS_ASSIGN_OR_RETURN(gradients_,
                             api::Session::PrepareBeside(text, planned.halves.gradients, *update_));
    SCELLIS_ASSIGN_OR_RETURN(
        work_,
        workplan::FromExecPlans(std::make_shared<execplan::Plan>(gradients_->plan()),
                                std::make_shared<execplan::Plan>(update_->plan()),
                                workplan::DeviceSet::Uniform(o_.ranks, update_->plan().limits),
                                spec_.batch, {.chunks = planned.work.plan.chunks}));
    SCELLIS_TRY(workplan::Verify(work_));
    if (work_.verdict == execplan::Verdict::kRed) {
      std::vector<Diagnostic> why = work_.findings;
      for (const workplan::RankMemory& m : work_.memory)
        for (const Diagnostic& d : m.findings)
          if (d.severity == Severity::kError) why.push_back(d);
      return Status(std::move(why));
    }
    result_.chunks = work_.chunks;
    return Status::Ok();
  }

  // Host bytes of `copies` gathered batches (images and labels, f32) of `batch` examples.
  int64_t BatchHostBytes(int64_t copies, int64_t batch) const {
    return execplan::SaturatingMul(copies, dataset_.BatchBytes(batch));
  }

  // Both splits, decoded whole or opened for streaming as the plan chose.
  Status LoadSplits(const std::string& source) {
    if (streamed_) {
      // A gzipped file is inflated into the store on first use: rank 0 makes the copies, and the
      // other ranks open them once it has (two writers of one store path would race).
      const bool first = world_->rank() == 0;
      if (first) SCELLIS_TRY(OpenStreamedSplits(source));
      if (world_->size() > 1) {
        const float ready = 1;
        SCELLIS_ASSIGN_OR_RETURN(
            std::vector<float> unused,
            world_->AllGather({&ready, 1}, std::vector<int64_t>(world_->size(), 1)));
      }
      if (!first) SCELLIS_TRY(OpenStreamedSplits(source));
      return Status::Ok();
    }
    SCELLIS_ASSIGN_OR_RETURN(train_.held, data::LoadDataset(source, "train"));
    SCELLIS_ASSIGN_OR_RETURN(test_.held, data::LoadDataset(source, "test"));
    return Status::Ok();
  }

  Status OpenStreamedSplits(const std::string& source) {
    SCELLIS_ASSIGN_OR_RETURN(train_.streamed, OpenStreamedSplit(source, "train", o_.store_root));
    SCELLIS_ASSIGN_OR_RETURN(test_.streamed, OpenStreamedSplit(source, "test", o_.store_root));
    return Status::Ok();
  }

  // Restores a checkpoint: it continues only the document that wrote it and holds exactly its
  // whole state, every tensor with the shape and dtype this run gives it and only finite values.
  Status Resume(const std::string& path) {
    concern_ = Trainer::Concern::kResume;
    std::map<std::string, std::string> meta;
    SCELLIS_ASSIGN_OR_RETURN(std::vector<store::NamedTensor> tensors,
                             store::LoadSafetensors(path, &meta));
    const std::string& content_id = head_.doc.content_id;
    if (meta["content_id"] != content_id) {
      return UserError("checkpoint-mismatch", "",
                       "the checkpoint was written by document " + meta["content_id"] +
                           ", not by this one (" + content_id + ")",
                       "resume with the document that wrote it");
    }
    int64_t epoch = 0;
    if (!ParseCount(meta["epoch"], epoch) || !ParseCount(meta["step"], global_step_) ||
        epoch > epochs_) {
      return UserError("bad-checkpoint", "",
                       "the checkpoint's epoch or step (" + meta["epoch"] + ", " + meta["step"] +
                           ") does not describe a point of this training run (" +
                           std::to_string(epochs_) + " epochs)");
    }
    SCELLIS_TRY(CheckCheckpointTensors(tensors));
    for (const store::NamedTensor& nt : tensors)
      SCELLIS_TRY(state().Upload(nt.name, F32TensorOf(nt)));
    start_epoch_ = static_cast<int>(epoch);
    if (e_.resumed) e_.resumed(start_epoch_, global_step_);
    return Status::Ok();
  }

  // Every tensor of the run's state is held once, with its shape and dtype, and finite.
  Status CheckCheckpointTensors(const std::vector<store::NamedTensor>& tensors) const {
    std::map<std::string, const store::NamedTensor*> held;
    for (const store::NamedTensor& nt : tensors) held[nt.name] = &nt;
    std::vector<Diagnostic> errors;
    for (const StateTensor& want : state_) {
      auto it = held.find(want.name);
      if (it == held.end()) {
        errors.push_back(UserError(
            "bad-checkpoint", "/" + want.name,
            "the checkpoint has no tensor \"" + want.name + "\", part of this run's state"));
        continue;
      }
      const store::NamedTensor& nt = *it->second;
      held.erase(it);
      const std::string dtype = SafetensorsDtype(want.type.dtype);
      const std::vector<int64_t> shape = want.type.sizes();
      if (nt.dtype != dtype || nt.shape != shape) {
        errors.push_back(UserError("bad-checkpoint", "/" + nt.name,
                                   "the tensor \"" + nt.name + "\" is " + nt.dtype + " " +
                                       ShapeText(nt.shape) + ", expected " + dtype + " " +
                                       ShapeText(shape)));
        continue;
      }
      // Only F32 state exists; the bytes were sized against the shape by the reader.
      std::vector<float> values(nt.bytes.size() / sizeof(float));
      std::memcpy(values.data(), nt.bytes.data(), values.size() * sizeof(float));
      if (int64_t bad = FirstNonFinite(values); bad >= 0) {
        errors.push_back(UserError("bad-checkpoint", "/" + nt.name,
                                   "the tensor \"" + nt.name + "\" holds " +
                                       NonFiniteText(values[bad]) + " at element " +
                                       std::to_string(bad),
                                   "a checkpoint of a diverged run cannot be resumed"));
      }
    }
    for (const auto& [name, unused] : held) {
      errors.push_back(UserError(
          "bad-checkpoint", "/" + name,
          "the checkpoint holds a tensor \"" + name + "\" that is not part of this run's state"));
    }
    return Status(std::move(errors));
  }

  // Writes the whole state (params and optimizer moments) as safetensors, atomically.
  Status SaveState(const std::string& path, int epoch) {
    std::vector<store::NamedTensor> tensors;
    for (const StateTensor& s : state_) {
      SCELLIS_ASSIGN_OR_RETURN(runtime::HostTensor v, state().Download(s.name));
      SCELLIS_TRY(CheckFinite(v, s.name));
      tensors.push_back({s.name, SafetensorsDtype(v.type.dtype), v.type.sizes(), BytesOf(v)});
    }
    return store::SaveSafetensors(path, tensors,
                                  {{"epoch", std::to_string(epoch)},
                                   {"step", std::to_string(global_step_)},
                                   {"content_id", head_.doc.content_id}});
  }

  workplan::Collective* world() const { return world_.get(); }

  Result<TrainResult> Run() {
    if (!o_.resume.empty()) SCELLIS_TRY(Resume(o_.resume));
    // Every rank holds the same state; rank 0 alone writes it.
    const bool writer = world_->rank() == 0;
    if (!o_.init_out.empty() && writer) {
      concern_ = Trainer::Concern::kInitOut;
      SCELLIS_TRY(SaveState(o_.init_out, start_epoch_));
    }
    int64_t steps_per_epoch = train_.count() / spec_.batch;
    if (o_.max_steps > 0) steps_per_epoch = std::min(steps_per_epoch, o_.max_steps);
    for (int epoch = start_epoch_; epoch < epochs_; ++epoch) {
      concern_ = Trainer::Concern::kDocument;
      EpochResult e;
      e.epoch = epoch + 1;
      e.epochs = epochs_;
      e.steps = steps_per_epoch;
      auto start = Clock::now();
      SCELLIS_ASSIGN_OR_RETURN(double loss_sum, data_parallel_
                                                    ? TrainEpochSharded(epoch, steps_per_epoch)
                                                    : TrainEpoch(epoch, steps_per_epoch));
      e.train_seconds = Seconds(start, Clock::now());
      e.mean_loss = loss_sum / std::max<int64_t>(steps_per_epoch, 1);
      if (writer) SCELLIS_TRY(Evaluate(e));  // the replicas are equal: one rank scores them
      e.seconds = Seconds(start, Clock::now());
      result_.epochs.push_back(e);
      if (e_.epoch) e_.epoch(e);
      if (!o_.checkpoint.empty() && writer) {
        concern_ = Trainer::Concern::kCheckpoint;
        SCELLIS_TRY(SaveState(o_.checkpoint, epoch + 1));
      }
    }
    result_.step_seconds = phases_.seconds;
    if (!o_.losses_out.empty() && writer) {
      concern_ = Trainer::Concern::kLossesOut;
      SCELLIS_TRY(WriteFileAtomic(o_.losses_out, Json(result_.losses).dump() + "\n"));
    }
    return std::move(result_);
  }

 private:
  // The checkpoint, initial state and losses files must not overwrite the dataset being read
  // (the command line cannot check this: only the trainer knows the dataset's files).
  Status CheckOutputsSpareTheDataset(const std::string& source) const {
    for (const char* split : {"train", "test"}) {
      SCELLIS_ASSIGN_OR_RETURN(auto files, data::DatasetFiles(source, split));
      for (const std::string* out : {&o_.checkpoint, &o_.init_out, &o_.losses_out}) {
        if (out->empty()) continue;
        for (const std::string& file : {files.first, files.second})
          if (SameFile(*out, file)) {
            return UserError("bad-output-path", "",
                             "the output '" + *out + "' is the dataset file '" + file + "'",
                             "write outputs elsewhere; the dataset is read, never written");
          }
      }
    }
    return Status::Ok();
  }

  // A run that would train for no step, or score no example, is refused before anything runs:
  // it would otherwise report success with nothing done.
  Status CheckStepsWillRun() const {
    const std::string pointer = head_.program->blocks[spec_.dataset].pointer;
    const int64_t train_count = dataset_.train.examples, test_count = dataset_.test.examples;
    if (train_count == 0) {
      return UserError("empty-training", pointer,
                       "the train split of \"" + dataset_.source + ":train\" holds no examples");
    }
    if (spec_.batch > train_count) {
      return UserError("empty-training", spec_.pointer + "/batch",
                       "the batch of " + std::to_string(spec_.batch) +
                           " is larger than the train split's " + std::to_string(train_count) +
                           " examples: no step would run",
                       "use a batch of at most " + std::to_string(train_count));
    }
    if (spec_.eval_batch > test_count) {
      return UserError("empty-training", spec_.pointer + "/eval_batch",
                       "the eval_batch of " + std::to_string(spec_.eval_batch) +
                           " is larger than the test split's " + std::to_string(test_count) +
                           " examples: nothing would be scored",
                       "use an eval_batch of at most " + std::to_string(test_count));
    }
    return Status::Ok();
  }

  // Every label of both splits names one of the classes of the scored output.
  Status CheckLabels() const {
    const webir::Graph& g = eval_->plan().graph();
    const std::string output = head_.program->blocks[spec_.eval_output].id;
    for (const webir::Output& o : g.outputs) {
      if (o.name != output) continue;
      const std::vector<int64_t> sizes = g.at(o.node).type.sizes();
      if (sizes.empty()) return Status::Ok();  // a scalar scores nothing; validate's concern
      const std::string pointer = head_.program->blocks[spec_.dataset].pointer;
      SCELLIS_TRY(train_.CheckLabels(sizes.back(), pointer));
      return test_.CheckLabels(sizes.back(), pointer);
    }
    return Status::Ok();
  }

  // One epoch of training steps, `steps_per_run` to a submission; returns the sum of the losses.
  // Two runs are in flight (api::Session::Start): the next run's batches are gathered and its
  // steps recorded while the device runs the one before, and the losses come back in order.
  Result<double> TrainEpoch(int epoch, int64_t steps) {
    auto start = Clock::now();
    std::vector<int64_t> order = data::EpochOrder(train_.count(), spec_.shuffle_seed, epoch);
    const int64_t first_step = global_step_;
    double loss_sum = 0;
    int64_t started = 0;  // steps of this epoch started; those finished are `step`
    std::deque<int64_t> run_steps;
    auto start_run = [&]() -> Status {
      const int64_t k = std::min<int64_t>(o_.steps_per_run, steps - started);
      std::vector<runtime::Feeds> feeds(static_cast<size_t>(k));
      for (int64_t i = 0; i < k; ++i) {
        const int64_t first = (started + i) * spec_.batch;
        if (batches_on_device_) {
          // The batch's rows in the split, gathered on the device.
          HostTensor rows = HostTensor::Zeros(MakeType({spec_.batch}, DType::kI32));
          std::span<int32_t> r = rows.view<int32_t>();
          for (int64_t j = 0; j < spec_.batch; ++j) r[j] = static_cast<int32_t>(order[first + j]);
          feeds[i][webir::kBatchIndexInput] = std::move(rows);
        } else {
          SCELLIS_TRY(train_.Gather(order, first, spec_.batch, img_, lab_));
          feeds[i][images_feed_] = F32Tensor({spec_.batch, train_.features()}, img_);
          feeds[i][labels_feed_] = F32Tensor({spec_.batch}, lab_);
        }
        feeds[i][webir::kStepInput] =
            F32Tensor({}, {static_cast<float>(first_step + started + i + 1)});
      }
      auto run_start = Clock::now();
      SCELLIS_TRY(step_->Start(feeds, {webir::kLossOutput}));
      phases_.Add("steps", run_start);
      run_steps.push_back(k);
      started += k;
      return Status::Ok();
    };
    for (int64_t step = 0; step < steps;) {
      while (started < steps && step_->runs_in_flight() < runtime::kMaxRunsInFlight)
        SCELLIS_TRY(start_run());
      auto finish_start = Clock::now();
      SCELLIS_ASSIGN_OR_RETURN(runtime::StepsResult r, step_->Finish());
      phases_.Add("steps", finish_start);
      float last = 0;
      for (const runtime::HostTensor& l : r.watched[0].second) {
        last = ScalarOf(l);
        loss_sum += last;
        result_.losses.push_back(last);
      }
      const int64_t k = run_steps.front();
      run_steps.pop_front();
      step += k;
      global_step_ += k;
      if (e_.progress) {
        double elapsed = Seconds(start, Clock::now());
        e_.progress({.epoch = epoch + 1,
                     .epochs = epochs_,
                     .step = step,
                     .total = steps,
                     .loss = last,
                     .steps_per_second = elapsed > 0 ? step / elapsed : 0});
      }
      if (e_.cancelled && e_.cancelled()) {
        // The run started behind this one is waited for and dropped: nothing is kept of it.
        while (step_->runs_in_flight() > 0) (void)step_->Finish();
        return UserError("cancelled", "",
                         "training was cancelled after " + std::to_string(global_step_) + " steps");
      }
    }
    return loss_sum;
  }

  // One epoch of data-parallel steps: per step, this rank's chunks through the gradient half, the
  // WorkPlan's reduction (local partials, the all-gather, the tree above them) and the update
  // half with the batch's gradient. Returns the sum of the losses.
  Result<double> TrainEpochSharded(int epoch, int64_t steps) {
    auto start = Clock::now();
    std::vector<int64_t> order = data::EpochOrder(train_.count(), spec_.shuffle_seed, epoch);
    const std::vector<int64_t> counts = workplan::GatherCounts(work_);
    double loss_sum = 0;
    for (int64_t step = 0; step < steps; ++step) {
      auto t = Clock::now();
      // The weights as the last update left them (or a checkpoint restored them), on the device.
      SCELLIS_TRY(gradients_->CopyFrom(*update_, param_names_));
      t = phases_.Add("weights_copy", t);
      ShardInputs in{.train = &train_,
                     .order = &order,
                     .batch_start = step * spec_.batch,
                     .images_feed = images_feed_,
                     .labels_feed = labels_feed_};
      SCELLIS_ASSIGN_OR_RETURN(std::vector<std::vector<float>> chunk_values,
                               ShardGradients(*gradients_, work_, world_->rank(), in));
      t = phases_.Add("gradients", t);
      std::vector<float> partials = workplan::ReduceLocal(work_, world_->rank(), chunk_values);
      result_.gradient_bytes_per_step = static_cast<int64_t>(
          (chunk_values.empty() ? 0 : chunk_values.size() * chunk_values[0].size()) *
          sizeof(float));
      t = phases_.Add("reduce_local", t);
      SCELLIS_ASSIGN_OR_RETURN(std::vector<float> gathered, world_->AllGather(partials, counts));
      t = phases_.Add("all_gather", t);
      // The run's last step is recorded, by rank 0, which holds every rank's partials now.
      if (o_.record_shards && world_->rank() == 0 && epoch + 1 == epochs_ && step + 1 == steps) {
        // The weights the gradients were taken at: the update half's, not yet updated.
        runtime::Feeds weights;
        for (const std::string& p : param_names_) {
          SCELLIS_ASSIGN_OR_RETURN(weights[p], update_->Download(p));
        }
        SCELLIS_TRY(RecordShards(epoch, step * spec_.batch, weights, gathered));
      }
      t = Clock::now();
      std::vector<float> sum = workplan::Combine(work_, gathered);
      t = phases_.Add("combine", t);
      runtime::Feeds apply;
      size_t offset = 0;
      for (const std::string& p : work_.params) {
        const webir::Graph& ug = update_->plan().graph();
        const std::string name = webir::GradName(p);
        TensorType type;
        for (const webir::Node& n : ug.nodes)
          if (n.name == name) type = n.type;
        const size_t count = static_cast<size_t>(type.elements());
        apply[name] = HostTensor::FromFloats(
            type, std::vector<float>(sum.begin() + offset, sum.begin() + offset + count));
        offset += count;
      }
      apply[webir::kStepInput] = F32Tensor({}, {static_cast<float>(global_step_ + 1)});
      SCELLIS_ASSIGN_OR_RETURN(runtime::StepsResult unused, update_->Run({apply}, {}));
      phases_.Add("update", t);
      const float loss = sum.back();
      loss_sum += loss;
      result_.losses.push_back(loss);
      ++global_step_;
      if (e_.progress) {
        double elapsed = Seconds(start, Clock::now());
        e_.progress({.epoch = epoch + 1,
                     .epochs = epochs_,
                     .step = step + 1,
                     .total = steps,
                     .loss = loss,
                     .steps_per_second = elapsed > 0 ? (step + 1) / elapsed : 0});
      }
      if (e_.cancelled && e_.cancelled())
        return UserError("cancelled", "",
                         "training was cancelled after " + std::to_string(global_step_) + " steps");
    }
    return loss_sum;
  }

  // The record of one step's shards (train/shards.h), filed in the store; its id is the result's
  // shard_record.
  Status RecordShards(int epoch, int64_t batch_start, const runtime::Feeds& weights,
                      const std::vector<float>& gathered) {
    SCELLIS_ASSIGN_OR_RETURN(store::Store st, store::Store::Open(o_.store_root));
    SCELLIS_ASSIGN_OR_RETURN(std::string document, st.PutBlob(text_));
    std::vector<store::NamedTensor> tensors;
    for (const auto& [name, t] : weights)
      tensors.push_back({name, SafetensorsDtype(t.type.dtype), t.type.sizes(), BytesOf(t)});
    SCELLIS_ASSIGN_OR_RETURN(std::string weights_id,
                             st.PutBlob(store::EncodeSafetensors(tensors, {})));
    Json shards = Json::array();
    for (const workplan::Shard& s : work_.shards)
      shards.push_back({{"rank", s.rank},
                        {"first_chunk", s.first_chunk},
                        {"chunks", s.chunks},
                        {"partials", Json::array()}});
    const size_t width = static_cast<size_t>(work_.gradient_elements);
    for (size_t i = 0; i < work_.partials.size(); ++i) {
      const workplan::Partial& p = work_.partials[i];
      std::string bytes(reinterpret_cast<const char*>(gathered.data() + i * width),
                        width * sizeof(float));
      SCELLIS_ASSIGN_OR_RETURN(std::string id, st.PutBlob(bytes));
      shards[p.rank]["partials"].push_back({{"lo", p.span.lo}, {"hi", p.span.hi}, {"values", id}});
    }
    Json rec = {{"kind", "scellis.shard_run/1"},
                {"document", document},
                {"content_id", head_.doc.content_id},
                {"backend", result_.backend},
                {"ranks", work_.ranks()},
                {"chunks", work_.chunks},
                {"batch", work_.batch},
                {"gradients_plan", work_.gradients_hash},
                {"update_plan", work_.update_hash},
                {"dataset", head_.program->blocks[spec_.dataset].params["source"]},
                {"shuffle_seed", spec_.shuffle_seed},
                {"epoch", epoch},
                {"batch_start", batch_start},
                {"global_step", global_step_ + 1},
                {"weights", weights_id},
                {"shards", shards}};
    SCELLIS_ASSIGN_OR_RETURN(result_.shard_record, st.Put(rec));
    return Status::Ok();
  }

  // The trained weights fed into the forward plan, over every whole test batch.
  Status Evaluate(EpochResult& e) {
    std::map<std::string, runtime::HostTensor> weights;
    for (const std::string& p : param_names_) {
      SCELLIS_ASSIGN_OR_RETURN(weights[p], state().Download(p));
      SCELLIS_TRY(CheckFinite(weights[p], p));
    }
    std::vector<int64_t> identity(static_cast<size_t>(test_.count()));
    for (int64_t i = 0; i < test_.count(); ++i) identity[i] = i;
    const std::string output = head_.program->blocks[spec_.eval_output].id;
    int64_t correct = 0, seen = 0;
    for (int64_t first = 0; first + spec_.eval_batch <= test_.count(); first += spec_.eval_batch) {
      SCELLIS_TRY(test_.Gather(identity, first, spec_.eval_batch, img_, lab_));
      runtime::Feeds feed(weights.begin(), weights.end());
      feed[images_feed_] = F32Tensor({spec_.eval_batch, test_.features()}, img_);
      feed[labels_feed_] = F32Tensor({spec_.eval_batch}, lab_);
      // The document's step input, read by the forward (uniform; dropout is the identity in
      // evaluation): the number of the last step trained.
      if (eval_reads_step_)
        feed[webir::kStepInput] = F32Tensor({}, {static_cast<float>(global_step_)});
      SCELLIS_ASSIGN_OR_RETURN(runtime::StepsResult r, eval_->Run({feed}, {output}));
      correct += CountCorrect(r.watched[0].second[0], lab_, spec_.eval_batch);
      seen += spec_.eval_batch;
    }
    e.examples = seen;
    e.test_accuracy = seen ? static_cast<double>(correct) / seen : 0;
    return Status::Ok();
  }

  const TrainOptions& o_;
  TrainEvents e_;
  std::function<void(int, const std::string&)> device_event_;  // on every rank
  Trainer::Concern& concern_;

  pipeline::Compiled head_;  // the document at the block rung: the train section
  block::TrainSpec spec_;
  int epochs_ = 0;
  HeldDataset dataset_;             // measured from the files' headers
  bool streamed_ = false;           // read batch by batch rather than held whole
  bool batches_on_device_ = false;  // gathered from the train split held there (PlanStep)
  data::SplitReader train_, test_;
  std::unique_ptr<api::Session> step_, eval_;
  // Data parallelism: the step's halves, the WorkPlan and the job's ranks (one when alone).
  bool data_parallel_ = false;
  // The gradient half runs on the update half's executor: declared after it, so destroyed first.
  std::unique_ptr<api::Session> update_, gradients_;
  workplan::WorkPlan work_;
  std::unique_ptr<workplan::Collective> world_;
  std::string text_;                // the document, for a shard record
  std::vector<StateTensor> state_;  // carried inputs: what a checkpoint holds
  std::string images_feed_, labels_feed_;
  bool eval_reads_step_ = false;  // the document has a step input (IsStepInput in block lowering)
  std::vector<std::string> param_names_;
  int start_epoch_ = 0;
  int64_t global_step_ = 0;
  std::vector<float> img_, lab_;  // the batch being gathered
  // Seconds per phase of the training steps, in the order first seen (TrainResult::step_seconds).
  struct Phases {
    std::vector<std::pair<std::string, double>> seconds;
    // Adds the time since `since` to `phase`; returns now, the next phase's start.
    Clock::time_point Add(const std::string& phase, Clock::time_point since) {
      const Clock::time_point now = Clock::now();
      auto it = std::find_if(seconds.begin(), seconds.end(),
                             [&](const auto& p) { return p.first == phase; });
      if (it == seconds.end()) it = seconds.insert(seconds.end(), {phase, 0.0});
      it->second += Seconds(since, now);
      return now;
    }
  } phases_;
  TrainResult result_;
};

}  // namespace

Result<TrainResult> Trainer::Train(std::string_view text) {
  Training t(options_, events_, concern_);
  Status prepared = t.Prepare(text);
  Result<TrainResult> r = prepared.ok() ? t.Run() : Result<TrainResult>(prepared);
  // Other ranks may be waiting for this one in a collective: stop them all with the cause.
  if (!r.ok() && t.world() && t.world()->size() > 1) t.world()->Abort(r.errors().front());
  return r;
}

std::optional<Diagnostic> DatasetFromFiles(const doc::Document& document) {
  for (const doc::Node& n : document.nodes) {
    if (n.op != "dataset") continue;
    auto s = n.params.find("source");
    if (s == n.params.end() || !s->is_string() || s->get<std::string>().rfind("idx:", 0) != 0)
      continue;
    Diagnostic d = UserError(
        "dataset-path-refused", PointerJoin(PointerJoin(n.pointer, "params"), "source"),
        "a server reads no files a request names; this dataset source is a pair of "
        "files",
        "use a named dataset (\"fashion-mnist\"), or train on files with `scellis train`");
    d.where = n.Describe();
    return d;
  }
  return std::nullopt;
}

}  // namespace scellis::train
