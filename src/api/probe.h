// What this machine offers, and what `--backend=auto` would choose and why: the facade behind
// `scellis probe` and the Studio's GET /api/probe.
#pragma once

#include "base/json_util.h"

namespace scellis::api {

// {"adapter": {...} | null, "adapter_error"?, "limits"?, "features"?, "dawn_log", "backends": [...],
//  "auto_choice", "auto_reason", "attempts"}: the WebGPU adapter as an explicit
// software-allowing request sees it, then what auto picks.
Json Probe();

}  // namespace scellis::api
