// Conformance of the browser tab's WebGPU device, over HTTP (docs/studio_api.md): the server
// hands out an op's cases as device programs with their feeds, the tab sends back what its device
// computed, and the engine judges it and mints the receipt for the tab's profile
// (api::BrowserJobs, api::JudgeBrowser). This file parses the requests and prints the answers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/conform.h"
#include "handler.h"

namespace scellis::studio {

// The "adapter" object of a request: what the tab says of its device; unknown keys and ill-typed
// values are named errors at /adapter/...
std::optional<api::BrowserAdapter> ParseAdapter(const Json& body, std::vector<Diagnostic>& errors);

// POST /api/conform/browser {tier, op, seed?, adapter}: a job with the op's cases.
Response TabConformStart(Engine& engine, const Request& req);

// Requests under /api/conform/browser/<rest>: PUT <job>/<case>/<run>/<offset> (an answer's bytes,
// in order), POST <job>/<case>/failed {error}, POST <job>/judge {}.
Response TabConformJobRequest(Engine& engine, const Request& req, const std::string& rest);

}  // namespace scellis::studio
