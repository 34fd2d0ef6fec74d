// `scellis probe`: what this machine offers, and what `--backend=auto` would choose and why.
#include <iostream>

#include "runtime/select.h"
#include "common.h"
#include "execplan/plan.h"

namespace scellis::cli {

int ProbeCommand(bool json) {
  Json out;
  std::string dawn_log;
  auto device = runtime::OpenQuietly({.allow_software_adapter = true}, &dawn_log);
  out["dawn_log"] = dawn_log;
  auto choice = runtime::SelectBackend({.requested = "auto"});
  if (device.ok()) {
    const runtime::webgpu::AdapterInfo& a = device.value()->info();
    const runtime::webgpu::Limits& l = a.limits;
    out["adapter"] = {{"vendor", a.vendor},
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
                      {"profile", device.value()->ProfileKey()}};
    out["limits"] = {
        {"max_storage_buffer_binding_size", l.max_storage_buffer_binding_size},
        {"max_buffer_size", l.max_buffer_size},
        {"max_compute_workgroup_storage_size", l.max_compute_workgroup_storage_size},
        {"max_compute_invocations_per_workgroup", l.max_compute_invocations_per_workgroup},
        {"max_compute_workgroups_per_dimension", l.max_compute_workgroups_per_dimension},
        {"max_storage_buffers_per_shader_stage", l.max_storage_buffers_per_shader_stage}};
    out["features"] = a.features;
  } else {
    out["adapter"] = nullptr;
    out["adapter_error"] = device.errors().front().message;
  }
  if (choice.ok()) {
    out["auto_choice"] = choice->backend;
    out["auto_reason"] = choice->fallback_reason ? *choice->fallback_reason
                                                 : "a hardware WebGPU adapter is available";
    out["attempts"] = choice->attempts;
  }
  if (json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (out["adapter"].is_null()) {
    std::cout << "webgpu adapter : none (" << out["adapter_error"].get<std::string>() << ")\n";
  } else {
    const Json& a = out["adapter"];
    std::cout << "webgpu adapter : " << a["device"].get<std::string>() << "  ("
              << a["vendor"].get<std::string>() << ", " << a["architecture"].get<std::string>()
              << ", " << a["adapter_type"].get<std::string>() << ")\n"
              << "backend api    : " << a["backend_api"].get<std::string>() << "\n"
              << "driver         : " << a["driver"].get<std::string>() << "\n"
              << "dawn           : " << a["dawn_version"].get<std::string>() << "\n"
              << "software       : "
              << (a["is_software"].get<bool>() ? "yes — " + a["software_reason"].get<std::string>()
                                               : "no")
              << "\n"
              << "limits         : binding "
              << execplan::FormatBytes(
                     out["limits"]["max_storage_buffer_binding_size"].get<int64_t>())
              << ", buffer "
              << execplan::FormatBytes(out["limits"]["max_buffer_size"].get<int64_t>())
              << ", workgroup storage "
              << out["limits"]["max_compute_workgroup_storage_size"].get<int64_t>() << " B, "
              << out["limits"]["max_compute_invocations_per_workgroup"].get<int64_t>()
              << " invocations, "
              << out["limits"]["max_compute_workgroups_per_dimension"].get<int64_t>()
              << " workgroups per dimension\n"
              << "features       : ";
    for (size_t i = 0; i < out["features"].size(); ++i)
      std::cout << (i ? ", " : "") << out["features"][i].get<std::string>();
    std::cout << "\n";
  }
  if (!dawn_log.empty())
    std::cout << "driver log     : " << dawn_log.size() << " bytes captured (see --json)\n";
  std::cout << "auto would use : " << out.value("auto_choice", "?") << " — "
            << out.value("auto_reason", "?") << "\n";
  return 0;
}

}  // namespace scellis::cli
