// Rung 5 for a run (not training): one large matmul out = a @ b cut into blocks of its output, one
// block per rank, where one device's memory or binding cap is not enough for the whole product.
// By rows: each rank takes a block of a's rows (and of out's), b is replicated. By columns: each
// rank takes a block of b's columns (and of out's), a is replicated. The larger operand is the one
// cut, so each rank holds the least. The blocks are gathered to rank 0 as an explicit step and
// assembled there.
//
// Each output element is still one dot product over all of k, in k's order, computed by the same
// kernel: the blocks reassembled are bit for bit the whole product on the CPU reference.
//
// What partitions: a document whose graph is that one matmul of two rank-2 f32 sources (inputs,
// params or constants) with its product the only output. Anything else is refused by name
// (`workplan-unsupported`), pointing at the node that is not part of such a product.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/host_tensor.h"
#include "base/json_util.h"
#include "base/result.h"
#include "execplan/plan.h"
#include "workplan/workplan.h"

namespace scellis::workplan {

// The matmul a run partitions: out [m, n] = a [m, k] @ b [k, n].
struct MatmulSite {
  int matmul = -1, a = -1, b = -1;  // WebIR node ids
  int64_t m = 0, k = 0, n = 0;
  std::string output;  // the output's name
};
// The document's one matmul, or `workplan-unsupported` at the node that stands in the way.
Result<MatmulSite> FindSplittableMatmul(const webir::Graph& g);

enum class SplitAxis {
  kRows,     // blocks of a's rows and out's; b replicated
  kColumns,  // blocks of b's columns and out's; a replicated
};
const char* SplitAxisName(SplitAxis a);
// Rows when a is at least as large as b, else columns: the operand cut is the larger one.
SplitAxis ChooseAxis(const MatmulSite& s);

// One rank's block: rows (or columns) [lo, hi) of the output.
struct OutputBlock {
  int rank = 0;
  int64_t lo = 0, hi = 0;
};
// `extent` rows (or columns) in `ranks` contiguous blocks, in rank order, sizes differing by at
// most one.
std::vector<OutputBlock> CutBlocks(int64_t extent, int ranks);

// The graph a rank runs: the cut operand an input of its block's shape without data (fed its
// slice), the matmul and the output of the block's shape; the replicated operand as it was.
webir::Graph RankGraph(const webir::Graph& g, const MatmulSite& s, SplitAxis axis,
                       const OutputBlock& block);

enum class MatmulStepKind {
  kCompute,   // a rank runs its plan on its block
  kGather,    // every rank sends its block to rank 0 (host buffers)
  kAssemble,  // rank 0 places the blocks into the whole output
};
const char* MatmulStepKindName(MatmulStepKind k);
struct MatmulStep {
  MatmulStepKind kind = MatmulStepKind::kCompute;
  int rank = -1;      // -1: every rank
  int64_t bytes = 0;  // kGather: what rank 0 receives
};

// What one rank holds: its plan (the cut operand's slice, the replicated operand, its output
// block) and, on rank 0, the gathered output on the host.
struct BlockMemory {
  int rank = 0;
  int64_t plan = 0;      // allocated by the rank's plan
  int64_t staging = 0;   // the plan's host copies of inputs and outputs
  int64_t gathered = 0;  // rank 0: the whole output, assembled on the host
  int64_t budget = 0;
  Verdict verdict = Verdict::kGreen;
  std::vector<Diagnostic> findings;
};

struct MatmulWorkPlan {
  std::shared_ptr<const execplan::Plan> whole;  // the product on one device (its verdict)
  std::vector<std::shared_ptr<const execplan::Plan>> rank_plans;  // per rank
  std::vector<std::string> rank_hashes;                           // PlanHash of each
  DeviceSet devices;
  MatmulSite site;
  SplitAxis axis = SplitAxis::kRows;
  std::vector<OutputBlock> blocks;  // per rank
  std::vector<MatmulStep> steps;
  std::vector<BlockMemory> memory;  // per rank
  Verdict verdict = Verdict::kGreen;
  std::vector<Diagnostic> findings;  // the plan's own (too few rows), besides each rank's

  int ranks() const { return static_cast<int>(devices.ranks.size()); }
  // Rows or columns of the output, the extent the blocks cut.
  int64_t extent() const { return axis == SplitAxis::kRows ? site.m : site.n; }
};

// The WorkPlan of `site` cut along `axis` into `blocks`, from the plan of the whole product and
// each rank's plan of its block (planned for its device). A cut that leaves a rank without rows
// or columns is a red verdict with its finding, not an error.
Result<MatmulWorkPlan> FromBlockPlans(std::shared_ptr<const execplan::Plan> whole,
                                      std::vector<std::shared_ptr<const execplan::Plan>> rank_plans,
                                      DeviceSet devices, const MatmulSite& site, SplitAxis axis,
                                      std::vector<OutputBlock> blocks);
std::string Print(const MatmulWorkPlan& w);
Json ToJson(const MatmulWorkPlan& w);
// The blocks cover the output exactly once, in rank order; each rank's plan computes its block's
// shape from operands of the right shapes; a plan that is not red has no red rank.
Status Verify(const MatmulWorkPlan& w);

// The cut operand's part for `rank`: rows [lo, hi) of a, or columns [lo, hi) of b.
HostTensor SliceOperand(const MatmulWorkPlan& w, const HostTensor& whole, int rank);
// How many floats each rank's block holds (the gather's counts).
std::vector<int64_t> BlockCounts(const MatmulWorkPlan& w);
// Every rank's block, concatenated in rank order (the gather's result), as the whole output.
HostTensor Assemble(const MatmulWorkPlan& w, std::span<const float> blocks);

}  // namespace scellis::workplan
