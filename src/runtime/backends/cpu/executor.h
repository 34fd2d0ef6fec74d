// The CPU reference executor: runs any ExecPlan with the reference kernels. Deterministic on every
// machine and for every thread count. It computes in f32 (or f64 for gradient checks) whatever
// the storage dtype: non-f32 sources are converted by value on the way in and back on the way
// out, as the WGSL kernels convert their loads and stores.
#pragma once

#include "kernel/ref/ref.h"
#include "runtime/executor.h"

namespace scellis::runtime::cpu {

struct Options {
  int threads = 0;  // 0: the machine's hardware threads
};

class CpuExecutor : public Executor {
 public:
  explicit CpuExecutor(Options options = {});
  std::string name() const override { return "cpu"; }
  std::vector<std::string> executors() const override { return {"reference"}; }
  DeviceProfile profile() const override;
  execplan::DeviceLimits limits() const override;
  int threads() const { return parallel_.threads(); }

 protected:
  Result<RunResult> DoRun(const execplan::Plan& plan, const Feeds& feeds,
                          const RunOptions& options) override;
  Result<std::unique_ptr<Prepared>> DoPrepare(const execplan::Plan& plan, const Feeds& feeds,
                                              const RunOptions& options) override;

 private:
  kernel::ref::Parallel parallel_;
};

// The profile of the reference: the same on every machine.
DeviceProfile ReferenceProfile();

// Source values given directly in the element type, by feed name; they take precedence over
// `feeds`, inline data and initializers. Gradient checks use them to perturb an input by less
// than an f32 ulp.
template <typename T>
using ExactFeeds = std::map<std::string, std::vector<T>>;

// Runs `plan` in element type T (f32 for runs, f64 for gradient checks) and returns every buffer
// holding a named output, in output order, as values. Below the seam: feeds are not validated.
template <typename T>
Result<std::vector<std::vector<T>>> RunPlan(const execplan::Plan& plan, const Feeds& feeds,
                                            const kernel::ref::Parallel& parallel,
                                            const ExactFeeds<T>& exact = {});

}  // namespace scellis::runtime::cpu
