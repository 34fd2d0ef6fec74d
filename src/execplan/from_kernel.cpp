#include "execplan/plan.h"

namespace scellis::execplan {
namespace {

// The bytes the run holds for its dataset at this plan's batch: a streamed set's batches are sized
// by the batch dimension as bound here, so a plan made at another batch (the batch search's)
// counts its own. The evaluation batch is held beside, held set or streamed.
int64_t DatasetBytes(const HostDataset& d, const webir::Graph& g) {
  const int64_t eval = SaturatingMul(d.eval_examples, d.example_bytes);
  if (!d.streamed) return SaturatingAdd(d.whole_bytes, eval);
  int64_t batch = d.batch;
  for (const webir::Node& n : g.nodes)
    for (const Dim& dim : n.type.dims)
      if (!d.batch_dim.empty() && dim.symbol == d.batch_dim && dim.size > 0) batch = dim.size;
  return SaturatingAdd(SaturatingMul(SaturatingMul(d.batches, batch), d.example_bytes), eval);
}

}  // namespace

Result<Plan> FromKernel(std::shared_ptr<const kernel::Module> m, const PlanOptions& options) {
  SCELLIS_TRY(kernel::Verify(*m));
  Plan p;
  p.module_ref = std::move(m);
  const webir::Graph& g = p.graph();
  p.limits = options.limits;
  // Every backend stages through the host, so its memory is always judged; read it now when the
  // caller did not say (validate and plan, which open no backend).
  if (p.limits.host_memory_bytes <= 0) {
    p.limits.host_memory_bytes = AvailableHostMemory();
    p.limits.host_memory_source = AvailableHostMemorySource();
  }
  p.caller_host_bytes = options.caller_host_bytes;
  p.caller_host_what = options.caller_host_what;
  p.staged_steps = options.staged_steps;
  p.watched = options.watched;
  p.watched_steps_kept = options.watched_steps_kept;
  p.dataset = options.dataset;
  if (p.dataset) p.dataset_bytes = DatasetBytes(*p.dataset, g);
  p.buffer_of.assign(g.nodes.size(), -1);
  p.thresholds = policy::ResolveThresholds(g.tolerance, g.tier);
  for (size_t s = 0; s < p.module().kernels.size(); ++s)
    p.steps.push_back({static_cast<int>(s), {}, -1});
  MemoryPlan& mem = p.memory;
  if (options.budget_bytes) {
    mem.budget = *options.budget_bytes;
    mem.budget_source = "--budget";
  } else if (g.budget_bytes) {
    mem.budget = *g.budget_bytes;
    mem.budget_source = "the document";
  } else {
    // Undeclared, the budget is 80% of what the buffers live in.
    const DeviceLimits& lim = p.limits;
    const bool on_device = !lim.buffers_in_host_memory && lim.device_memory_bytes > 0;
    const int64_t has = on_device ? lim.device_memory_bytes : lim.host_memory_bytes;
    const std::string& what = on_device ? lim.device_memory_source : lim.host_memory_source;
    mem.budget = has / 10 * 8;
    mem.budget_source = "detected: 80% of " + what;
  }
  return p;
}

}  // namespace scellis::execplan
