// The endpoints that compile a document and answer with what the descent made of it: its check
// (POST /api/validate), one rung (POST /api/lower), every rung with their links (POST /api/rungs),
// the plan (POST /api/plan) and the device program the browser runtime runs (POST /api/program).
#pragma once

#include "handler.h"

namespace scellis::studio {

Response Validate(Engine& engine, const Request& req);
Response Lower(Engine& engine, const Request& req);
Response Rungs(Engine& engine, const Request& req);
Response Plan(Engine& engine, const Request& req);
Response Program(Engine& engine, const Request& req);

}  // namespace scellis::studio
