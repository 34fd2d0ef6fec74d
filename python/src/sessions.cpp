// Prepared sessions (api::Session) from Python: feeds written into the previous step's buffers,
// the GIL released while the engine works, and the session's run record when one is kept.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/session.h"
#include "execplan/plan.h"
#include "module_support.h"
#include "pipeline/compile.h"

namespace nb = nanobind;

namespace scellis::python {
namespace {

// One api::Session; a mutex keeps a worker thread and the caller from using it at once.
class PySession {
 public:
  PySession(std::unique_ptr<api::Session> s, runtime::Selection info,
            std::optional<record::SessionRecorder> recorder)
      : session_(std::move(s)),
        recorder_(std::move(recorder)),
        backend_(info.backend),
        fallback_reason_(info.fallback_reason),
        attempts_(info.attempts) {}

  // feeds: one dict per step; returns ({name: [array per step]}, stats).
  nb::tuple Run(const nb::list& steps, const std::vector<std::string>& watch) {
    std::optional<Result<runtime::StepsResult>> r;
    {
      std::unique_lock<std::mutex> lock = Lock();
      // The feeds are written into the buffers of the previous call (kept in feed_pool_); the
      // steps beyond this call's count wait aside for a longer call.
      if (feed_pool_.size() < steps.size()) feed_pool_.resize(steps.size());
      std::vector<runtime::Feeds> spare(
          std::make_move_iterator(feed_pool_.begin() + static_cast<std::ptrdiff_t>(steps.size())),
          std::make_move_iterator(feed_pool_.end()));
      feed_pool_.resize(steps.size());
      FeedsInto(steps, feed_pool_);
      {
        nb::gil_scoped_release unlocked;
        r.emplace(session_->Run(feed_pool_, watch));
      }
      // A recorded session digests the run before its outputs move into NumPy arrays.
      if (recorder_ && r->ok() && !AddSessionRun(*recorder_, feed_pool_, watch, r->value()))
        recorder_.reset();
      for (runtime::Feeds& f : spare) feed_pool_.push_back(std::move(f));
    }
    return ToPython(Take(std::move(*r)));
  }

  // A run in two halves (api::Session::Start / Finish): start returns once the run is recorded
  // and sent, so the caller prepares the next run while the device runs this one; finish waits
  // for the oldest run and returns what run would have. A recorded session's recorder keeps each
  // run's feeds until its finish digests them.
  void Start(const nb::list& steps, const std::vector<std::string>& watch) {
    std::unique_lock<std::mutex> lock = Lock();
    std::vector<runtime::Feeds> feeds(steps.size());
    FeedsInto(steps, feeds);
    Status s;
    {
      nb::gil_scoped_release unlocked;
      s = session_->Start(feeds, watch);
    }
    if (!s.ok()) Raise(s);
    if (recorder_) recorder_->AddStarted(std::move(feeds), watch);
  }

  nb::tuple Finish() {
    std::optional<Result<runtime::StepsResult>> r;
    {
      std::unique_lock<std::mutex> lock = Lock();
      const bool had_run = session_->runs_in_flight() > 0;  // else no-run-in-flight
      {
        nb::gil_scoped_release unlocked;
        r.emplace(session_->Finish());
      }
      if (recorder_ && had_run && !FinishStartedRun(*recorder_, r->ok() ? &r->value() : nullptr))
        recorder_.reset();
    }
    return ToPython(Take(std::move(*r)));
  }

  size_t runs_in_flight() {
    std::unique_lock<std::mutex> lock = Lock();
    return session_->runs_in_flight();
  }

  nb::object Download(const std::string& name) {
    std::optional<Result<HostTensor>> r;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard<std::mutex> lock(mu_);
      r.emplace(session_->Download(name));
    }
    return ToNumpy(Take(std::move(*r)));
  }

  void Upload(const std::string& name, const nb::handle& value) {
    HostTensor t = ToHost("the upload to \"" + name + "\"", value);
    Status s;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard<std::mutex> lock(mu_);
      s = session_->Upload(name, t);
    }
    if (!s.ok()) Raise(s);
  }

  void Dispose() {
    nb::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> lock(mu_);
    session_->Dispose();
  }

  // Stores the record of the runs so far (a recorded session); its id, or None.
  nb::object Record() {
    std::unique_lock<std::mutex> lock = Lock();
    if (!recorder_) return nb::none();
    return FinishSessionRecord(*recorder_, *session_);
  }
  bool recording() const { return recorder_.has_value(); }

  std::string executor() const { return session_->executor(); }
  bool poisoned() const { return session_->poisoned(); }
  std::string content_id() const { return session_->compiled().doc.content_id; }
  std::string determinism_tier() const { return policy::TierName(session_->plan().graph().tier); }
  const std::string& backend() const { return backend_; }
  nb::object fallback_reason() const { return Optional(fallback_reason_); }
  const std::vector<std::string>& attempts() const { return attempts_; }

 private:
  // Waits for the session without the GIL: its holder may need the GIL to finish.
  std::unique_lock<std::mutex> Lock() {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    nb::gil_scoped_release unlocked;
    lock.lock();
    return lock;
  }

  // Each step's dict converted into `into` (one Feeds per step, reusing their buffers).
  static void FeedsInto(const nb::list& steps, std::vector<runtime::Feeds>& into) {
    for (size_t i = 0; i < steps.size(); ++i) {
      const nb::dict step = nb::cast<nb::dict>(steps[i]);
      runtime::Feeds& feeds = into[i];
      std::erase_if(feeds, [&](const auto& kv) { return !step.contains(kv.first.c_str()); });
      for (auto [key, value] : step) {
        std::string name = nb::cast<std::string>(key);
        ToHostInto("the feed \"" + name + "\"", value, feeds[name]);
      }
    }
  }

  // ({name: [array per step]}, stats).
  static nb::tuple ToPython(runtime::StepsResult result) {
    nb::dict watched;
    for (auto& [name, values] : result.watched) {
      nb::list per_step;
      for (HostTensor& t : values) per_step.append(ToNumpy(std::move(t)));
      watched[name.c_str()] = per_step;
    }
    return nb::make_tuple(watched, JsonToPython(result.stats));
  }

  std::mutex mu_;
  std::unique_ptr<api::Session> session_;
  std::optional<record::SessionRecorder> recorder_;  // guarded by mu_
  std::vector<runtime::Feeds> feed_pool_;            // guarded by mu_
  std::string backend_;
  std::optional<std::string> fallback_reason_;
  std::vector<std::string> attempts_;
};

PySession* PrepareDocument(const std::string& text, const std::string& backend,
                           const std::optional<std::string>& tier, bool allow_software_adapter,
                           int cpu_threads, const nb::dict& initial,
                           const std::optional<std::string>& executor, const nb::list& user_ops,
                           bool record) {
  pipeline::CompileOptions options = CompileOptionsFor(tier);
  if (auto table = TableOf(user_ops)) options.lower.ops = table;
  runtime::RunOptions run_options;
  if (executor) run_options.executor = *executor;
  runtime::Feeds feeds = ToFeeds(initial);
  std::optional<Result<std::unique_ptr<api::Session>>> s;
  runtime::Selection info;
  {
    nb::gil_scoped_release unlocked;
    auto selection =
        runtime::SelectBackend(SelectFor(backend, allow_software_adapter, cpu_threads));
    if (!selection.ok()) {
      s.emplace(selection.status());
    } else {
      info.backend = selection->backend;
      info.fallback_reason = selection->fallback_reason;
      if (auto pinned = api::PinnedExecutorFallback(run_options.executor))
        info.fallback_reason = pinned;
      info.attempts = selection->attempts;
      s.emplace(
          api::Session::Prepare(text, options, std::move(selection).value(), feeds, run_options));
    }
  }
  std::unique_ptr<api::Session> session = Take(std::move(*s));
  auto recorder = StartSessionRecord(
      record, text, options, SelectFor(backend, allow_software_adapter, cpu_threads), feeds);
  return new PySession(std::move(session), std::move(info), std::move(recorder));
}

}  // namespace

void BindSessions(nb::module_& m) {
  m.def("prepare", &PrepareDocument, nb::arg("text"), nb::arg("backend"), nb::arg("tier").none(),
        nb::arg("allow_software_adapter"), nb::arg("cpu_threads"), nb::arg("initial"),
        nb::arg("executor").none() = nb::none(), nb::arg("user_ops") = nb::list(),
        nb::arg("record") = false, nb::rv_policy::take_ownership,
        "Prepares a session (api::Session::Prepare); `record`: keep a run record of its runs "
        "(record::SessionRecorder), stored by `record()`.");

  nb::class_<PySession>(m, "Session")
      .def("run", &PySession::Run, nb::arg("steps"), nb::arg("watch"))
      .def("start", &PySession::Start, nb::arg("steps"), nb::arg("watch"))
      .def("finish", &PySession::Finish)
      .def_prop_ro("runs_in_flight", &PySession::runs_in_flight)
      .def("download", &PySession::Download, nb::arg("name"))
      .def("upload", &PySession::Upload, nb::arg("name"), nb::arg("value"))
      .def("dispose", &PySession::Dispose)
      .def("record", &PySession::Record)
      .def_prop_ro("recording", &PySession::recording)
      .def_prop_ro("executor", &PySession::executor)
      .def_prop_ro("poisoned", &PySession::poisoned)
      .def_prop_ro("content_id", &PySession::content_id)
      .def_prop_ro("determinism_tier", &PySession::determinism_tier)
      .def_prop_ro("backend", &PySession::backend)
      .def_prop_ro("fallback_reason", &PySession::fallback_reason)
      .def_prop_ro("attempts", &PySession::attempts);
}

}  // namespace scellis::python
