#include "runtime/backends/webgpu/backend.h"

#include <unistd.h>

#include <cstdio>

#include "runtime/backends/webgpu/executor.h"

namespace scellis::runtime::webgpu {
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

OpenOptions ToOpenOptions(const BackendOptions& options) {
  OpenOptions o;
  o.allow_software_adapter = options.allow_software_adapter;
  o.max_binding_bytes = options.max_binding_bytes;
  o.adapter = options.adapter;
  o.gpu_timestamps = options.gpu_timestamps;
  return o;
}

class WebGpuBackend : public Backend {
 public:
  std::string name() const override { return "webgpu"; }
  std::string noun() const override { return "WebGPU adapter"; }

  Result<ProbeReport> Probe(const BackendOptions& options) const override {
    ProbeReport r;
    auto device = OpenQuietly(ToOpenOptions(options), &r.log);
    if (!device.ok()) return device.status();
    const AdapterInfo& a = device.value()->info();
    r.summary = a.device + " (" + a.backend_api + ")";
    r.details = AdapterJson(*device.value());
    return r;
  }

  Result<std::unique_ptr<Executor>> Open(const BackendOptions& options) const override {
    SCELLIS_ASSIGN_OR_RETURN(std::unique_ptr<Device> device,
                             OpenQuietly(ToOpenOptions(options), nullptr));
    return std::unique_ptr<Executor>(new WebGpuExecutor(std::move(device)));
  }

  // Every built-in kernel carries WGSL; f16 storage is checked against the adapter when a plan
  // is prepared (shader-f16-unavailable).
  Status SupportsKernel(const kernel::Module&, const kernel::Kernel& k) const override {
    if (k.Wgsl().source.empty())
      return UserError("unsupported-kernel", "", k.name + " has no WGSL source");
    return Status::Ok();
  }

  Result<std::string> ProfileKey(const BackendOptions& options) const override {
    SCELLIS_ASSIGN_OR_RETURN(std::unique_ptr<Device> device,
                             OpenQuietly(ToOpenOptions(options), nullptr));
    return device->ProfileKey();
  }
};

}  // namespace

std::unique_ptr<Backend> MakeBackend() {
  return std::make_unique<WebGpuBackend>();
}

Result<std::unique_ptr<Device>> OpenQuietly(const OpenOptions& options, std::string* log) {
  StderrCapture capture;
  auto device = Device::Open(options);
  std::string text = capture.Finish();
  if (log) *log = text;
  return device;
}

Json AdapterJson(const Device& device) {
  const AdapterInfo& a = device.info();
  const Limits& l = a.limits;
  Json j;
  j["adapter"] = {{"vendor", a.vendor},
                  {"architecture", a.architecture},
                  {"device", a.device},
                  {"description", a.description},
                  {"backend_api", a.backend_api},
                  {"adapter_type", a.adapter_type},
                  {"vendor_id", a.vendor_id},
                  {"device_id", a.device_id},
                  {"driver", a.driver},
                  {"dawn_version", a.dawn_version},
                  {"is_software", a.is_software},
                  {"software_reason", a.software_reason},
                  {"profile", device.ProfileKey()},
                  {"index", a.adapter_index},
                  {"count", a.adapter_count},
                  {"choice", a.adapter_choice},
                  {"device_memory_bytes", a.device_memory_bytes},
                  {"device_memory_source", a.device_memory_source}};
  j["limits"] = {{"max_storage_buffer_binding_size", l.max_storage_buffer_binding_size},
                 {"max_buffer_size", l.max_buffer_size},
                 {"max_compute_workgroup_storage_size", l.max_compute_workgroup_storage_size},
                 {"max_compute_invocations_per_workgroup", l.max_compute_invocations_per_workgroup},
                 {"max_compute_workgroups_per_dimension", l.max_compute_workgroups_per_dimension},
                 {"max_storage_buffers_per_shader_stage", l.max_storage_buffers_per_shader_stage}};
  j["features"] = a.features;
  j["shader_f16"] = a.shader_f16;
  return j;
}

}  // namespace scellis::runtime::webgpu
