#include "api/probe.h"

#include "runtime/backends/select.h"

namespace scellis::api {

Json Probe() {
  Json out;
  auto webgpu = runtime::FindBackend("webgpu")->Probe({.allow_software_adapter = true});
  auto choice = runtime::SelectBackend({.requested = "auto"});
  if (webgpu.ok()) {
    out["dawn_log"] = webgpu->log;
    out.update(webgpu->details);
  } else {
    out["dawn_log"] = "";
    out["adapter"] = nullptr;
    out["adapter_error"] = webgpu.errors().front().message;
  }
  out["backends"] = Json::array();
  for (const auto& b : runtime::BuiltinBackends()) out["backends"].push_back(b->name());
  if (choice.ok()) {
    out["auto_choice"] = choice->backend;
    out["auto_reason"] = choice->fallback_reason ? *choice->fallback_reason
                                                 : "a hardware WebGPU adapter is available";
    out["attempts"] = choice->attempts;
  }
  return out;
}

}  // namespace scellis::api
