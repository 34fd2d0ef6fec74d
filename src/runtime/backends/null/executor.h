// The null backend: validates every call exactly as the others do (the checks live in the seam),
// then computes nothing — outputs and downloads are zero-filled tensors of the right type. It
// exists to test the plumbing above the backends without a device or the cost of the reference.
// Never chosen by `auto`; only an explicit `--backend=null` selects it.
#pragma once

#include "runtime/executor.h"

namespace scellis::runtime::null {

class NullExecutor : public Executor {
 public:
  std::string name() const override { return "null"; }
  std::vector<std::string> executors() const override { return {"null"}; }
  DeviceProfile profile() const override;
  execplan::DeviceLimits limits() const override;

 protected:
  Result<RunResult> DoRun(const execplan::Plan& plan, const Feeds& feeds,
                          const RunOptions& options) override;
  Result<std::unique_ptr<Prepared>> DoPrepare(const execplan::Plan& plan, const Feeds& feeds,
                                              const RunOptions& options) override;
};

}  // namespace scellis::runtime::null
