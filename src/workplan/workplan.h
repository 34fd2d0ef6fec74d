// Rung 5: WorkPlan. A training step partitioned into shards across a device set (ranks), with the
// collectives between them as explicit steps. Data parallel over the batch: the batch is cut into
// `chunks` equal chunks, each rank computes the gradients of a contiguous run of them with the
// gradient half of the step (an ExecPlan at the chunk's batch), the gradients are summed over the
// chunks by one fixed binary tree, and every rank applies the same update (the update half, an
// ExecPlan of the params alone), so the replicas stay equal.
//
// The tree makes the sum independent of the number of ranks and of the order messages arrive in:
// a node sums [lo, hi) as sum[lo, mid) + sum[mid, hi) with mid = lo + (hi - lo) / 2. Each rank
// sums the largest subtrees that lie within its chunks (its partials), every rank receives every
// partial (an all-gather of host buffers) and evaluates the rest of the tree in the same order.
// One rank declared with the same chunks evaluates the same tree alone, bit for bit the same sum.
//
// A batch that does not divide into the chunks is refused (red): chunks of unequal size would
// weigh their examples unequally in the mean of chunk means. Fewer chunks than ranks is refused
// too (a rank with nothing to compute); chunks that do not divide among the ranks are allowed and
// reported (yellow: the ranks with one chunk more set the pace).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"
#include "execplan/plan.h"

namespace scellis::workplan {

// What each rank computes on: the backend, its device and their limits.
struct DeviceSet {
  std::vector<execplan::DeviceLimits> ranks;
  // `n` ranks alike.
  static DeviceSet Uniform(int n, const execplan::DeviceLimits& limits);
};

// One rank's part of the batch: chunks [first_chunk, first_chunk + chunks), which are the
// examples [first_example, first_example + examples) of every batch.
struct Shard {
  int rank = 0;
  int first_chunk = 0, chunks = 0;
  int64_t first_example = 0, examples = 0;
};

// A node of the reduction tree: the sum of chunks [lo, hi).
struct Span {
  int lo = 0, hi = 0;
  bool operator==(const Span&) const = default;
};
// sum[lo, hi) = sum[lo, mid) + sum[mid, hi), in this order of operands.
struct Add {
  int lo = 0, mid = 0, hi = 0;
};

// The largest subtree within one rank's chunks: what that rank contributes to the all-gather.
struct Partial {
  Span span;
  int rank = 0;
};

enum class StepKind {
  kGradients,    // a rank runs the gradient half over each of its chunks
  kLocalReduce,  // a rank sums its chunks' gradients into its partials
  kAllGather,    // every rank sends its partials and receives everyone's (host buffers)
  kCombine,      // every rank sums the partials by the tree, above them
  kScale,        // the sum of chunk means divided by the chunks: the batch mean
  kApply,        // every rank runs the update half with the same gradient
};
const char* StepKindName(StepKind k);

struct WorkStep {
  StepKind kind = StepKind::kGradients;
  int rank = -1;          // -1: every rank
  std::vector<Add> adds;  // kLocalReduce, kCombine: in evaluation order
  int64_t bytes = 0;      // kAllGather: what this step moves into each rank
};

using Verdict = execplan::Verdict;

// What one rank holds: the two halves' memory plans, the gradients of its chunks kept for the
// local reduction, the gathered partials and the summed gradient.
struct RankMemory {
  int rank = 0;
  int64_t gradient_plan = 0;    // allocated + host staging of the gradient half
  int64_t update_plan = 0;      // allocated + host staging of the update half
  int64_t chunk_gradients = 0;  // one gradient set per chunk of the rank, read back
  int64_t gathered = 0;         // every partial, after the all-gather, and the sum
  int64_t total = 0;
  int64_t budget = 0;  // the device's budget (the plans'); 0: none known
  Verdict verdict = Verdict::kGreen;
  std::vector<Diagnostic> findings;
};

struct WorkPlanOptions {
  int chunks = 0;  // 0: one per rank
};

struct WorkPlan {
  // The halves of the step, planned for the rank's device: the gradients at the chunk's batch,
  // the update of the params. Shared with whoever planned them.
  std::shared_ptr<const execplan::Plan> gradients, update;
  std::string gradients_hash, update_hash;  // PlanHash of each half
  DeviceSet devices;
  std::vector<std::string> params;  // the gradients reduced, in order (feed names)
  int64_t gradient_elements = 0;    // one gradient set: every param's, and the loss
  int64_t batch = 0;
  int chunks = 0;
  int64_t chunk_examples = 0;
  std::vector<Shard> shards;      // per rank
  std::vector<Partial> partials;  // in tree order, which is rank order
  std::vector<WorkStep> steps;
  std::vector<RankMemory> memory;  // per rank
  Verdict verdict = Verdict::kGreen;
  std::vector<Diagnostic> findings;  // the plan's own (chunking), besides each rank's

  int ranks() const { return static_cast<int>(devices.ranks.size()); }
  const RungHeader& header() const { return gradients->header(); }
};

// The WorkPlan of a step whose halves are `gradients` (planned at batch / chunks examples) and
// `update`, over `devices`, for a batch of `batch` examples. A chunking that cannot be honoured
// is a red verdict with its finding, not an error: the plan still prints.
Result<WorkPlan> FromExecPlans(std::shared_ptr<const execplan::Plan> gradients,
                               std::shared_ptr<const execplan::Plan> update, DeviceSet devices,
                               int64_t batch, const WorkPlanOptions& options);
std::string Print(const WorkPlan& w);
Json ToJson(const WorkPlan& w);
Status Verify(const WorkPlan& w);

// The reduction, as the plan fixes it. `chunk_values[i]` is chunk i's gradient set (of
// gradient_elements floats) for each chunk of `rank`; returns the rank's partials, concatenated
// in tree order.
std::vector<float> ReduceLocal(const WorkPlan& w, int rank,
                               const std::vector<std::vector<float>>& chunk_values);
// Every partial (the all-gather's result, in tree order) summed by the rest of the tree and
// divided by the chunks: the batch's gradient set.
std::vector<float> Combine(const WorkPlan& w, std::span<const float> partials);
// What a plan computes, hashed: its kernels, steps and buffers, the tier and thresholds; not the
// memory it was judged against (which depends on the machine and on the caller's staging), nor
// how the run keeps its dataset (held whole or streamed).
std::string PlanHash(const execplan::Plan& p);
// How many floats each rank contributes to the all-gather.
std::vector<int64_t> GatherCounts(const WorkPlan& w);

}  // namespace scellis::workplan
