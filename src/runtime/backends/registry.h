// The built-in backends, in the order `--backend=auto` tries them: webgpu (hardware adapters only),
// then the CPU reference. `null` comes last and is never chosen automatically.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/backend.h"

namespace scellis::runtime {

const std::vector<std::unique_ptr<Backend>>& BuiltinBackends();
// The built-in backend called `name`, or nullptr.
const Backend* FindBackend(std::string_view name);
// "auto | webgpu | cpu | null", for flags and diagnostics.
std::string BackendChoices();

}  // namespace scellis::runtime
