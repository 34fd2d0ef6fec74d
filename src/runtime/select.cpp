#include "runtime/select.h"

#include <unistd.h>

#include <cstdio>

#include "runtime/backends/cpu/executor.h"
#include "runtime/backends/webgpu/executor.h"

namespace scellis::runtime {
namespace {

// Dawn and the Vulkan loader print their own warnings straight to stderr while an adapter is
// probed (missing optional Vulkan features, a software driver's environment). They are not the
// user's business on every run, so probing captures them; `scellis probe` shows them.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = dup(STDERR_FILENO);
    if (file_ && saved_ >= 0) dup2(fileno(file_), STDERR_FILENO);
  }
  std::string Finish() {
    std::fflush(stderr);
    std::string text;
    if (saved_ >= 0) {
      dup2(saved_, STDERR_FILENO);
      close(saved_);
      saved_ = -1;
    }
    if (file_) {
      std::rewind(file_);
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) text.append(buf, n);
      std::fclose(file_);
      file_ = nullptr;
    }
    return text;
  }
  ~StderrCapture() { Finish(); }

 private:
  FILE* file_ = nullptr;
  int saved_ = -1;
};

}  // namespace

Result<std::unique_ptr<webgpu::Device>> OpenQuietly(const webgpu::OpenOptions& options,
                                                    std::string* log) {
  StderrCapture capture;
  auto device = webgpu::Device::Open(options);
  std::string text = capture.Finish();
  if (log) *log = text;
  return device;
}

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
    auto device = OpenQuietly(open, nullptr);
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

}  // namespace scellis::runtime
