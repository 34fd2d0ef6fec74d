// `scellis probe`: what this machine offers, and what `--backend=auto` would choose and why.
#include <iostream>

#include "api/probe.h"
#include "common.h"
#include "execplan/plan.h"

namespace scellis::cli {

int ProbeCommand(bool json) {
  Json out = api::Probe();
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
              << "device memory  : "
              << (a["device_memory_bytes"].get<int64_t>() == 0 &&
                          (a["is_software"].get<bool>() || a["adapter_type"] == "integrated-gpu")
                      ? std::string("the host's (its buffers live in host memory)")
                      : a["device_memory_source"].get<std::string>())
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
  if (const std::string log = out["dawn_log"].get<std::string>(); !log.empty())
    std::cout << "driver log     : " << log.size() << " bytes captured (see --json)\n";
  std::cout << "auto would use : " << out.value("auto_choice", "?") << " — "
            << out.value("auto_reason", "?") << "\n";
  return 0;
}

}  // namespace scellis::cli
