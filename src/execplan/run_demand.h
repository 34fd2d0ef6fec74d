// What one run of a prepared plan holds beyond the plan's own values, judged before the run starts.
// A plan counts the steps whose feeds a GPU stages at once and the outputs copied after every step
// as its caller names them when the session is prepared (PlanOptions::staged_steps, ::watched,
// ::watched_steps_kept). A caller may later run more steps at once or watch other outputs (a Python
// session names them per run); that memory is then counted here, against the same budget and
// machine, so a run over them is refused before anything is sent, never discovered mid-run.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "execplan/plan.h"

namespace scellis::execplan {

struct RunDemand {
  int64_t steps_in_flight = 0;       // this run's steps and those of the runs still in flight
  std::vector<std::string> watched;  // the outputs this run copies after every step
};

// Whether the plan counted at least `demand`: nothing to judge.
bool WithinPlan(const Plan& p, const RunDemand& demand);

// Whether `demand` asks no more than `judged` (no more steps, no other outputs): a demand judged to
// fit covers it.
bool Covers(const RunDemand& judged, const RunDemand& demand);

// `p`'s memory counted again with `demand` (its staged steps, watched outputs and the steps whose
// watched values the host keeps, each at least the plan's own) and judged as the plan was: Ok
// unless that verdict is red, else its errors, each help saying what the run asks beyond the plan.
Status JudgeRun(const Plan& p, const RunDemand& demand);

}  // namespace scellis::execplan
