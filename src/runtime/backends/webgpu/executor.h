// The WebGPU executor: runs an ExecPlan on a Dawn device. A run — one step, or many in a prepared
// session (prepared.cpp) — is recorded into one command encoder and one submission; pipelines are
// cached by kernel source hash, so repeated runs in one process compile nothing; device buffers
// are pooled across runs; only named outputs are read back.
#pragma once

#include <memory>

#include "runtime/executor.h"
#include "runtime/prepared.h"
#include "runtime/backends/webgpu/device.h"

namespace scellis::runtime::webgpu {

// The bit pattern poisoned outputs are filled with: a quiet NaN with a payload no kernel computes,
// so an element that still holds it after a run was never written.
inline constexpr uint32_t kPoisonBits = 0x7fc0deadu;

class WebGpuExecutor : public Executor {
 public:
  struct RunOptions {
    // Before each dispatch, fill the buffer it writes with kPoisonBits (a small fill kernel
    // recorded in the same pass, so in the same submission). Every element a kernel fails to write
    // then reads back as the sentinel — or, for an intermediate, turns its consumers' results
    // into NaN. Conformance uses this; ordinary runs do not pay for it.
    bool poison_outputs = false;
  };

  explicit WebGpuExecutor(std::unique_ptr<Device> device);
  std::string name() const override { return "webgpu"; }
  Result<RunResult> Run(const execplan::Plan& plan, const Feeds& feeds) override;
  Result<std::unique_ptr<Prepared>> Prepare(const execplan::Plan& plan) override;
  Result<RunResult> Run(const execplan::Plan& plan, const Feeds& feeds, const RunOptions& options);
  // `feeds` may give params and inputs their starting values (a feed wins over an initializer).
  Result<std::unique_ptr<Prepared>> Prepare(const execplan::Plan& plan, const RunOptions& options,
                                            const Feeds& feeds);
  Device& device() { return *device_; }

 private:
  std::unique_ptr<Device> device_;
};

// The limits an ExecPlan is judged against on this device.
execplan::DeviceLimits PlanLimits(const AdapterInfo& info);

}  // namespace scellis::runtime::webgpu
