// The descent of a run document to its matmul WorkPlan (rung 5): the document compiled to an
// ExecPlan on one device, its one matmul found, then each rank's block compiled as a graph of its
// own (the cut operand and the product at the block's shape) for that rank's device. What
// `lower --to=workplan` prints for a document without a train section is what `run --ranks=N`
// executes.
#pragma once

#include <string_view>

#include "pipeline/compile.h"
#include "workplan/matmul_split.h"

namespace scellis::pipeline {

struct CompiledMatmulWorkPlan {
  Compiled whole;                 // the document on one device (devices.ranks[0]'s limits)
  std::vector<Compiled> blocks;   // per rank
  workplan::MatmulWorkPlan plan;  // verified
};
// The WorkPlan of the document's matmul over `devices`: `workplan-unsupported` when the document
// is not one such product; a cut that cannot be honoured, or a rank over its budget, is the
// plan's red verdict.
Result<CompiledMatmulWorkPlan> CompileMatmulWorkPlan(std::string_view text,
                                                     const CompileOptions& options,
                                                     workplan::DeviceSet devices);

}  // namespace scellis::pipeline
