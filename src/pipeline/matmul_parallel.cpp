#include "pipeline/matmul_parallel.h"

namespace scellis::pipeline {

Result<CompiledMatmulWorkPlan> CompileMatmulWorkPlan(std::string_view text,
                                                     const CompileOptions& options,
                                                     workplan::DeviceSet devices) {
  if (devices.ranks.empty())
    return UserError("bad-flag", "", "a work plan needs at least one rank",
                     "use --ranks=1 or more");
  CompiledMatmulWorkPlan c{};
  CompileOptions whole = options;
  whole.up_to = Rung::kExecplan;
  whole.plan.limits = devices.ranks[0];
  SCELLIS_ASSIGN_OR_RETURN(c.whole, Compile(text, whole));
  if (c.whole.program && c.whole.program->train) {
    return UserError("workplan-unsupported", c.whole.program->train->pointer,
                     "a training document partitions its step over the batch, not a matmul",
                     "use scellis train --ranks=N, or lower --to=workplan with --chunks");
  }
  const webir::Graph& g = *c.whole.graph;
  SCELLIS_ASSIGN_OR_RETURN(workplan::MatmulSite site, workplan::FindSplittableMatmul(g));
  const workplan::SplitAxis axis = workplan::ChooseAxis(site);
  const int ranks = static_cast<int>(devices.ranks.size());
  const int64_t extent = axis == workplan::SplitAxis::kRows ? site.m : site.n;
  std::vector<workplan::OutputBlock> blocks;
  std::vector<std::shared_ptr<const execplan::Plan>> plans;
  if (extent >= ranks) {
    blocks = workplan::CutBlocks(extent, ranks);
    for (const workplan::OutputBlock& b : blocks) {
      CompileOptions mine = whole;
      mine.plan.limits = devices.ranks[b.rank];
      SCELLIS_ASSIGN_OR_RETURN(Compiled block,
                               CompileGraph(workplan::RankGraph(g, site, axis, b), mine));
      plans.push_back(std::make_shared<execplan::Plan>(*block.plan));
      c.blocks.push_back(std::move(block));
    }
  }
  SCELLIS_ASSIGN_OR_RETURN(
      c.plan,
      workplan::FromBlockPlans(std::make_shared<execplan::Plan>(*c.whole.plan), std::move(plans),
                               std::move(devices), site, axis, std::move(blocks)));
  SCELLIS_TRY(workplan::Verify(c.plan));
  return c;
}

}  // namespace scellis::pipeline
