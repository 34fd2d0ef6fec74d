#include "backend/select.h"

#include "backend/cpu/executor.h"
#include "backend/webgpu/executor.h"

namespace scellis::backend {

std::string CpuBanner(const std::string& why) {
  std::string bar(78, '=');
  return bar + "\n RUNNING ON THE CPU REFERENCE — slower than a GPU; heavy training is limited.\n" +
         " why: " + why + "\n" + bar + "\n";
}

Result<Selection> SelectBackend(const SelectOptions& options) {
  Selection s;
  if (options.requested == "webgpu" || options.requested == "auto") {
    webgpu::OpenOptions open;
    open.allow_software_adapter = options.requested == "webgpu" && options.allow_software_adapter;
    auto device = webgpu::Device::Open(open);
    if (device.ok()) {
      s.backend = "webgpu";
      s.adapter = device.value()->info();
      s.limits = webgpu::PlanLimits(*s.adapter);
      s.attempts.push_back("webgpu: " + s.adapter->device + " (" + s.adapter->backend_api + ")");
      s.executor = std::make_unique<webgpu::WebGpuExecutor>(std::move(device.value()));
      return s;
    }
    const Diagnostic& why = device.errors().front();
    if (options.requested == "webgpu") {
      Diagnostic d = why;
      d.kind = ErrorKind::kUser;
      d.code = "backend-unavailable";
      d.message = "--backend=webgpu cannot run here: " + why.message;
      if (d.help.empty())
        d.help = "use --backend=auto to fall back to the CPU reference, or --backend=cpu";
      return d;
    }
    s.attempts.push_back("webgpu: passed over: " + why.message);
    s.fallback_reason = "no usable WebGPU adapter: " + why.message;
  }
  cpu::Options cpu_options;
  cpu_options.threads = options.cpu_threads;
  s.backend = "cpu";
  s.attempts.push_back("cpu: the reference");
  s.executor = std::make_unique<cpu::CpuExecutor>(cpu_options);
  return s;
}

}  // namespace scellis::backend
