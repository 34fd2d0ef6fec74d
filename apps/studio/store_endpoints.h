// The endpoints over the server's store: documents kept by content id (POST /api/documents,
// GET /api/documents/<id>), run records of every front end (GET /api/runs/<id>) and their replay
// (POST /api/runs/<id>/replay).
#pragma once

#include <string>

#include "base/diagnostic.h"
#include "handler.h"

namespace scellis::studio {

// `bad-id`: an id that is not of the store's form (the id itself is not echoed whole).
Diagnostic BadId(const std::string& id);

Response PutDocument(Engine& engine, const Request& req);
Response GetDocument(Engine& engine, const std::string& id);
Response GetRun(Engine& engine, const std::string& id);
Response ReplayRun(Engine& engine, const Request& req, const std::string& id);

}  // namespace scellis::studio
