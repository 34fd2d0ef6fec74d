// Run records from Python: a one-shot run leaves one as `scellis run` does (record::RecordRun, the
// same call), and `runs` and `replay` list and replay them (record::ListRuns, record::Replay),
// their results in the JSON form `scellis runs --json` and `scellis replay --json` print. A
// prepared session asked to record (`record=True`) leaves one too (record::SessionRecorder).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <optional>

#include "module_support.h"
#include "record/replay.h"
#include "record/run_record.h"

namespace nb = nanobind;

namespace scellis::python {
namespace {

// What the command says of a record it could not write: a warning, the run's results kept.
void Warn(std::vector<Diagnostic> diagnostics, const std::string& prefix) {
  nb::object warn = nb::module_::import_("warnings").attr("warn");
  for (Diagnostic& d : diagnostics) {
    d.severity = Severity::kWarning;
    d.message = prefix + d.message;
    warn(d.Format(""));
  }
}

// {"store", "runs": [{"run_id", "date", "command", "backend", "tier", "content_id"}]}, newest
// first; a record that cannot be read is warned about and left out, as `scellis runs` does.
nb::object ListRuns(int64_t limit, const std::string& store_root) {
  store::Store store = Take(store::Store::Open(store_root));
  std::vector<Diagnostic> problems;
  std::vector<record::RunSummary> runs =
      record::ListRuns(store, static_cast<size_t>(std::max<int64_t>(limit, 0)), &problems);
  Warn(problems, "");
  Json list = Json::array();
  for (const record::RunSummary& r : runs) list.push_back(r.ToJson());
  return JsonToPython(Json{{"store", store.root()}, {"runs", list}});
}

// The replay's JSON form; a refusal raises with its code.
nb::object ReplayRun(const std::string& run_id, const nb::list& user_ops, int cpu_threads,
                     const std::string& store_root) {
  record::ReplayOptions options{
      .store_root = store_root, .cpu_threads = cpu_threads, .user_ops = DefinitionsOf(user_ops)};
  std::optional<Result<record::ReplayResult>> r;
  {
    nb::gil_scoped_release unlocked;
    r.emplace(record::Replay(run_id, options));
  }
  return JsonToPython(Take(std::move(*r)).ToJson());
}

}  // namespace

nb::object RecordRunOf(bool record, const std::string& text, const api::RunOptions& options,
                       const api::RunReport& report) {
  if (!record || !record::RecordingEnabled()) return nb::none();
  std::optional<Result<std::string>> id;
  {
    nb::gil_scoped_release unlocked;
    auto store = store::Store::Open(options.store_root);
    id.emplace(store.ok() ? record::RecordRun(store.value(), text, options, report)
                          : Result<std::string>(store.status()));
  }
  if (id->ok()) return nb::str(id->value().c_str());
  Warn(id->errors(), "the run is not recorded: ");
  return nb::none();
}

std::optional<record::SessionRecorder> StartSessionRecord(bool record, const std::string& text,
                                                          const pipeline::CompileOptions& compile,
                                                          const runtime::SelectOptions& select,
                                                          const runtime::Feeds& initial) {
  if (!record || !record::RecordingEnabled()) return std::nullopt;
  std::optional<Result<record::SessionRecorder>> r;
  {
    nb::gil_scoped_release unlocked;
    auto store = store::Store::Open("");
    r.emplace(store.ok()
                  ? record::SessionRecorder::Start(store.value(), text, compile, select, initial)
                  : Result<record::SessionRecorder>(store.status()));
  }
  if (r->ok()) return std::move(r->value());
  Warn(r->errors(), "the session is not recorded: ");
  return std::nullopt;
}

namespace {

// `add` run on the recorder without the GIL; a failure is warned about (false: record no more).
template <typename Add>
bool Recorded(Add add) {
  Status s;
  {
    nb::gil_scoped_release unlocked;
    s = add();
  }
  if (s.ok()) return true;
  Warn(s.errors(), "the session is no longer recorded: ");
  return false;
}

}  // namespace

bool AddSessionRun(record::SessionRecorder& recorder, const std::vector<runtime::Feeds>& steps,
                   const std::vector<std::string>& watch, const runtime::StepsResult& result) {
  return Recorded([&] { return recorder.Add(steps, watch, result); });
}

bool FinishStartedRun(record::SessionRecorder& recorder, const runtime::StepsResult* result) {
  return Recorded([&] { return recorder.FinishStarted(result); });
}

nb::object FinishSessionRecord(const record::SessionRecorder& recorder,
                               const api::Session& session) {
  std::optional<Result<std::string>> id;
  {
    nb::gil_scoped_release unlocked;
    id.emplace(recorder.Finish(session));
  }
  if (id->ok()) return nb::str(id->value().c_str());
  Warn(id->errors(), "the session is not recorded: ");
  return nb::none();
}

void BindRecords(nb::module_& m) {
  m.def("runs", &ListRuns, nb::arg("limit"), nb::arg("store_root"),
        "The newest run records (record::ListRuns; 0: all), as `scellis runs --json`.");
  m.def("replay", &ReplayRun, nb::arg("run_id"), nb::arg("user_ops"), nb::arg("cpu_threads"),
        nb::arg("store_root"),
        "Replays a run record (record::Replay) with the user ops its run used, as `scellis "
        "replay --json`.");
}

}  // namespace scellis::python
