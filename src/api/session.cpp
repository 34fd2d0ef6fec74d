#include "api/session.h"

#include <cmath>

#include "api/fit_batch.h"

namespace scellis::api {

Result<std::unique_ptr<Session>> Session::Prepare(std::string_view text,
                                                  const pipeline::CompileOptions& options,
                                                  runtime::Selection selection,
                                                  const runtime::Feeds& initial,
                                                  const runtime::RunOptions& run_options) {
  runtime::Executor* executor = selection.executor.get();
  return PrepareOn(text, options, std::move(selection), executor, initial, run_options);
}

Result<std::unique_ptr<Session>> Session::PrepareBeside(std::string_view text,
                                                        const pipeline::CompileOptions& options,
                                                        Session& beside) {
  SCELLIS_TRY(beside.Usable());
  runtime::Selection borrowed;
  borrowed.backend = beside.selection_.backend;
  borrowed.fallback_reason = beside.selection_.fallback_reason;
  borrowed.attempts = beside.selection_.attempts;
  borrowed.limits = beside.selection_.limits;
  borrowed.profile = beside.selection_.profile;
  return PrepareOn(text, options, std::move(borrowed), beside.executor_, {}, {});
}

Result<std::unique_ptr<Session>> Session::PrepareOn(std::string_view text,
                                                    const pipeline::CompileOptions& options,
                                                    runtime::Selection selection,
                                                    runtime::Executor* executor,
                                                    const runtime::Feeds& initial,
                                                    const runtime::RunOptions& run_options) {
  pipeline::CompileOptions o = options;
  o.up_to = pipeline::Rung::kExecplan;
  o.plan.limits = selection.limits;
  SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled c, pipeline::Compile(text, o));
  // Refused with its fix where a smaller batch is one (a failed search leaves the findings).
  (void)ExplainRedPlan(text, o, c);
  if (c.plan->verdict == execplan::Verdict::kRed) return Status(c.plan->findings);
  std::unique_ptr<Session> s(new Session(std::move(c), std::move(selection)));
  s->executor_ = executor;
  SCELLIS_ASSIGN_OR_RETURN(s->prepared_,
                           executor->Prepare(*s->compiled_.plan, initial, run_options));
  return s;
}

Status Session::Usable() const {
  if (disposed_) {
    Diagnostic d = UserError("session-disposed", "", "the session was disposed");
    d.kind = ErrorKind::kState;
    return d;
  }
  return poison_;
}

void Session::Poison(const Diagnostic& cause) {
  Diagnostic d;
  d.kind = ErrorKind::kState;
  d.code = "session-poisoned";
  d.message = "the session is poisoned by an earlier failure after device work began: [" +
              cause.code + "] " + cause.message;
  d.help = "dispose it and prepare a new session";
  poison_ = Status(d);
}

Status Session::JudgeDemand(size_t steps, const std::vector<std::string>& watch) {
  execplan::RunDemand demand{.steps_in_flight = static_cast<int64_t>(steps), .watched = watch};
  for (int64_t s : steps_in_flight_) demand.steps_in_flight += s;
  if (execplan::WithinPlan(plan(), demand)) return Status::Ok();
  // Within a demand already judged to fit, nothing is judged again.
  if (execplan::Covers(judged_, demand)) return Status::Ok();
  SCELLIS_TRY(execplan::JudgeRun(plan(), demand));
  judged_ = std::move(demand);
  return Status::Ok();
}

Result<runtime::StepsResult> Session::Run(const std::vector<runtime::Feeds>& feeds,
                                          const std::vector<std::string>& watch) {
  SCELLIS_TRY(Usable());
  SCELLIS_TRY(JudgeDemand(feeds.size(), watch));
  return Checked(prepared_->RunSteps(feeds, watch));
}

Status Session::Start(const std::vector<runtime::Feeds>& feeds,
                      const std::vector<std::string>& watch) {
  SCELLIS_TRY(Usable());
  SCELLIS_TRY(JudgeDemand(feeds.size(), watch));
  Status s = prepared_->StartSteps(feeds, watch);
  if (s.ok()) steps_in_flight_.push_back(static_cast<int64_t>(feeds.size()));
  if (!s.ok() && (s.first().kind == ErrorKind::kRuntime || s.first().kind == ErrorKind::kInternal))
    Poison(s.first());
  return s;
}

Result<runtime::StepsResult> Session::Finish() {
  if (!steps_in_flight_.empty()) steps_in_flight_.pop_front();
  if (!disposed_ && !poison_.ok() && prepared_->runs_in_flight() > 0) {
    // A poisoned session's run is still waited for (and dropped), so a caller finishing its
    // runs one by one comes to the end of them.
    (void)prepared_->FinishSteps();
  }
  SCELLIS_TRY(Usable());
  return Checked(prepared_->FinishSteps());
}

Result<runtime::StepsResult> Session::Checked(Result<runtime::StepsResult> r) {
  if (!r.ok()) {
    // Bad feeds are refused before any device work and leave the session usable; anything the
    // device reported after work began does not.
    const Diagnostic& e = r.errors().front();
    if (e.kind == ErrorKind::kRuntime || e.kind == ErrorKind::kInternal) Poison(e);
    return r;
  }
  // A non-finite value in a session that carries state is a divergence: the next step would
  // build on it. Without carried state it is a result like any other (NaN in, NaN out), as a
  // one-shot run returns it.
  if (plan().graph().carries.empty()) return r;
  for (const auto& [name, steps] : r->watched) {
    for (size_t k = 0; k < steps.size(); ++k) {
      if (steps[k].type.dtype != DType::kF32) continue;  // only floats can be non-finite here
      for (float v : steps[k].view<float>()) {
        if (!std::isfinite(v)) {
          Diagnostic e = RuntimeError("non-finite-readback",
                                      "the watched output \"" + name + "\" is " +
                                          (std::isnan(v) ? "NaN" : "infinite") + " after step " +
                                          std::to_string(k + 1) + " of the run");
          Poison(e);
          return e;
        }
      }
    }
  }
  return r;
}

Result<runtime::HostTensor> Session::Download(const std::string& name) {
  SCELLIS_TRY(Usable());
  auto t = prepared_->Download(name);
  if (!t.ok() && t.errors().front().kind == ErrorKind::kRuntime) Poison(t.errors().front());
  return t;
}

Status Session::Upload(const std::string& name, const HostTensor& value) {
  SCELLIS_TRY(Usable());
  Status s = prepared_->Upload(name, value);
  if (!s.ok() && s.first().kind == ErrorKind::kRuntime) Poison(s.first());
  return s;
}

Status Session::CopyFrom(Session& source, const std::vector<std::string>& names) {
  SCELLIS_TRY(Usable());
  SCELLIS_TRY(source.Usable());
  for (const std::string& name : names) {
    Status s = prepared_->CopyFrom(*source.prepared_, name);
    if (!s.ok() && s.first().kind == ErrorKind::kRuntime) Poison(s.first());
    SCELLIS_TRY(s);
  }
  return Status::Ok();
}

void Session::Dispose() {
  prepared_.reset();
  disposed_ = true;
}

}  // namespace scellis::api
