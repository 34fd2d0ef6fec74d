// The endpoints that answer with a stream of ndjson lines while the engine works: a run
// (POST /api/run) and a training (POST /api/train). Each checks its request whole and refuses a red
// plan before the stream begins; then it waits its turn at the device, says which backend runs,
// reports progress, and ends with the result and its run record's id, or an error line.
#pragma once

#include "handler.h"

namespace scellis::studio {

Response Run(Engine& engine, const Request& req);
Response Train(Engine& engine, const Request& req);

}  // namespace scellis::studio
