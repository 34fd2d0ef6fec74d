// What the endpoints that compile read of a request: the document and its compile options
// ({document, tier?, bind?, budget?}), checked whole before anything compiles.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/json_util.h"
#include "handler.h"
#include "pipeline/compile.h"

namespace scellis::studio {

struct CompileRequest {
  Json document;
  std::string text;
  pipeline::CompileOptions options;
};

// The fields of a compile request, and `base` with `more` of an endpoint's own.
inline const std::vector<std::string> kCompileFields = {"document", "tier", "bind", "budget"};
std::vector<std::string> With(std::vector<std::string> base, std::vector<std::string> more);

// The document and options of a parsed body; on failure `refusal` holds the response (400).
std::optional<CompileRequest> ParseCompileRequest(Json& body, Response& refusal);

// Parses a compile request and compiles it to `up_to`; on failure `refusal` holds the response.
// `body_out` receives the parsed body, for an endpoint's own fields.
std::optional<std::pair<CompileRequest, pipeline::Compiled>> CompileBody(
    Engine& engine, const Request& req, const std::vector<std::string>& fields,
    pipeline::Rung up_to, Response& refusal, Json* body_out = nullptr);

}  // namespace scellis::studio
