// The endpoints of conformance on the server's own device (POST /api/conform) and of the receipts
// a document's kernels hold on the browser tab's device (POST /api/receipts).
#pragma once

#include "handler.h"

namespace scellis::studio {

Response Conform(Engine& engine, const Request& req);
Response Receipts(Engine& engine, const Request& req);

}  // namespace scellis::studio
