// The endpoints that say what the server is and has: its version and protocol (GET /api/version),
// the op palette (GET /api/ops), the gallery of embedded examples (GET /api/examples) and the
// device the backend selection finds (GET /api/probe).
#pragma once

#include "handler.h"

namespace scellis::studio {

Response Version(Engine& engine, const Request& req);
Response Ops(Engine& engine, const Request& req);
Response ExamplesEndpoint(Engine& engine, const Request& req);
Response Probe(Engine& engine, const Request& req);

}  // namespace scellis::studio
