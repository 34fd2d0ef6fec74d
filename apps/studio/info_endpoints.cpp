#include "info_endpoints.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "api/probe.h"
#include "doc/document.h"
#include "doc/keys.h"
#include "examples_data.h"
#include "replies.h"

#ifndef SCELLIS_VERSION
#define SCELLIS_VERSION "0.0.0"
#endif

namespace scellis::studio {
namespace {

std::string Title(const std::string& name) {
  std::string t = name;
  std::replace(t.begin(), t.end(), '_', ' ');
  if (!t.empty()) t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
  return t;
}

Json Examples() {
  Json list = Json::array();
  for (size_t i = 0; i < kEmbeddedExampleCount; ++i) {
    const EmbeddedExample& e = kEmbeddedExamples[i];
    auto doc = ParseUntrustedJson(std::string_view(reinterpret_cast<const char*>(e.data), e.size));
    if (!doc.ok() || !doc->is_object()) continue;  // the examples are tested to parse
    std::string name = e.name;
    list.push_back(
        {{"name", name}, {"title", Title(doc->value("name", name))}, {"document", doc.value()}});
  }
  return {{"examples", list}};
}

}  // namespace

Response Version(Engine& engine, const Request&) {
  return JsonResponse(200,
                      {{"scellis", SCELLIS_VERSION},
                       {"protocol", Json::array({1, doc::kMaxGraphVersion})},
                       {"formats", Json::array({doc::kWorkflowFormat})},
                       {"backend", engine.backend()},
                       {"fallback_reason",
                        engine.fallback_reason() ? Json(*engine.fallback_reason()) : Json(nullptr)},
                       {"max_request_bytes", engine.options().max_request_bytes}});
}

Response Ops(Engine&, const Request&) {
  return JsonResponse(200, doc::PaletteJson());
}

Response ExamplesEndpoint(Engine&, const Request&) {
  return JsonResponse(200, Examples());
}

Response Probe(Engine& engine, const Request&) {
  std::lock_guard<std::mutex> lock(engine.worker());
  return JsonResponse(200, api::Probe());
}

}  // namespace scellis::studio
