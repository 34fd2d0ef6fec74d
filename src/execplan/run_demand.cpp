#include "execplan/run_demand.h"

#include <algorithm>

#include "execplan/passes/passes.h"

namespace scellis::execplan {
namespace {

bool Watched(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string Names(const std::vector<std::string>& names) {
  if (names.empty()) return "nothing";
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "\"" : ", \"") + n + "\"";
  return s;
}

}  // namespace

bool WithinPlan(const Plan& p, const RunDemand& demand) {
  for (const std::string& name : demand.watched)
    if (!Watched(p.watched, name)) return false;
  if (p.limits.backend == "webgpu" && demand.steps_in_flight > p.staged_steps) return false;
  return demand.watched.empty() || demand.steps_in_flight <= WatchedStepsKept(p);
}

bool Covers(const RunDemand& judged, const RunDemand& demand) {
  if (demand.steps_in_flight > judged.steps_in_flight) return false;
  for (const std::string& name : demand.watched)
    if (!Watched(judged.watched, name)) return false;
  return true;
}

Status JudgeRun(const Plan& p, const RunDemand& demand) {
  Plan run = p;
  run.staged_steps = std::max(p.staged_steps, demand.steps_in_flight);
  for (const std::string& name : demand.watched)
    if (!Watched(run.watched, name)) run.watched.push_back(name);
  run.watched_steps_kept = std::max(p.watched_steps_kept, demand.steps_in_flight);
  SCELLIS_TRY(AssignBuffers(run));
  SCELLIS_TRY(JudgeVerdict(run));
  if (run.verdict != Verdict::kRed) return Status::Ok();
  const std::string asked = "this run has " + std::to_string(demand.steps_in_flight) +
                            " steps in flight and watches " + Names(demand.watched) +
                            "; the session was planned for " + std::to_string(p.staged_steps) +
                            " staged steps watching " + Names(p.watched);
  std::vector<Diagnostic> errors;
  for (Diagnostic d : run.findings) {
    if (d.severity != Severity::kError) continue;
    d.help = asked + (d.help.empty() ? "" : "; " + d.help) +
             "; or run fewer steps at once, or watch fewer outputs";
    errors.push_back(std::move(d));
  }
  return Status(std::move(errors));
}

}  // namespace scellis::execplan
