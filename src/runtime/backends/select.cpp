#include "runtime/backends/select.h"

namespace scellis::runtime {
namespace {

// "adapter 1 of 2: NVIDIA H200 (vulkan)", "SwiftShader Device (vulkan)", "the reference".
std::string Describe(const DeviceProfile& p) {
  if (!p.adapter.empty()) return p.adapter;
  return p.backend_api.empty() ? p.device : p.device + " (" + p.backend_api + ")";
}

}  // namespace

std::string CpuBanner(const std::string& why) {
  std::string bar(78, '=');
  return bar + "\n RUNNING ON THE CPU REFERENCE — slower than a GPU; heavy training is limited.\n" +
         " why: " + why + "\n" + bar + "\n";
}

Result<Selection> SelectBackend(const SelectOptions& options) {
  const bool automatic = options.requested == "auto";
  if (!automatic && !FindBackend(options.requested)) {
    return UserError("unknown-backend", "", "there is no backend \"" + options.requested + "\"",
                     "choose one of " + BackendChoices());
  }
  BackendOptions open;
  // Software adapters are for explicit requests only.
  open.allow_software_adapter = !automatic && options.allow_software_adapter;
  open.cpu_threads = options.cpu_threads;
  open.adapter = options.adapter;
  open.gpu_timestamps = options.gpu_timestamps;
  Selection s;
  for (const auto& backend : BuiltinBackends()) {
    if (automatic ? !backend->automatic() : backend->name() != options.requested) continue;
    auto executor = backend->Open(open);
    if (!executor.ok()) {
      const Diagnostic& why = executor.errors().front();
      // An adapter that was asked for and is not there is the answer, under auto too: running
      // on another device instead would be the silent substitution a choice rules out.
      if (why.code == "adapter-not-found") return why;
      if (!automatic) {
        Diagnostic d = why;
        d.kind = ErrorKind::kUser;
        d.code = "backend-unavailable";
        d.message = "--backend=" + options.requested + " cannot run here: " + why.message;
        if (d.help.empty())
          d.help = "use --backend=auto to fall back to the CPU reference, or --backend=cpu";
        return d;
      }
      s.attempts.push_back(backend->name() + ": passed over: " + why.message);
      if (!s.fallback_reason)
        s.fallback_reason = "no usable " + backend->noun() + ": " + why.message;
      continue;
    }
    s.executor = std::move(executor.value());
    s.backend = backend->name();
    s.limits = s.executor->limits();
    s.profile = s.executor->profile();
    s.attempts.push_back(backend->name() + ": " + Describe(s.profile));
    return s;
  }
  return InternalError("runtime.SelectBackend", "no backend could be opened");
}

}  // namespace scellis::runtime
