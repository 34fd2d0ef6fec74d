// The fix a red training plan states: the largest batch that fits, found by planning the workflow
// again at candidate batch sizes (each candidate a real plan, never a division of byte counts).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "pipeline/compile.h"

namespace scellis::api {

// The dimension a training workflow's steps bind to the batch: the first dimension of its images
// input, when the document leaves it symbolic ("B"); nullopt for any other document.
std::optional<std::string> BatchDimension(const block::Program& p);

// The largest batch below `red_batch` at which `text` plans green or yellow, with `options` and
// the dimension `dim` bound to the candidate. Binary search over [1, red_batch): batch 1 is
// planned first (BatchFit::largest is 0 when even it is red), then the bracket is halved, so the
// answer B has been planned not red and B + 1 planned red (or is `red_batch`, the caller's red
// plan). The largest batch that plans green is searched the same way below that answer. It
// assumes what every class of a training step does: memory does not shrink as the batch grows.
// A candidate that fails to compile fails the search. Everything but the binding is planned as
// given, host memory a caller stages per batch (PlanOptions::caller_host_bytes) included.
Result<execplan::BatchFit> LargestBatchThatFits(std::string_view text,
                                                const pipeline::CompileOptions& options,
                                                const std::string& dim, int64_t red_batch);

// When `c` planned red with a memory finding and is a training workflow with a symbolic batch,
// searches for the largest batch that fits and attaches it to the plan (execplan::AttachBatchFit):
// the findings' help then names it. Leaves any other plan as it is, and a host-memory refusal
// whose options stage caller memory sized for the refused batch (a trainer's gathered batches).
// `text` and `options` are what `c` was compiled from.
Status ExplainRedPlan(std::string_view text, const pipeline::CompileOptions& options,
                      pipeline::Compiled& c);

}  // namespace scellis::api
