#include "runtime/backends/cpu/executor.h"

#include <chrono>
#include <cmath>
#include <thread>

#include "runtime/prepared.h"

namespace scellis::runtime::cpu {
namespace {

// The plan's buffers in element type T, with sources loaded.
template <typename T>
struct Resident {
  const execplan::Plan* plan;
  std::vector<std::vector<T>> buffers;

  std::vector<T>& of(int node) { return buffers[plan->buffer_of[node]]; }

  Status Load(const webir::Node& n, const Feeds& feeds, const ExactFeeds<T>* exact = nullptr) {
    // Exact feeds (f64 values for gradient checks) bypass the f32 host data.
    if (exact) {
      if (auto it = exact->find(FeedName(n)); it != exact->end()) {
        if (static_cast<int64_t>(it->second.size()) != n.type.elements())
          return UserError("feed-shape-mismatch", n.origin,
                           "the feed \"" + FeedName(n) + "\" has " +
                               std::to_string(it->second.size()) + " values, the input holds " +
                               std::to_string(n.type.elements()));
        std::copy(it->second.begin(), it->second.end(), of(n.id).begin());
        return Status::Ok();
      }
    }
    SCELLIS_ASSIGN_OR_RETURN(std::vector<float> data, SourceData(n, feeds));
    std::copy(data.begin(), data.end(), of(n.id).begin());
    return Status::Ok();
  }

  static Result<Resident> Make(const execplan::Plan& plan, const Feeds& feeds, bool defer_fed,
                               const ExactFeeds<T>* exact = nullptr) {
    if (plan.verdict == execplan::Verdict::kRed)
      return InternalError("cpu.Prepare", "asked to run a red plan");
    Resident r{&plan, std::vector<std::vector<T>>(plan.buffers.size())};
    for (const execplan::Buffer& b : plan.buffers)
      r.buffers[b.id].resize(static_cast<size_t>(b.bytes / 4));
    std::vector<int> fed = FedInputs(plan.graph());
    for (const webir::Node& n : plan.graph().nodes) {
      if (n.role != webir::Role::kInput && n.role != webir::Role::kParam) continue;
      bool is_fed = std::find(fed.begin(), fed.end(), n.id) != fed.end();
      if (defer_fed && is_fed) continue;
      if (!n.data && !n.init && !feeds.count(FeedName(n)) && defer_fed)
        continue;  // carried, fed at first run
      SCELLIS_TRY(r.Load(n, feeds, exact));
    }
    return r;
  }

  Status Step(const kernel::ref::Parallel& parallel) {
    for (const execplan::Step& s : plan->steps) {
      const kernel::Kernel& k = plan->module().kernels[s.kernel];
      std::vector<const T*> inputs;
      for (int b : s.reads) inputs.push_back(buffers[b].data());
      SCELLIS_TRY(
          kernel::ref::RunKernel<T>(plan->module(), k, inputs, buffers[s.write].data(), parallel));
    }
    // Carries read the step's results before any is overwritten.
    std::vector<std::vector<T>> next;
    for (const webir::Carry& c : plan->graph().carries) next.push_back(of(c.from));
    for (size_t i = 0; i < next.size(); ++i) of(plan->graph().carries[i].to) = std::move(next[i]);
    return Status::Ok();
  }
};

class CpuPrepared : public Prepared {
 public:
  CpuPrepared(const execplan::Plan& plan, Resident<float> resident,
              const kernel::ref::Parallel& parallel)
      : plan_(plan), resident_(std::move(resident)), parallel_(parallel) {
    resident_.plan = &plan_;
  }

  std::string backend() const override { return "cpu"; }

  Result<StepsResult> RunSteps(const std::vector<Feeds>& feeds,
                               const std::vector<std::string>& watch) override {
    auto start = std::chrono::steady_clock::now();
    const webir::Graph& g = plan_.graph();
    std::vector<int> watch_nodes;
    for (const std::string& w : watch) {
      int node = FindNamedNode(g, w);
      if (node < 0)
        return UserError("unknown-output", "", "no output or input is named \"" + w + "\"");
      watch_nodes.push_back(node);
    }
    StepsResult r;
    for (const std::string& w : watch) r.watched.push_back({w, {}});
    for (const Feeds& step_feeds : feeds) {
      for (const webir::Node& n : g.nodes) {
        if (n.role != webir::Role::kInput || n.data) continue;
        if (IsCarried(g, n.id) && initialized_) continue;
        SCELLIS_TRY(resident_.Load(n, step_feeds));
      }
      initialized_ = true;
      SCELLIS_TRY(resident_.Step(parallel_));
      for (size_t i = 0; i < watch_nodes.size(); ++i) {
        const webir::Node& n = g.at(watch_nodes[i]);
        // Carried inputs were just updated; outputs hold this step's value.
        const std::vector<float>& b = resident_.of(n.id);
        r.watched[i].second.push_back({n.type, {b.begin(), b.begin() + n.type.elements()}});
      }
    }
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    r.stats = {{"steps", feeds.size()}, {"wall_ms", ms}, {"threads", parallel_.threads()}};
    return r;
  }

  Result<HostTensor> Download(const std::string& name) override {
    int node = FindNamedNode(plan_.graph(), name);
    if (node < 0)
      return UserError("unknown-output", "", "no output or input is named \"" + name + "\"");
    const webir::Node& n = plan_.graph().at(node);
    const std::vector<float>& b = resident_.of(node);
    return HostTensor{n.type, {b.begin(), b.begin() + n.type.elements()}};
  }

  Status Upload(const std::string& name, const std::vector<float>& data) override {
    SCELLIS_ASSIGN_OR_RETURN(int node, UploadTarget(plan_.graph(), name, data.size()));
    std::copy(data.begin(), data.end(), resident_.of(node).begin());
    initialized_ |= IsCarried(plan_.graph(), node);
    return Status::Ok();
  }

 private:
  execplan::Plan plan_;
  Resident<float> resident_;
  const kernel::ref::Parallel& parallel_;
  bool initialized_ = false;
};

}  // namespace

CpuExecutor::CpuExecutor(Options options)
    : parallel_(options.threads > 0
                    ? options.threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}

template <typename T>
Result<std::vector<std::vector<T>>> RunPlan(const execplan::Plan& plan, const Feeds& feeds,
                                            const kernel::ref::Parallel& parallel,
                                            const ExactFeeds<T>& exact) {
  SCELLIS_ASSIGN_OR_RETURN(Resident<T> r,
                           Resident<T>::Make(plan, feeds, /*defer_fed=*/false, &exact));
  SCELLIS_TRY(r.Step(parallel));
  std::vector<std::vector<T>> outputs;
  for (const webir::Output& o : plan.graph().outputs) {
    const std::vector<T>& b = r.of(o.node);
    outputs.emplace_back(b.begin(), b.begin() + plan.graph().at(o.node).type.elements());
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

Result<std::unique_ptr<Prepared>> CpuExecutor::Prepare(const execplan::Plan& plan) {
  SCELLIS_ASSIGN_OR_RETURN(Resident<float> r, Resident<float>::Make(plan, {}, /*defer_fed=*/true));
  return std::unique_ptr<Prepared>(new CpuPrepared(plan, std::move(r), parallel_));
}

Result<RunResult> CpuExecutor::Run(const execplan::Plan& plan, const Feeds& feeds) {
  auto start = std::chrono::steady_clock::now();
  SCELLIS_ASSIGN_OR_RETURN(auto outputs, RunPlan<float>(plan, feeds, parallel_));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
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

}  // namespace scellis::runtime::cpu
