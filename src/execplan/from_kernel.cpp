#include <fstream>

#include "execplan/plan.h"

namespace scellis::execplan {

int64_t DetectHostBudget() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024 / 10 * 8;
  }
  return int64_t{4} << 30;
}

Result<Plan> FromKernel(std::shared_ptr<const kernel::Module> m, const PlanOptions& options) {
  SCELLIS_TRY(kernel::Verify(*m));
  Plan p;
  p.module_ref = std::move(m);
  const webir::Graph& g = p.graph();
  p.limits = options.limits;
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
    mem.budget = DetectHostBudget();
    mem.budget_source =
        options.limits.device == "cpu" ? "detected: 80% of available host memory" : "detected";
  }
  return p;
}

}  // namespace scellis::execplan
