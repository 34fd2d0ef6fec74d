// The Studio server's replies and request checks, shared by its endpoints (handler.cpp, the
// *_endpoints.cpp files, streams.cpp, tab_conform.cpp): JSON answers, errors in the contract's
// shape with the status that fits, and the checks every POST body passes before an endpoint reads
// it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/diagnostic.h"
#include "base/json_util.h"
#include "handler.h"

namespace scellis::studio {

Response JsonResponse(int status, const Json& body);
Response ErrorResponse(int status, const std::vector<Diagnostic>& diags,
                       const Json* document = nullptr);
Response ErrorResponse(int status, Diagnostic d);
// The status an engine refusal calls for: a missing object (or an id that is no run record) is 404,
// our own bug or a failing device 500, anything else a problem with what was sent (422).
int StatusFor(const std::vector<Diagnostic>& diags);
Response NotFound(const std::string& what);
Response MethodNotAllowed(const std::string& allowed);

// The media type of a Content-Type header, lower case, without parameters.
std::string MediaType(const std::string& content_type);
// A POST body: within the cap, declared as JSON, well-formed, an object with known fields.
// On failure `refusal` holds the response.
std::optional<Json> ParseBody(const Engine& engine, const Request& req,
                              const std::vector<std::string>& fields, Response& refusal);
// An optional integer field within [low, high]; out of range or not an integer, a
// `bad-request-field` joins `errors`.
std::optional<int64_t> IntField(const Json& body, const std::string& field, int64_t low,
                                int64_t high, std::vector<Diagnostic>& errors);
// `bad-request-field` at /<field>.
Diagnostic BadField(const std::string& field, const std::string& message,
                    const std::string& help = "");

}  // namespace scellis::studio
