#include "record/replay.h"

#include <cmath>

#include "base/diagnostic_json.h"
#include "ops/user_op.h"
#include "record/run_record.h"
#include "record/session_record.h"

namespace scellis::record {
namespace {

Diagnostic Refused(const std::string& code, const std::string& message,
                   const std::string& help = "") {
  return UserError(code, "", message, help);
}

// Compares one replayed output with its digest in the record.
Result<OutputComparison> Compare(const store::Store& store, const std::string& name,
                                 const Json& digest, const runtime::HostTensor* replayed,
                                 bool bit_exact, const policy::Thresholds& thresholds) {
  OutputComparison c;
  c.name = name;
  if (!replayed) return c;  // the replay has no such output
  c.digest_equal = TensorHash(*replayed) == digest.value("sha256", "");
  if (c.digest_equal) {
    c.ok = true;
    return c;
  }
  auto recorded = KeptTensor(store, digest);
  if (!recorded.ok()) {
    // Bit-exactness is judged by the digest alone; a tolerance needs the values.
    if (bit_exact && recorded.errors().front().code == "record-tensor-not-kept") return c;
    Diagnostic d = recorded.errors().front();
    d.message = "output \"" + name + "\": " + d.message;
    if (d.code == "record-tensor-not-kept")
      d.help =
          "its replay differs bit-wise, and without the recorded values it cannot be judged "
          "within the tolerance";
    return Status(d);
  }
  const runtime::HostTensor& want = recorded.value();
  if (want.type.sizes() != replayed->type.sizes() || want.type.dtype != replayed->type.dtype)
    return c;  // another shape or dtype: no element to name
  c.compared_values = true;
  const policy::Thresholds exact{0, 0};
  const policy::Thresholds& judge = bit_exact ? exact : thresholds;
  const size_t width = static_cast<size_t>(DTypeBytes(want.type.dtype));
  for (int64_t i = 0; i < want.elements(); ++i) {
    const double got = replayed->ValueAt(i), rec = want.ValueAt(i);
    if (std::isfinite(got) && std::isfinite(rec))
      c.max_abs_diff = std::max(c.max_abs_diff, std::fabs(got - rec));
    // Bit-exact means the bytes: -0 is not 0, and one NaN is not another.
    const bool same =
        bit_exact ? std::equal(want.bytes.begin() + i * width, want.bytes.begin() + (i + 1) * width,
                               replayed->bytes.begin() + i * width)
                  : judge.Accepts(got, rec);
    if (!same && c.first_difference < 0) {
      c.first_difference = i;
      c.replayed = got;
      c.recorded = rec;
    }
  }
  c.ok = c.first_difference < 0;
  return c;
}

// A backend that cannot be opened here is a refusal of the replay, said as such.
Status RefuseUnavailable(const Status& s, const std::string& backend) {
  for (const Diagnostic& d : s.errors()) {
    if (d.code == "backend-unavailable" || d.code == "unknown-backend") {
      return Refused(
          "replay-backend-unavailable",
          "the record ran on the " + backend + " backend, which cannot run here: " + d.message,
          "replay it where that backend is available");
    }
  }
  return s;
}

// What differs between a recorded user op's definition and the one a replay is given, in words.
std::string DefinitionDifference(const Json& recorded, const Json& given) {
  auto differs = [&](const char* key) {
    return recorded.value(key, Json()) != given.value(key, Json());
  };
  if (differs("wgsl")) return "its WGSL differs";
  if (differs("reference")) {
    const Json r = recorded.value("reference", Json()), g = given.value("reference", Json());
    return "its reference's version is " + g.value("callable", Json()).dump() + ", the record's " +
           r.value("callable", Json()).dump();
  }
  if (differs("gradient")) return "its gradients (their WGSL or versions) differ";
  return "its signature differs";
}

// The table of the user ops the record names, built from those the replay is given; null when
// the record names none. Refused before anything runs: a recorded op not given
// (`replay-needs-user-op`), or given with another definition (`replay-user-op-mismatch`).
Result<std::shared_ptr<const ops::OpTable>> RecordedUserOps(
    const Json& record, const std::string& run_id,
    const std::vector<api::UserOpDefinition>& given) {
  const Json recorded = record.value("user_ops", Json::array());
  if (!recorded.is_array() || recorded.empty()) return std::shared_ptr<const ops::OpTable>();
  SCELLIS_ASSIGN_OR_RETURN(std::shared_ptr<const ops::OpTable> table, api::DefineOps(given));
  for (const Json& op : recorded) {
    const std::string name = op.value("name", "");
    const ops::OpSpec* spec = table->Find(name);
    if (!spec || !spec->user || !spec->user->callable) {
      return Refused("replay-needs-user-op",
                     run_id + " used the user op \"" + name +
                         "\", whose reference is a callable the record cannot hold",
                     "replay it from the API with the op supplied: scellis.replay(run_id, "
                     "ops=[op]) in Python, record::ReplayOptions::user_ops in C++");
    }
    if (spec->user->definition_hash != op.value("definition_hash", "")) {
      return Refused(
          "replay-user-op-mismatch",
          "the user op \"" + name + "\" given to the replay of " + run_id +
              " is not the one the record names: " +
              DefinitionDifference(op.value("definition", Json::object()), spec->user->definition),
          "supply the op with the signature, WGSL and version the run had");
    }
  }
  return table;
}

Diagnostic ProfileMismatch(const std::string& recorded, const std::string& here) {
  return Refused("replay-profile-mismatch",
                 "the record promises bit-exactness on device profile \"" + recorded +
                     "\" but this replay runs on \"" + here + "\"",
                 "replay it on the device it was recorded on");
}

// The tensors a digest map holds, as feeds ("<what> \"name\": ..." when one was not kept).
Result<runtime::Feeds> KeptFeeds(const store::Store& store, const Json& digests,
                                 const std::string& what) {
  runtime::Feeds feeds;
  for (const auto& [name, digest] : digests.items()) {
    auto t = KeptTensor(store, digest);
    if (!t.ok()) {
      Diagnostic d = t.errors().front();
      d.message = what + " \"" + name + "\": " + d.message;
      return Status(d);
    }
    feeds[name] = std::move(t.value());
  }
  return feeds;
}

// A session record's runs again: the session prepared from the recorded initial values on the
// recorded backend, each run's steps fed as recorded; the watched outputs named as the record
// names them. `profile`: the device profile a bit-exact record needs (nullptr: any).
Result<std::vector<std::pair<std::string, runtime::HostTensor>>> ReplaySession(
    const store::Store& store, const Json& record, const std::string& text,
    const pipeline::CompileOptions& compile, const runtime::SelectOptions& select,
    const std::string* profile) {
  const Json inputs = record.value("inputs", Json::object());
  SCELLIS_ASSIGN_OR_RETURN(runtime::Feeds initial,
                           KeptFeeds(store, inputs.value("initial", Json::object()), "initial"));
  const Json recorded_runs = record.value("runs", Json::array());
  std::vector<std::vector<runtime::Feeds>> runs;
  for (const Json& run : recorded_runs) {
    runs.emplace_back();
    for (const Json& step : run.value("steps", Json::array())) {
      SCELLIS_ASSIGN_OR_RETURN(runtime::Feeds feeds, KeptFeeds(store, step, "feed"));
      runs.back().push_back(std::move(feeds));
    }
  }
  auto sel = runtime::SelectBackend(select);
  if (!sel.ok()) return RefuseUnavailable(sel.status(), select.requested);
  if (profile && sel->profile.key != *profile) return ProfileMismatch(*profile, sel->profile.key);
  SCELLIS_ASSIGN_OR_RETURN(std::unique_ptr<api::Session> session,
                           api::Session::Prepare(text, compile, std::move(sel.value()), initial));
  std::vector<std::pair<std::string, runtime::HostTensor>> outputs;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::vector<std::string> watch =
        recorded_runs[i].value("watch", std::vector<std::string>{});
    SCELLIS_ASSIGN_OR_RETURN(runtime::StepsResult result, session->Run(runs[i], watch));
    for (auto& [name, values] : result.watched)
      for (size_t step = 0; step < values.size(); ++step)
        outputs.emplace_back(SessionRecorder::OutputName(i, step, name), std::move(values[step]));
  }
  return outputs;
}

}  // namespace

const OutputComparison* ReplayResult::first_disagreement() const {
  for (const OutputComparison& c : outputs)
    if (!c.ok) return &c;
  return nullptr;
}

std::optional<Diagnostic> ReplayResult::Disagreement() const {
  const OutputComparison* bad = first_disagreement();
  if (!bad) return std::nullopt;
  const std::string where = bad->first_difference >= 0
                                ? " at element " + std::to_string(bad->first_difference) +
                                      " (replayed " + std::to_string(bad->replayed) +
                                      ", recorded " + std::to_string(bad->recorded) + ")"
                            : bad->compared_values ? ""
                                                   : " (its digest differs)";
  return RuntimeError("replay-disagrees", "output \"" + bad->name + "\" of " + run_id +
                                              " differs from the record" + where);
}

Json ReplayResult::ToJson() const {
  Json outs = Json::array();
  for (const OutputComparison& c : outputs) {
    Json o = {{"name", c.name},
              {"digest_equal", c.digest_equal},
              {"ok", c.ok},
              {"compared_values", c.compared_values},
              {"max_abs_diff", c.max_abs_diff}};
    if (c.first_difference >= 0)
      o["first_difference"] = {
          {"element", c.first_difference}, {"replayed", c.replayed}, {"recorded", c.recorded}};
    outs.push_back(o);
  }
  const std::optional<Diagnostic> disagreement = Disagreement();
  return {{"run_id", run_id},
          {"command", command},
          {"guarantee", guarantee},
          {"tolerance", {{"class", tolerance}, {"atol", atol}, {"rtol", rtol}}},
          {"recorded_profile", recorded_profile},
          {"profile", profile},
          {"backend", backend},
          {"agree", agree},
          {"disagreement", disagreement ? DiagnosticToJson(*disagreement) : Json()},
          {"outputs", outs}};
}

Result<ReplayResult> Replay(const std::string& run_id, const ReplayOptions& options) {
  SCELLIS_ASSIGN_OR_RETURN(store::Store store, store::Store::Open(options.store_root));
  SCELLIS_ASSIGN_OR_RETURN(Json record, LoadRecord(store, run_id));
  SCELLIS_ASSIGN_OR_RETURN(Json document, store.Get(record.value("document_id", "")));
  // The receipts the run relied on must still be what they were.
  if (record.contains("receipts") && record["receipts"].is_array())
    for (const Json& id : record["receipts"])
      if (id.is_string()) SCELLIS_TRY(store.Get(id.get<std::string>()).status());

  ReplayResult r;
  r.run_id = run_id;
  r.command = record.value("command", "");
  const std::string backend = record.value("backend", "");
  const std::string tier = record.value("tier", "");
  const Json tolerance = record.value("tolerance", Json::object());
  r.tolerance = tolerance.value("class", "");
  r.atol = tolerance.value("atol", 0.0);
  r.rtol = tolerance.value("rtol", 0.0);
  r.recorded_profile = record.value("device_profile", "");
  const bool bit_exact = backend == "cpu" || tier == "debug";
  r.guarantee = bit_exact ? "bit-exact" : "tolerance";
  const Json settings = record.value("settings", Json::object());
  SCELLIS_ASSIGN_OR_RETURN(pipeline::CompileOptions compile,
                           CompileSettingsFrom(settings.value("compile", Json::object())));
  SCELLIS_ASSIGN_OR_RETURN(std::shared_ptr<const ops::OpTable> user_ops,
                           RecordedUserOps(record, run_id, options.user_ops));
  if (user_ops) compile.lower.ops = user_ops;
  // The backend the record ran on, never `auto`: a replay does not fall back.
  runtime::SelectOptions select{
      .requested = backend,
      .allow_software_adapter = settings.value("allow_software_adapter", false),
      .cpu_threads = options.cpu_threads};
  const std::string text = document.dump();

  std::vector<std::pair<std::string, runtime::HostTensor>> outputs;
  if (r.command == "run") {
    api::RunOptions run;
    run.compile = compile;
    run.select = select;
    run.steps = settings.value("steps", 1);
    run.history = settings.value("history", std::vector<std::string>{});
    run.executor = settings.value("executor", "");  // a pinned executor is pinned again
    run.store_root = store.root();
    if (bit_exact) run.require_profile = r.recorded_profile;
    SCELLIS_ASSIGN_OR_RETURN(run.feeds,
                             KeptFeeds(store, record.value("inputs", Json::object()), "input"));
    auto report = api::Run(text, run);
    if (!report.ok()) return RefuseUnavailable(report.status(), backend);
    r.profile = report->profile;
    r.backend = report->backend;
    outputs = std::move(report->outputs);
  } else if (r.command == "train") {
    if (settings.value("resumed", false)) {
      return Refused("replay-needs-checkpoint",
                     "the recorded training resumed from a checkpoint the record does not hold",
                     "replay a training run that started from the document's initial state");
    }
    train::TrainOptions t;
    t.compile = compile;
    t.select = select;
    t.epochs = settings.value("epochs", 0);
    t.steps_per_run = settings.value("steps_per_run", 8);
    t.max_steps = settings.value("max_steps", int64_t{0});
    t.chunks = settings.value("chunks", 0);
    // The ranks' partial sums are combined in a fixed tree: one process with the same chunks
    // gives the bits of the whole job.
    if (t.chunks == 0 && settings.value("ranks", 1) > 1) t.chunks = settings.value("ranks", 1);
    t.store_root = store.root();
    train::Trainer trainer(t);
    auto result = trainer.Train(text);
    if (!result.ok()) return RefuseUnavailable(result.status(), backend);
    r.profile = result->profile;
    r.backend = result->backend;
    if (bit_exact && r.profile != r.recorded_profile)
      return ProfileMismatch(r.recorded_profile, r.profile);
    outputs = TrainingOutputs(result.value());
  } else if (r.command == "session") {
    SCELLIS_ASSIGN_OR_RETURN(outputs, ReplaySession(store, record, text, compile, select,
                                                    bit_exact ? &r.recorded_profile : nullptr));
    r.profile = r.recorded_profile;
    r.backend = backend;
  } else {
    return Refused("not-a-run-record",
                   run_id + " records an unknown command \"" + r.command + "\"");
  }

  const policy::Thresholds thresholds{r.atol, r.rtol};
  r.agree = true;
  const Json recorded_outputs = record.value("outputs", Json::object());
  for (const auto& [name, digest] : recorded_outputs.items()) {
    const runtime::HostTensor* replayed = nullptr;
    for (const auto& [n, t] : outputs)
      if (n == name) replayed = &t;
    SCELLIS_ASSIGN_OR_RETURN(OutputComparison c,
                             Compare(store, name, digest, replayed, bit_exact, thresholds));
    r.agree = r.agree && c.ok;
    r.outputs.push_back(std::move(c));
  }
  return r;
}

}  // namespace scellis::record
