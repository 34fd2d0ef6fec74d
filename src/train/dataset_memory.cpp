#include "train/dataset_memory.h"

#include <algorithm>
#include <fstream>

#include "api/fit_batch.h"
#include "base/sha256.h"
#include "execplan/plan.h"
#include "runtime/executor.h"
#include "store/store.h"
#include "webir/passes/append_train_step.h"

namespace scellis::train {

int64_t HeldDataset::BatchBytes(int64_t batch) const {
  using execplan::SaturatingMul;
  return SaturatingMul(batch, SaturatingMul(train.features + 1, 4));
}

execplan::HostDataset HeldDataset::Held() const {
  execplan::HostDataset h;
  h.source = source;
  h.train_examples = train.examples;
  h.test_examples = test.examples;
  h.features = train.features;
  h.whole_bytes = bytes;
  h.eval_examples = eval_batch;
  h.example_bytes = BatchBytes(1);
  return h;
}

execplan::HostDataset HeldDataset::Streamed(const std::string& batch_dim, int64_t batch,
                                            int64_t batches) const {
  execplan::HostDataset h = Held();
  h.streamed = true;
  h.batch_dim = batch_dim;
  h.batch = batch;
  h.batches = batches;
  return h;
}

Result<std::optional<HeldDataset>> DatasetHeld(const block::Program& p) {
  if (!p.train || p.train->dataset < 0) return std::optional<HeldDataset>();
  const Json& source = p.blocks[p.train->dataset].params["source"];
  if (!source.is_string()) return std::optional<HeldDataset>();
  HeldDataset d;
  d.source = source.get<std::string>();
  SCELLIS_ASSIGN_OR_RETURN(d.train, data::MeasureDataset(d.source, "train"));
  SCELLIS_ASSIGN_OR_RETURN(d.test, data::MeasureDataset(d.source, "test"));
  // No more than the test split holds is gathered (the trainer refuses a larger eval_batch).
  d.eval_batch = std::min(p.train->eval_batch, d.test.examples);
  // What LoadDataset keeps per split: count x features image values and count labels, as f32.
  for (const data::DatasetShape& s : {d.train, d.test})
    d.bytes += int64_t{4} * (s.examples * s.features + s.examples);
  return std::optional<HeldDataset>(std::move(d));
}

namespace {

bool RedForMemoryAlone(const execplan::Plan& p) {
  bool memory = false, other = false;
  for (const Diagnostic& d : p.findings) {
    if (d.severity != Severity::kError) continue;
    (d.code.rfind("memory-over-", 0) == 0 ? memory : other) = true;
  }
  return p.verdict == execplan::Verdict::kRed && memory && !other;
}

}  // namespace

Result<DatasetPlan> PlanWithDataset(std::string_view text, const pipeline::CompileOptions& options,
                                    const HeldDataset& d, int64_t batches, DatasetMode mode,
                                    const std::string& streamed_why) {
  pipeline::CompileOptions o = options;
  o.up_to = pipeline::Rung::kExecplan;
  o.print_after.clear();
  DatasetPlan out;
  int64_t whole_allocated = 0;
  if (mode == DatasetMode::kAuto) {
    o.plan.dataset = d.Held();
    SCELLIS_ASSIGN_OR_RETURN(out.compiled, pipeline::Compile(text, o));
    if (!RedForMemoryAlone(*out.compiled.plan)) {
      (void)api::ExplainRedPlan(text, o, out.compiled);
      return out;
    }
    whole_allocated = out.compiled.plan->memory.allocated;
  }
  // The batch the step is planned at: the bound size of a symbolic batch, or the fixed one.
  SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled probe, [&]() -> Result<pipeline::Compiled> {
    if (out.compiled.program) return std::move(out.compiled);
    pipeline::CompileOptions block = o;
    block.up_to = pipeline::Rung::kBlock;
    return pipeline::Compile(text, block);
  }());
  const block::Program& prog = *probe.program;
  const TensorType& images = prog.blocks[prog.train->images].tensor_type;
  const std::string dim = api::BatchDimension(prog).value_or("");
  const int64_t batch = images.rank() >= 1 ? images.dims[0].size : 0;
  o.plan.dataset = d.Streamed(dim, batch, batches);
  // The batches a caller stages for a submission are then the streamed set's own: counted once,
  // as the dataset class.
  o.plan.caller_host_bytes = 0;
  out.streamed = true;
  SCELLIS_ASSIGN_OR_RETURN(out.compiled, pipeline::Compile(text, o));
  execplan::Plan& plan = *out.compiled.plan;
  if (plan.verdict == execplan::Verdict::kRed) {
    // Red even streamed: the largest batch that fits is searched with the set streamed.
    (void)api::ExplainRedPlan(text, o, out.compiled);
    for (Diagnostic& f : plan.findings)
      if (f.severity == Severity::kError && f.code.rfind("memory-over-", 0) == 0)
        f.help += " (planned with the dataset streamed from its files, " +
                  execplan::FormatBytes(plan.dataset_bytes) + " held instead of " +
                  execplan::FormatBytes(d.bytes) + ")";
    return out;
  }
  std::string why =
      streamed_why.empty() ? "streaming was asked for: --stream-dataset" : streamed_why;
  if (mode == DatasetMode::kAuto) {
    why = "held whole the plan would need " + execplan::FormatBytes(whole_allocated) +
          (execplan::DatasetInBudget(plan)
               ? ", over the budget of " + execplan::FormatBytes(plan.memory.budget)
               : ", over what the host has");
  }
  const std::string pointer = prog.blocks[prog.train->dataset].pointer;
  if (plan.verdict == execplan::Verdict::kGreen) plan.verdict = execplan::Verdict::kYellow;
  plan.findings.insert(plan.findings.begin(),
                       Warning("streamed-dataset", pointer,
                               "the dataset is read from its files batch by batch: " +
                                   execplan::FormatBytes(plan.dataset_bytes) + " held instead of " +
                                   execplan::FormatBytes(d.bytes) + " (" + why + ")",
                               "a larger budget holds it whole"));
  return out;
}

Result<StepPlan> PlanStep(std::string_view text, const pipeline::CompileOptions& options,
                          const HeldDataset& d, const StepPlanChoices& choices) {
  using execplan::SaturatingMul;
  StepPlan out;
  out.options = options;
  execplan::PlanOptions& plan = out.options.plan;
  plan.staged_steps =
      SaturatingMul(choices.steps_per_run, static_cast<int64_t>(runtime::kMaxRunsInFlight));
  plan.watched = {webir::kLossOutput};
  plan.watched_steps_kept = plan.staged_steps;  // the losses of the runs in flight
  plan.caller_host_bytes = SaturatingMul(choices.steps_per_run, d.BatchBytes(choices.batch));
  plan.caller_host_what = "the batches gathered for one submission";
  SCELLIS_ASSIGN_OR_RETURN(
      DatasetPlan held,
      PlanWithDataset(text, out.options, d, choices.steps_per_run,
                      choices.stream_dataset ? DatasetMode::kStreamed : DatasetMode::kAuto));
  out.compiled = std::move(held.compiled);
  out.streamed = held.streamed;
  if (out.compiled.plan->verdict == execplan::Verdict::kRed) return out;
  plan.dataset = out.compiled.plan->dataset;
  if (out.streamed) plan.caller_host_bytes = 0;  // the streamed set's batches, counted once
  if (!choices.gpu) return out;
  if (choices.host_batches || out.streamed) {
    out.host_batches_reason =
        choices.host_batches ? "--host-batches" : "the dataset is streamed from its files";
    return out;
  }

  pipeline::CompileOptions device = out.options;
  device.lower.dataset_examples_on_device = d.train.examples;
  const int64_t indices = SaturatingMul(choices.steps_per_run, choices.batch * 4);
  const int64_t split = d.BatchBytes(d.train.examples);
  device.plan.caller_host_bytes = std::max(indices, split);
  device.plan.caller_host_what = indices >= split ? "the batches' row indices for one submission"
                                                  : "the train split's copy handed to the device";
  pipeline::CompileOptions planning = device;
  planning.up_to = pipeline::Rung::kExecplan;
  planning.print_after.clear();
  SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled on_device, pipeline::Compile(text, planning));
  const execplan::Plan& p = *on_device.plan;
  if (p.verdict == execplan::Verdict::kRed) {
    const Diagnostic& why = p.findings.front();
    out.host_batches_reason =
        "the train split held on the device does not fit: " + why.code + ": " + why.message;
    return out;
  }
  out.options = std::move(device);
  out.compiled = std::move(on_device);
  out.batches_on_device = true;
  return out;
}

namespace {

// The halves as planning needs them: compiled to the execplan rung only.
pipeline::StepHalves PlannedOnly(pipeline::StepHalves h) {
  for (pipeline::CompileOptions* o : {&h.gradients, &h.update}) {
    o->up_to = pipeline::Rung::kExecplan;
    o->print_after.clear();
  }
  return h;
}

// Whether a rank's whole step is over its budget with the dataset held whole, where the gradient
// half alone may fit: then why the rank streams it, else "" (held, or the gradient half's own
// plan decides). Nothing is allocated: the halves are only planned.
Result<std::string> RankOverWithSetHeld(std::string_view text, const pipeline::StepHalves& halves,
                                        const HeldDataset& d, const execplan::DeviceLimits& limits,
                                        int ranks, int chunks) {
  pipeline::StepHalves held = PlannedOnly(halves);
  held.gradients.plan.dataset = d.Held();
  SCELLIS_ASSIGN_OR_RETURN(
      pipeline::CompiledWorkPlan w,
      pipeline::CompileWorkPlan(text, std::move(held), workplan::DeviceSet::Uniform(ranks, limits),
                                chunks));
  if (w.gradients.plan->verdict == execplan::Verdict::kRed) return std::string();
  for (const workplan::RankMemory& m : w.plan.memory)
    for (const Diagnostic& f : m.findings)
      if (f.code == "over-budget")
        return "held whole a rank's step would need " + execplan::FormatBytes(m.total) +
               ", over the budget of " + execplan::FormatBytes(m.budget);
  return std::string();
}

}  // namespace

Result<DataParallelPlan> PlanDataParallelStep(std::string_view text,
                                              const pipeline::CompileOptions& options,
                                              const HeldDataset& d,
                                              const DataParallelChoices& choices) {
  DataParallelPlan out;
  const int chunks = choices.chunks > 0 ? choices.chunks : choices.ranks;
  SCELLIS_ASSIGN_OR_RETURN(out.halves, pipeline::SplitTrainStep(text, options, chunks));
  pipeline::CompileOptions& gradients = out.halves.gradients;
  // A rank gathers its chunks of one batch on the host, from the set held whole or streamed from
  // its files: the rank's gradient half counts the dataset as the rank holds it.
  const int64_t mine = (chunks + choices.ranks - 1) / choices.ranks;
  gradients.plan.caller_host_bytes =
      execplan::SaturatingMul(mine, d.BatchBytes(choices.batch / chunks));
  gradients.plan.caller_host_what = "the chunks of one batch gathered by a rank";
  out.halves.update.plan.caller_host_bytes = 0;
  std::string streamed_why;
  if (!choices.stream_dataset) {
    SCELLIS_ASSIGN_OR_RETURN(
        streamed_why,
        RankOverWithSetHeld(text, out.halves, d, options.plan.limits, choices.ranks, chunks));
  }
  const DatasetMode mode =
      choices.stream_dataset || !streamed_why.empty() ? DatasetMode::kStreamed : DatasetMode::kAuto;
  SCELLIS_ASSIGN_OR_RETURN(DatasetPlan planned,
                           PlanWithDataset(text, gradients, d, mine, mode, streamed_why));
  execplan::Plan& plan = *planned.compiled.plan;
  if (plan.verdict == execplan::Verdict::kRed) {
    // A rank's batch search binds one chunk's examples: the batch is that many per chunk.
    for (Diagnostic& f : plan.findings)
      if (f.severity == Severity::kError && plan.batch_fit)
        f.help += " (planned per rank: the batch there is one chunk's examples, of " +
                  std::to_string(chunks) + " chunks)";
    return Status(plan.findings);
  }
  out.streamed = planned.streamed;
  gradients.plan.dataset = plan.dataset;
  if (out.streamed) gradients.plan.caller_host_bytes = 0;
  for (const Diagnostic& f : plan.findings)
    if (f.code == "streamed-dataset") out.notes.push_back(f);
  SCELLIS_ASSIGN_OR_RETURN(
      out.work, pipeline::CompileWorkPlan(
                    text, PlannedOnly(out.halves),
                    workplan::DeviceSet::Uniform(choices.ranks, options.plan.limits), chunks));
  return out;
}

namespace {

// The SHA-256 of a file, read in pieces (a dataset file need not fit in memory twice).
Result<std::string> FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return UserError("file-not-found", "", "cannot open '" + path + "'");
  Sha256 h;
  std::vector<char> buf(size_t{1} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.Update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return UserError("read-failed", "", "cannot read '" + path + "'");
  return h.FinalHex();
}

// The plain IDX file to read `path` at offsets from: itself when it is plain, else its inflated
// copy in the store, made on first use.
Result<std::string> PlainIdxFile(const std::string& path, const std::string& store_root) {
  SCELLIS_ASSIGN_OR_RETURN(bool gzipped, data::IsGzipFile(path));
  if (!gzipped) return path;
  SCELLIS_ASSIGN_OR_RETURN(store::Store st, store::Store::Open(store_root));
  SCELLIS_ASSIGN_OR_RETURN(std::string compressed, FileSha256(path));
  // An index entry names a small record of the inflation, which names the raw copy's blob (so the
  // store's gc keeps the copy as long as the record).
  for (const std::string& rec_id : st.Lookup("inflated-idx", "", compressed)) {
    Result<Json> rec = st.Get(rec_id);
    if (!rec.ok() || !rec->contains("raw") || !(*rec)["raw"].is_string()) continue;
    const std::string id = (*rec)["raw"].get<std::string>();
    Result<std::string> sound = FileSha256(st.BlobFile(id));
    if (sound.ok() && "sha256:" + sound.value() == id) return st.BlobFile(id);
    st.DiscardIfCorrupt(id);  // a torn or altered copy is made again
  }
  SCELLIS_ASSIGN_OR_RETURN(std::string raw, data::InflateIdx(path));
  SCELLIS_ASSIGN_OR_RETURN(std::string id, st.PutBlob(raw));
  SCELLIS_ASSIGN_OR_RETURN(std::string rec_id, st.Put({{"kind", "scellis.inflated_idx/1"},
                                                       {"compressed", "sha256:" + compressed},
                                                       {"raw", id}}));
  SCELLIS_TRY(st.Replace("inflated-idx", "", compressed, rec_id));
  return st.BlobFile(id);
}

}  // namespace

Result<data::StreamedSplit> OpenStreamedSplit(const std::string& source, const std::string& split,
                                              const std::string& store_root) {
  SCELLIS_ASSIGN_OR_RETURN(auto files, data::DatasetFiles(source, split));
  SCELLIS_ASSIGN_OR_RETURN(std::string images, PlainIdxFile(files.first, store_root));
  SCELLIS_ASSIGN_OR_RETURN(std::string labels, PlainIdxFile(files.second, store_root));
  return data::StreamedSplit::Open(source + ":" + split, images, labels,
                                   {files.first, files.second});
}

}  // namespace scellis::train
