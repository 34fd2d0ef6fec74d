#include "runtime/backends/null/executor.h"

namespace scellis::runtime::null {
namespace {

class NullPrepared : public Prepared {
 public:
  using Prepared::Prepared;
  std::string backend() const override { return "null"; }
  std::string executor() const override { return "null"; }

 protected:
  Result<StepsResult> DoRunSteps(const std::vector<Feeds>& feeds,
                                 const std::vector<std::string>& names,
                                 const std::vector<int>& watch) override {
    StepsResult r;
    for (size_t i = 0; i < watch.size(); ++i) {
      r.watched.push_back(
          {names[i], std::vector<HostTensor>(feeds.size(),
                                             HostTensor::Zeros(plan_.graph().at(watch[i]).type))});
    }
    r.stats = {{"steps", feeds.size()}};
    return r;
  }
  Result<HostTensor> DoDownload(int node) override {
    return HostTensor::Zeros(plan_.graph().at(node).type);
  }
  Status DoUpload(int, const HostTensor&) override { return Status::Ok(); }
};

}  // namespace

DeviceProfile NullExecutor::profile() const {
  DeviceProfile p;
  p.key = "null";
  p.device = "computes nothing";
  return p;
}

// Nothing is computed, so no buffers; only the host copies of feeds and outputs are held.
execplan::DeviceLimits NullExecutor::limits() const {
  execplan::DeviceLimits l = execplan::HostMemoryLimits("null", "the null backend");
  l.buffers_in_host_memory = false;
  return l;
}

Result<RunResult> NullExecutor::DoRun(const execplan::Plan& plan, const Feeds&, const RunOptions&) {
  RunResult r;
  r.backend = "null";
  r.executor = "null";
  const webir::Graph& g = plan.graph();
  for (const webir::Output& o : g.outputs)
    r.outputs.emplace_back(o.name, HostTensor::Zeros(g.at(o.node).type));
  r.stats = {{"kernels", plan.steps.size()}};
  return r;
}

Result<std::unique_ptr<Prepared>> NullExecutor::DoPrepare(const execplan::Plan& plan, const Feeds&,
                                                          const RunOptions&) {
  return std::unique_ptr<Prepared>(new NullPrepared(plan));
}

}  // namespace scellis::runtime::null
