#include "backend/cpu/executor.h"

#include <chrono>
#include <thread>

namespace scellis::backend::cpu {

CpuExecutor::CpuExecutor(Options options)
    : parallel_(options.threads > 0 ? options.threads
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}

template <typename T>
Result<std::vector<std::vector<T>>> RunPlan(const execplan::Plan& plan, const Feeds& feeds,
                                            const kernel::ref::Parallel& parallel,
                                            const ExactFeeds<T>& exact) {
  if (plan.verdict == execplan::Verdict::kRed)
    return InternalError("cpu.RunPlan", "asked to run a red plan");
  const webir::Graph& g = plan.graph();
  std::vector<std::vector<T>> buffers(plan.buffers.size());
  for (const execplan::Buffer& b : plan.buffers)
    buffers[b.id].resize(static_cast<size_t>(b.bytes / 4));
  for (const webir::Node& n : g.nodes) {
    if (n.role != webir::Role::kInput && n.role != webir::Role::kParam) continue;
    if (auto it = exact.find(FeedName(n)); it != exact.end()) {
      if (static_cast<int64_t>(it->second.size()) != n.type.elements())
        return UserError("feed-shape-mismatch", n.origin,
                         "the feed \"" + FeedName(n) + "\" has " + std::to_string(it->second.size()) +
                             " values, the input holds " + std::to_string(n.type.elements()));
      std::copy(it->second.begin(), it->second.end(), buffers[plan.buffer_of[n.id]].begin());
      continue;
    }
    SCELLIS_ASSIGN_OR_RETURN(std::vector<float> data, SourceData(n, feeds));
    std::copy(data.begin(), data.end(), buffers[plan.buffer_of[n.id]].begin());
  }
  for (const execplan::Step& s : plan.steps) {
    const kernel::Kernel& k = plan.module.kernels[s.kernel];
    std::vector<const T*> inputs;
    for (int b : s.reads) inputs.push_back(buffers[b].data());
    SCELLIS_TRY(kernel::ref::RunKernel<T>(plan.module, k, inputs, buffers[s.write].data(), parallel));
  }
  std::vector<std::vector<T>> outputs;
  for (const webir::Output& o : g.outputs) {
    const std::vector<T>& b = buffers[plan.buffer_of[o.node]];
    outputs.emplace_back(b.begin(), b.begin() + g.at(o.node).type.elements());
  }
  return outputs;
}

template Result<std::vector<std::vector<float>>> RunPlan<float>(const execplan::Plan&, const Feeds&,
                                                                 const kernel::ref::Parallel&,
                                                                 const ExactFeeds<float>&);
template Result<std::vector<std::vector<double>>> RunPlan<double>(const execplan::Plan&,
                                                                  const Feeds&,
                                                                  const kernel::ref::Parallel&,
                                                                  const ExactFeeds<double>&);

Result<RunResult> CpuExecutor::Run(const execplan::Plan& plan, const Feeds& feeds) {
  auto start = std::chrono::steady_clock::now();
  SCELLIS_ASSIGN_OR_RETURN(auto outputs, RunPlan<float>(plan, feeds, parallel_));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  RunResult r;
  r.backend = "cpu";
  r.executor = "reference";
  const webir::Graph& g = plan.graph();
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    HostTensor t;
    t.type = g.at(g.outputs[i].node).type;
    t.data = std::move(outputs[i]);
    r.outputs.emplace_back(g.outputs[i].name, std::move(t));
  }
  r.stats = {{"kernels", plan.steps.size()},
             {"threads", parallel_.threads()},
             {"wall_ms", ms},
             {"memory_allocated_bytes", plan.memory.allocated}};
  return r;
}

}  // namespace scellis::backend::cpu
