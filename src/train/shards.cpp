#include "train/shards.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "api/run.h"
#include "pipeline/data_parallel.h"
#include "store/safetensors.h"
#include "store/store.h"
#include "webir/passes/append_train_step.h"

namespace scellis::train {

Result<std::vector<std::vector<float>>> ShardGradients(api::Session& gradients,
                                                       const workplan::WorkPlan& w, int rank,
                                                       const ShardInputs& in) {
  const workplan::Shard& mine = w.shards[rank];
  const int64_t b = w.chunk_examples;
  const int64_t features = in.train->features();
  std::vector<std::string> watch;
  for (const std::string& p : w.params) watch.push_back(webir::GradName(p));
  watch.push_back(webir::kLossOutput);
  std::vector<float> img, lab;
  std::vector<std::vector<float>> chunk_values;
  for (int first = 0; first < mine.chunks; first += api::kMaxStepsPerSubmission) {
    const int n = std::min(mine.chunks - first, api::kMaxStepsPerSubmission);
    // The weights are the session's resident params: only the batch's chunks are fed.
    std::vector<runtime::Feeds> feeds(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const int64_t at = in.batch_start + (mine.first_chunk + first + i) * b;
      SCELLIS_TRY(in.train->Gather(*in.order, at, b, img, lab));
      feeds[i][in.images_feed] = HostTensor::FromFloats(MakeType({b, features}), img);
      feeds[i][in.labels_feed] = HostTensor::FromFloats(MakeType({b}), lab);
    }
    SCELLIS_ASSIGN_OR_RETURN(runtime::StepsResult r, gradients.Run(feeds, watch));
    for (int i = 0; i < n; ++i) {
      std::vector<float> set;
      set.reserve(static_cast<size_t>(w.gradient_elements));
      for (const auto& [name, values] : r.watched) {
        std::span<const float> v = values[i].view<float>();
        set.insert(set.end(), v.begin(), v.end());
      }
      chunk_values.push_back(std::move(set));
    }
  }
  return chunk_values;
}

namespace {

std::string FeedNameOf(const block::Block& b) {
  return b.label.empty() ? b.id : b.label;
}

std::vector<float> FloatsOf(const std::string& bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

}  // namespace

Result<ShardCheck> VerifyShard(const std::string& run_id, int shard,
                               const std::string& store_root) {
  SCELLIS_ASSIGN_OR_RETURN(store::Store st, store::Store::Open(store_root));
  SCELLIS_ASSIGN_OR_RETURN(Json rec, st.Get(run_id));
  if (!rec.is_object() || rec.value("kind", "") != "scellis.shard_run/1") {
    return UserError("not-a-shard-record", "", run_id + " is not a data-parallel run's record",
                     "use the id `scellis train --record-shards` printed");
  }
  ShardCheck c;
  c.run_id = run_id;
  c.ranks = rec["ranks"].get<int>();
  c.shard = shard;
  if (shard < 0 || shard >= c.ranks) {
    return UserError("bad-flag", "",
                     "--shard " + std::to_string(shard) + ": the run had shards 0 to " +
                         std::to_string(c.ranks - 1));
  }
  c.recorded_backend = rec["backend"].get<std::string>();
  c.global_step = rec["global_step"].get<int64_t>();
  SCELLIS_ASSIGN_OR_RETURN(std::string text, st.GetBlob(rec["document"].get<std::string>()));

  // The step's halves as this build lowers them, on the CPU reference.
  const int chunks = rec["chunks"].get<int>();
  SCELLIS_ASSIGN_OR_RETURN(pipeline::StepHalves halves, pipeline::SplitTrainStep(text, {}, chunks));
  SCELLIS_ASSIGN_OR_RETURN(runtime::Selection cpu, runtime::SelectBackend({.requested = "cpu"}));
  SCELLIS_ASSIGN_OR_RETURN(std::unique_ptr<api::Session> gradients,
                           api::Session::Prepare(text, halves.gradients, std::move(cpu)));
  if (workplan::PlanHash(gradients->plan()) != rec["gradients_plan"].get<std::string>()) {
    return UserError("plan-mismatch", "",
                     "this build lowers the gradient half to another plan than the run's (" +
                         rec["gradients_plan"].get<std::string>().substr(0, 16) + ")",
                     "verify with the build (and flags) that made the run");
  }
  SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled update, pipeline::Compile(text, halves.update));
  SCELLIS_ASSIGN_OR_RETURN(
      workplan::WorkPlan w,
      workplan::FromExecPlans(std::make_shared<execplan::Plan>(gradients->plan()),
                              std::make_shared<execplan::Plan>(*update.plan),
                              workplan::DeviceSet::Uniform(c.ranks, gradients->plan().limits),
                              rec["batch"].get<int64_t>(), {.chunks = chunks}));
  SCELLIS_TRY(workplan::Verify(w));
  const workplan::Shard& sh = w.shards[shard];
  c.first_chunk = sh.first_chunk;
  c.chunks = sh.chunks;
  c.first_example = sh.first_example;
  c.examples = sh.examples;
  c.atol = gradients->plan().thresholds.atol;
  c.rtol = gradients->plan().thresholds.rtol;

  // The inputs as recorded: the weights before the step, the batch's place in the epoch's order.
  SCELLIS_ASSIGN_OR_RETURN(std::string weights_file, st.GetBlob(rec["weights"].get<std::string>()));
  SCELLIS_ASSIGN_OR_RETURN(std::vector<store::NamedTensor> tensors,
                           store::DecodeSafetensors(weights_file, nullptr));
  for (const store::NamedTensor& t : tensors)
    SCELLIS_TRY(
        gradients->Upload(t.name, HostTensor::FromFloats(MakeType(t.shape), FloatsOf(t.bytes))));
  const block::Program& prog = *halves.head.program;
  data::SplitReader train;
  SCELLIS_ASSIGN_OR_RETURN(train.held,
                           data::LoadDataset(rec["dataset"].get<std::string>(), "train"));
  std::vector<int64_t> order = data::EpochOrder(train.count(), rec["shuffle_seed"].get<uint64_t>(),
                                                rec["epoch"].get<int64_t>());
  ShardInputs in{.train = &train,
                 .order = &order,
                 .batch_start = rec["batch_start"].get<int64_t>(),
                 .images_feed = FeedNameOf(prog.blocks[halves.spec.images]),
                 .labels_feed = FeedNameOf(prog.blocks[halves.spec.labels])};
  SCELLIS_ASSIGN_OR_RETURN(std::vector<std::vector<float>> values,
                           ShardGradients(*gradients, w, shard, in));
  const std::vector<float> mine = workplan::ReduceLocal(w, shard, values);

  // The recorded partials of this shard, in order.
  std::vector<float> recorded;
  for (const Json& p : rec["shards"][shard]["partials"]) {
    SCELLIS_ASSIGN_OR_RETURN(std::string bytes, st.GetBlob(p["values"].get<std::string>()));
    std::vector<float> v = FloatsOf(bytes);
    recorded.insert(recorded.end(), v.begin(), v.end());
    ++c.partials;
  }
  if (recorded.size() != mine.size()) {
    return UserError("shard-mismatch", "",
                     "shard " + std::to_string(shard) + " recorded " +
                         std::to_string(recorded.size()) + " values, its re-run gives " +
                         std::to_string(mine.size()));
  }
  c.bit_exact = std::memcmp(recorded.data(), mine.data(), mine.size() * sizeof(float)) == 0;
  c.ok = true;
  for (size_t i = 0; i < mine.size(); ++i) {
    const double d = std::fabs(static_cast<double>(mine[i]) - recorded[i]);
    c.max_abs_diff = std::max(c.max_abs_diff, std::isnan(d) ? INFINITY : d);
    if (!(d <= c.atol + c.rtol * std::fabs(static_cast<double>(recorded[i])))) c.ok = false;
  }
  // The reference against itself is held to the bit; another backend to the tolerance class.
  c.ok = c.recorded_backend == "cpu" ? c.bit_exact : (c.ok || c.bit_exact);
  return c;
}

Json ShardCheck::ToJson() const {
  return {{"run", run_id},
          {"shard", shard},
          {"ranks", ranks},
          {"first_chunk", first_chunk},
          {"chunks", chunks},
          {"partials", partials},
          {"recorded_backend", recorded_backend},
          {"bit_exact", bit_exact},
          {"max_abs_diff", max_abs_diff},
          {"ok", ok}};
}

}  // namespace scellis::train
