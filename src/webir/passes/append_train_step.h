// Lowers a workflow's "train" section into one training step at WebIR: the forward graph, exactly
// one backward pass (autodiff), and one optimizer update per parameter. The updated parameters and
// optimizer moments are named outputs carried back into their inputs between steps, so a session
// keeps them resident; the 1-based step number is the scalar input "step", fed every step.
// Data parallelism lowers the step as two halves instead (block::LowerMode::kGradients and
// kApplyGradients), so the gradients can be summed across shards between them.
#pragma once

#include <vector>

#include "base/result.h"
#include "block/program.h"
#include "webir/graph.h"

namespace scellis::webir {

inline constexpr const char* kStepInput = "step";
inline constexpr const char* kLossOutput = "loss";
// A step whose dataset is held on the device (block::LowerOptions::dataset_examples_on_device):
// the batch's row indices into it, i32, fed every step.
inline constexpr const char* kBatchIndexInput = "batch_index";

// The feed name of the table an input gathers its batch from when the dataset is held on the
// device: "<input>@dataset".
std::string DatasetTableName(const std::string& input);

// Appends the graph's pending training step (Graph::train) and clears it; no pending step, no
// change.
Status AppendTrainStep(Graph& g);

// Output names for a parameter's updated value and its optimizer state.
std::string NextName(const std::string& param);
std::string StateName(const std::string& param, const std::string& state);
// The name of a parameter's gradient: an output of the gradient half of a data-parallel step, an
// input of its update half (block::LowerMode).
std::string GradName(const std::string& param);

}  // namespace scellis::webir
