#include "replies.h"

#include <algorithm>
#include <cctype>

#include "base/diagnostic_json.h"
#include "doc/keys.h"

namespace scellis::studio {

Response JsonResponse(int status, const Json& body) {
  Response r;
  r.status = status;
  r.body = body.dump();
  return r;
}

Response ErrorResponse(int status, const std::vector<Diagnostic>& diags, const Json* document) {
  return JsonResponse(status, ErrorBody(diags, document));
}

Response ErrorResponse(int status, Diagnostic d) {
  return ErrorResponse(status, std::vector<Diagnostic>{std::move(d)});
}

int StatusFor(const std::vector<Diagnostic>& diags) {
  int status = 422;
  for (const Diagnostic& d : diags) {
    if (d.severity != Severity::kError) continue;
    // An id that names no run record is as missing as one that names nothing.
    if (d.code == "store-object-missing" || d.code == "not-a-run-record") return 404;
    if (d.kind != ErrorKind::kUser) status = 500;
  }
  return status;
}

Response NotFound(const std::string& what) {
  return ErrorResponse(404, UserError("not-found", "", "there is no " + what + " here"));
}

Response MethodNotAllowed(const std::string& allowed) {
  Response r = ErrorResponse(
      405, UserError("method-not-allowed", "", "this path takes " + allowed + " only"));
  return r;
}

std::string MediaType(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  t.erase(std::remove_if(t.begin(), t.end(), [](unsigned char c) { return std::isspace(c); }),
          t.end());
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  return t;
}

std::optional<Json> ParseBody(const Engine& engine, const Request& req,
                              const std::vector<std::string>& fields, Response& refusal) {
  const size_t cap = engine.options().max_request_bytes;
  if (req.body.size() > cap) {
    refusal =
        ErrorResponse(413, UserError("request-too-large", "",
                                     "the request body has " + std::to_string(req.body.size()) +
                                         " bytes, over the server's cap of " + std::to_string(cap),
                                     "start the server with a larger --max-request-bytes"));
    return std::nullopt;
  }
  if (MediaType(req.content_type) != "application/json") {
    refusal = ErrorResponse(
        415, UserError("unsupported-media-type", "",
                       "the request's content type is \"" + req.content_type.substr(0, 100) +
                           "\", expected application/json",
                       "send the body with Content-Type: application/json"));
    return std::nullopt;
  }
  auto parsed = ParseUntrustedJson(req.body, {.max_bytes = cap, .max_depth = 64});
  if (!parsed.ok()) {
    std::vector<Diagnostic> diags = {UserError(
        "bad-json", "", "the request body is not valid JSON: " + parsed.errors()[0].message)};
    diags.insert(diags.end(), parsed.errors().begin(), parsed.errors().end());
    refusal = ErrorResponse(400, diags);
    return std::nullopt;
  }
  if (!parsed->is_object()) {
    refusal = ErrorResponse(400, UserError("bad-request", "",
                                           std::string("the request body is a JSON ") +
                                               parsed->type_name() + ", expected an object"));
    return std::nullopt;
  }
  std::vector<Diagnostic> unknown;
  doc::CheckKeys(*parsed, "", fields, "this request", unknown);
  if (!unknown.empty()) {
    refusal = ErrorResponse(400, unknown);
    return std::nullopt;
  }
  return std::move(parsed.value());
}

Diagnostic BadField(const std::string& field, const std::string& message, const std::string& help) {
  return UserError("bad-request-field", "/" + field, message, help);
}

// An optional integer field within [low, high].
std::optional<int64_t> IntField(const Json& body, const std::string& field, int64_t low,
                                int64_t high, std::vector<Diagnostic>& errors) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() || it->get<int64_t>() < low || it->get<int64_t>() > high ||
      (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(high))) {
    errors.push_back(BadField(field, "\"" + field + "\" is " + it->dump().substr(0, 64) +
                                         ", expected an integer from " + std::to_string(low) +
                                         " to " + std::to_string(high)));
    return std::nullopt;
  }
  return it->get<int64_t>();
}

}  // namespace scellis::studio
