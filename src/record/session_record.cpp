#include "record/session_record.h"

#include "workplan/workplan.h"

namespace scellis::record {
std::string SessionRecorder::OutputName(size_t run, size_t step, const std::string& watched) {
  return "run " + std::to_string(run + 1) + " step " + std::to_string(step + 1) + " " + watched;
}

Result<SessionRecorder> SessionRecorder::Start(const store::Store& store, std::string document,
                                               const pipeline::CompileOptions& compile,
                                               const runtime::SelectOptions& select,
                                               const runtime::Feeds& initial) {
  SessionRecorder r(store);
  r.document_ = std::move(document);
  SCELLIS_ASSIGN_OR_RETURN(r.initial_, DigestsOf(store, initial));
  r.settings_ = {{"compile", CompileSettingsJson(compile)},
                 {"backend", select.requested},
                 {"allow_software_adapter", select.allow_software_adapter}};
  return r;
}

Status SessionRecorder::Add(const std::vector<runtime::Feeds>& steps,
                            const std::vector<std::string>& watch,
                            const runtime::StepsResult& result) {
  Json run = {{"steps", Json::array()}, {"watch", watch}};
  for (const runtime::Feeds& feeds : steps) {
    SCELLIS_ASSIGN_OR_RETURN(Json digests, DigestsOf(store_, feeds));
    run["steps"].push_back(std::move(digests));
  }
  const size_t index = runs_.size();
  for (const auto& [name, values] : result.watched)
    for (size_t step = 0; step < values.size(); ++step) {
      SCELLIS_ASSIGN_OR_RETURN(Json d, TensorDigest(store_, values[step]));
      outputs_[OutputName(index, step, name)] = std::move(d);
    }
  runs_.push_back(std::move(run));
  return Status::Ok();
}

void SessionRecorder::AddStarted(std::vector<runtime::Feeds> steps,
                                 std::vector<std::string> watch) {
  started_.push_back({std::move(steps), std::move(watch)});
}

Status SessionRecorder::FinishStarted(const runtime::StepsResult* result) {
  if (started_.empty())
    return InternalError("record.SessionRecorder", "a run finished that was never started");
  const Started run = std::move(started_.front());
  started_.pop_front();
  return result ? Add(run.steps, run.watch, *result) : Status::Ok();
}

Result<std::string> SessionRecorder::Finish(const api::Session& session) const {
  const execplan::Plan& plan = session.plan();
  const runtime::Selection& sel = session.selection();
  Json record = {{"command", "session"},
                 {"content_id", session.compiled().doc.content_id},
                 {"plan_hash", workplan::PlanHash(plan)},
                 {"tier", policy::TierName(plan.graph().tier)},
                 {"tolerance",
                  {{"class", policy::ToleranceName(plan.graph().tolerance)},
                   {"atol", plan.thresholds.atol},
                   {"rtol", plan.thresholds.rtol}}},
                 {"device_profile", sel.profile.key},
                 {"backend", sel.backend},
                 {"executor", session.executor()},
                 {"fallback_reason", sel.fallback_reason ? Json(*sel.fallback_reason) : Json()},
                 {"receipts", Json::array()},
                 {"user_ops", CallableUserOpsJson(plan.graph().ops.get())},
                 {"inputs", {{"initial", initial_}}},
                 {"runs", runs_},
                 {"outputs", outputs_},
                 {"settings", settings_}};
  return PutRecord(store_, document_, std::move(record));
}

}  // namespace scellis::record
