// Diagnostics as JSON: the one form every front end prints (`scellis ... --json`, the Studio
// server's error bodies and ndjson notes), so a reader of either sees the same fields.
#pragma once

#include "base/diagnostic.h"
#include "base/json_util.h"

namespace scellis {

// {"code", "severity": "error" | "warning" | "note", "kind": "user" | "internal" | "runtime" |
//  "state", "pointer": "/nodes/3" | null, "where": "matmul \"proj\"" | null, "message",
//  "help": "..." | null, "node": "<node id>" | null}.
// `node` is the id of the document node the pointer lies in (`/nodes/3/params/axis` → the id of
// nodes[3]), looked up in `document` when one is given; null otherwise.
Json DiagnosticToJson(const Diagnostic& d, const Json* document = nullptr);
Json DiagnosticsToJson(const std::vector<Diagnostic>& ds, const Json* document = nullptr);

}  // namespace scellis
