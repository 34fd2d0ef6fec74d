// The descent of a training document to its WorkPlan (rung 5): the step's two halves, each
// compiled to an ExecPlan like any document (the gradient half at one chunk's batch), then
// partitioned over the ranks. The trainer prepares its sessions from the same options, so what
// `lower --to=workplan` prints is what a data-parallel run executes.
#pragma once

#include <string_view>

#include "pipeline/compile.h"
#include "workplan/workplan.h"

namespace scellis::pipeline {

// The compile options of each half of a training document's step, for `chunks` chunks.
struct StepHalves {
  Compiled head;  // the document at the block rung: its train section
  block::TrainSpec spec;
  CompileOptions gradients;  // block::LowerMode::kGradients, the batch bound to one chunk's
  CompileOptions update;     // block::LowerMode::kApplyGradients
};
// `no-train-section` when the document trains nothing; a chunking that does not divide the batch
// is left to the WorkPlan's verdict (the gradient half is then planned at the rounded-down chunk).
Result<StepHalves> SplitTrainStep(std::string_view text, const CompileOptions& options, int chunks);

struct CompiledWorkPlan {
  Compiled gradients, update;
  workplan::WorkPlan plan;  // verified
};
// The WorkPlan of the document's step over `devices` in `chunks` chunks (0: one per rank).
Result<CompiledWorkPlan> CompileWorkPlan(std::string_view text, const CompileOptions& options,
                                         workplan::DeviceSet devices, int chunks);
// The same of halves already split (and adjusted: a rank's dataset, its host copies), each compiled
// with the devices' limits.
Result<CompiledWorkPlan> CompileWorkPlan(std::string_view text, StepHalves halves,
                                         workplan::DeviceSet devices, int chunks);

}  // namespace scellis::pipeline
