// The CPU reference executor: runs any ExecPlan with the reference kernels. Deterministic on every
// machine and for every thread count.
#pragma once

#include "runtime/executor.h"
#include "runtime/prepared.h"
#include "kernel/ref/ref.h"

namespace scellis::runtime::cpu {

struct Options {
  int threads = 0;  // 0: the machine's hardware threads
};

class CpuExecutor : public Executor {
 public:
  explicit CpuExecutor(Options options = {});
  std::string name() const override { return "cpu"; }
  Result<RunResult> Run(const execplan::Plan& plan, const Feeds& feeds) override;
  Result<std::unique_ptr<Prepared>> Prepare(const execplan::Plan& plan) override;
  int threads() const { return parallel_.threads(); }

 private:
  kernel::ref::Parallel parallel_;
};

// Source values given directly in the element type, by feed name; they take precedence over
// `feeds`, inline data and initializers. Gradient checks use them to perturb an input by less
// than an f32 ulp.
template <typename T>
using ExactFeeds = std::map<std::string, std::vector<T>>;

// Runs `plan` in element type T (f32 for runs, f64 for gradient checks) and returns every buffer
// holding a named output, in output order.
template <typename T>
Result<std::vector<std::vector<T>>> RunPlan(const execplan::Plan& plan, const Feeds& feeds,
                                            const kernel::ref::Parallel& parallel,
                                            const ExactFeeds<T>& exact = {});

}  // namespace scellis::runtime::cpu
