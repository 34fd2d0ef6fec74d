// The passes of the execution-plan rung, in the order the pipeline runs them. Memory classes come
// before buffer assignment because a buffer is only reused by a value of its own class.
#pragma once

#include "base/result.h"
#include "execplan/plan.h"

namespace scellis::execplan {

// Static liveness: for every stored value, the step that writes it and the last step that reads it.
// A hoisted kernel's value read by the loop body lives to the body's last step (every iteration
// reads it).
Status Liveness(Plan& p);

// The memory class of every stored value: parameters, inputs, gradients, optimizer state,
// activations kept for the backward pass (read by a gradient op), working.
Status MemoryClasses(Plan& p);

// Buffers from lifetimes: sources, named outputs and optimizer state are pinned for the whole run;
// any other value takes the best-fitting free buffer of its class, freed once its last reader ran.
// Fills the steps' buffer ids and the memory plan's totals and live peak.
Status AssignBuffers(Plan& p);

// Green, yellow or red against the budget and the device's limits, with findings that say why.
Status JudgeVerdict(Plan& p);

}  // namespace scellis::execplan
