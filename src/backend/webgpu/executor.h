// The WebGPU executor: runs an ExecPlan on a Dawn device. The whole plan is recorded into one
// command encoder and one submission; pipelines are cached by kernel source hash, so repeated runs
// in one process compile nothing; device buffers are pooled across runs; only named outputs are
// read back.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backend/prepared.h"
#include "backend/webgpu/device.h"

namespace scellis::backend::webgpu {

class WebGpuExecutor : public Executor {
 public:
  explicit WebGpuExecutor(std::unique_ptr<Device> device);
  std::string name() const override { return "webgpu"; }
  Result<RunResult> Run(const execplan::Plan& plan, const Feeds& feeds) override;
  Result<std::unique_ptr<Prepared>> Prepare(const execplan::Plan& plan) override;
  Device& device() { return *device_; }

 private:
  std::unique_ptr<Device> device_;
};

// The limits an ExecPlan is judged against on this device.
execplan::DeviceLimits PlanLimits(const AdapterInfo& info);

}  // namespace scellis::backend::webgpu
