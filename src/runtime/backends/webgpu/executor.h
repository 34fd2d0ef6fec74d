// The WebGPU executor: runs an ExecPlan on a Dawn device. A one-step run is recorded into one
// command encoder and one submission; a run of many steps in a prepared session (prepared.cpp) is
// sent in chunks of at most 8 steps as it is recorded. All of a run's read-back values come home through one staging
// map; pipelines are cached by kernel source (the source carries no kernel name, so identical
// kernels share one pipeline); device buffers are pooled across runs; only named outputs are read
// back.
#pragma once

#include <memory>

#include "runtime/backends/webgpu/device.h"
#include "runtime/device_program.h"
#include "runtime/executor.h"

namespace scellis::runtime::webgpu {

class WebGpuExecutor : public Executor {
 public:
  explicit WebGpuExecutor(std::unique_ptr<Device> device);
  std::string name() const override { return "webgpu"; }
  std::vector<std::string> executors() const override {
    return {kFusedEncoder, kGenericExecutor};
  }
  DeviceProfile profile() const override;
  execplan::DeviceLimits limits() const override;
  Status health() const override { return device_->health(); }
  Device& device() { return *device_; }

 protected:
  Result<RunResult> DoRun(const execplan::Plan& plan, const Feeds& feeds,
                          const RunOptions& options) override;
  Result<std::unique_ptr<Prepared>> DoPrepare(const execplan::Plan& plan, const Feeds& feeds,
                                              const RunOptions& options) override;

 private:
  std::unique_ptr<Device> device_;
};

// The limits an ExecPlan is judged against on this device.
execplan::DeviceLimits PlanLimits(const AdapterInfo& info);
// The limits a device program for this device is laid out for (its binding cap, offset alignment
// and grid limit).
ProgramLimits ProgramLimitsOf(const AdapterInfo& info);
// The profile of an open device.
DeviceProfile ProfileOf(const Device& device);

// Makes a plan resident on `device` (prepared.cpp).
Result<std::unique_ptr<Prepared>> PrepareOn(Device& device, const execplan::Plan& plan,
                                            const Feeds& feeds, const RunOptions& options);

}  // namespace scellis::runtime::webgpu
