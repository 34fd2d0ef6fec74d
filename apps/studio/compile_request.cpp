#include "compile_request.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "replies.h"

namespace scellis::studio {
namespace {

bool IsDimName(const std::string& s) {
  if (s.empty() || s.size() > 128 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

}  // namespace

std::vector<std::string> With(std::vector<std::string> base, std::vector<std::string> more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

std::optional<CompileRequest> ParseCompileRequest(Json& body, Response& refusal) {
  std::vector<Diagnostic> errors;
  CompileRequest out;
  auto doc = body.find("document");
  if (doc == body.end() || !doc->is_object()) {
    errors.push_back(BadField(
        "document",
        doc == body.end() ? "the request has no \"document\"" : "\"document\" is not a JSON object",
        "send the document itself, as examples/*.json hold it"));
  } else {
    out.document = std::move(*doc);
  }
  if (auto t = body.find("tier"); t != body.end() && !t->is_null()) {
    std::optional<policy::Tier> tier =
        t->is_string() ? policy::ParseTier(t->get<std::string>()) : std::nullopt;
    if (!tier)
      errors.push_back(BadField("tier", "\"tier\" is " + t->dump().substr(0, 64) +
                                            ", expected \"debug\", \"prod\" or \"fast\""));
    // Like the command line's --tier: it applies only where the document declares none.
    out.options.lower.tier = tier;
  }
  if (auto b = body.find("bind"); b != body.end() && !b->is_null()) {
    if (!b->is_object()) {
      errors.push_back(BadField("bind", "\"bind\" is not an object", "for example {\"N\": 64}"));
    } else {
      for (auto it = b->begin(); it != b->end(); ++it) {
        if (!IsDimName(it.key()) || !it->is_number_integer() || it->get<int64_t>() < 0) {
          errors.push_back(
              UserError("bad-request-field", PointerJoin("/bind", it.key()),
                        "a binding is a dimension's name and a non-negative integer, got " +
                            it->dump().substr(0, 64),
                        "for example {\"N\": 64}"));
          continue;
        }
        out.options.lower.bind[it.key()] = it->get<int64_t>();
      }
    }
  }
  out.options.plan.budget_bytes =
      IntField(body, "budget", 1, std::numeric_limits<int64_t>::max(), errors);
  if (!errors.empty()) {
    refusal = ErrorResponse(400, errors);
    return std::nullopt;
  }
  out.text = out.document.dump();
  return out;
}

std::optional<std::pair<CompileRequest, pipeline::Compiled>> CompileBody(
    Engine& engine, const Request& req, const std::vector<std::string>& fields,
    pipeline::Rung up_to, Response& refusal, Json* body_out) {
  std::optional<Json> body = ParseBody(engine, req, fields, refusal);
  if (!body) return std::nullopt;
  std::optional<CompileRequest> cr = ParseCompileRequest(*body, refusal);
  if (!cr) return std::nullopt;
  cr->options.up_to = up_to;
  auto compiled = pipeline::Compile(cr->text, cr->options);
  if (!compiled.ok()) {
    refusal = ErrorResponse(StatusFor(compiled.errors()), compiled.errors(), &cr->document);
    return std::nullopt;
  }
  if (body_out) *body_out = std::move(*body);
  return std::make_pair(std::move(*cr), std::move(compiled.value()));
}

}  // namespace scellis::studio
