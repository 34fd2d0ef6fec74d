// Prepared sessions: validate, lower and plan once; feeds arrive per step; carried state (weights,
// optimizer moments) stays resident on the backend; Run executes up to 64 steps in one submission
// and reads back only the watched outputs; Download reads state on demand.
//
// A run that fails after device work began — a backend error, a non-finite watched value in a
// session that carries state, a failed map — poisons the session: Run and Download then fail with
// the STATE error `session-poisoned` naming the cause; only Dispose remains.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "execplan/run_demand.h"
#include "pipeline/compile.h"
#include "runtime/backends/select.h"
#include "runtime/executor.h"

namespace scellis::api {

class Session {
 public:
  // Compiles `text` for the selected backend and makes the plan resident. A red plan is refused.
  // `initial` gives inputs and params their starting values by name (a value wins over inline
  // data or an initializer), checked against the plan's types before anything is allocated.
  // `run_options` may pin the backend's executor (executor-unavailable when it has no such one).
  static Result<std::unique_ptr<Session>> Prepare(std::string_view text,
                                                  const pipeline::CompileOptions& options,
                                                  runtime::Selection selection,
                                                  const runtime::Feeds& initial = {},
                                                  const runtime::RunOptions& run_options = {});

  // Compiles `text` like Prepare, on the backend and device of `beside` (which must outlive this
  // session): state then moves between the two on the device (CopyFrom).
  static Result<std::unique_ptr<Session>> PrepareBeside(std::string_view text,
                                                        const pipeline::CompileOptions& options,
                                                        Session& beside);

  // A run's staged feeds and watched values beyond what the plan counted are judged first
  // (execplan::JudgeRun): one the memory cannot hold is refused by name before anything is sent,
  // and the session stays usable.
  Result<runtime::StepsResult> Run(const std::vector<runtime::Feeds>& feeds,
                                   const std::vector<std::string>& watch);
  // Run in two halves (runtime::Prepared::StartSteps): Start begins a run and returns before its
  // watched values are back, so the caller prepares the next run's feeds and starts it while the
  // device runs this one; Finish waits for the oldest started run and returns what Run would
  // have, with the same checks (a non-finite watched value poisons a session with state). At
  // most runtime::kMaxRunsInFlight runs in flight; while any is, Download, Upload and CopyFrom
  // are refused (`runs-in-flight`). On a poisoned session Finish still waits for (and drops) the
  // oldest run before returning `session-poisoned`, so finishing until none is in flight ends.
  Status Start(const std::vector<runtime::Feeds>& feeds, const std::vector<std::string>& watch);
  Result<runtime::StepsResult> Finish();
  size_t runs_in_flight() const { return prepared_ ? prepared_->runs_in_flight() : 0; }
  Result<runtime::HostTensor> Download(const std::string& name);
  Status Upload(const std::string& name, const HostTensor& value);
  // Each param or input of `names` takes the current value of that name in `source`: on the
  // device when both sessions share it (PrepareBeside), else through the host.
  Status CopyFrom(Session& source, const std::vector<std::string>& names);
  // Frees the resident state. Every later call fails with `session-disposed`.
  void Dispose();

  const pipeline::Compiled& compiled() const { return compiled_; }
  const execplan::Plan& plan() const { return *compiled_.plan; }
  // The backend's choice; a session prepared beside another has no executor of its own here.
  const runtime::Selection& selection() const { return selection_; }
  // How the steps run on the chosen backend ("fused-encoder", "reference", ...).
  std::string executor() const { return prepared_ ? prepared_->executor() : ""; }
  bool poisoned() const { return !poison_.ok(); }

 private:
  Session(pipeline::Compiled c, runtime::Selection s)
      : compiled_(std::move(c)), selection_(std::move(s)), executor_(selection_.executor.get()) {}
  static Result<std::unique_ptr<Session>> PrepareOn(std::string_view text,
                                                    const pipeline::CompileOptions& options,
                                                    runtime::Selection selection,
                                                    runtime::Executor* executor,
                                                    const runtime::Feeds& initial,
                                                    const runtime::RunOptions& run_options);
  Status Usable() const;
  // Refuses a run of `steps` steps watching `watch` whose memory beyond the plan does not fit.
  Status JudgeDemand(size_t steps, const std::vector<std::string>& watch);
  void Poison(const Diagnostic& cause);
  // A run's result as the caller gets it: a device failure poisons the session, and so does a
  // non-finite watched value where the session carries state.
  Result<runtime::StepsResult> Checked(Result<runtime::StepsResult> r);

  pipeline::Compiled compiled_;
  runtime::Selection selection_;
  runtime::Executor* executor_;  // selection_'s, or the one of the session this was prepared beside
  std::unique_ptr<runtime::Prepared> prepared_;
  Status poison_;
  bool disposed_ = false;
  std::deque<int64_t> steps_in_flight_;  // the steps of each started, unfinished run, oldest first
  execplan::RunDemand judged_;           // the last demand beyond the plan judged to fit
};

}  // namespace scellis::api
