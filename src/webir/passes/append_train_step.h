// Lowers a workflow's "train" section into one training step at WebIR: the forward graph, exactly
// one backward pass (autodiff), and one optimizer update per parameter. The updated parameters and
// optimizer moments are named outputs carried back into their inputs between steps, so a session
// keeps them resident; the 1-based step number is the scalar input "step", fed every step.
#pragma once

#include <vector>

#include "base/result.h"
#include "block/program.h"
#include "webir/graph.h"

namespace scellis::webir {

inline constexpr const char* kStepInput = "step";
inline constexpr const char* kLossOutput = "loss";

// Appends the graph's pending training step (Graph::train) and clears it; no pending step, no
// change.
Status AppendTrainStep(Graph& g);

// Output names for a parameter's updated value and its optimizer state.
std::string NextName(const std::string& param);
std::string StateName(const std::string& param, const std::string& state);

}  // namespace scellis::webir
