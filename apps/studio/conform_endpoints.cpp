#include "conform_endpoints.h"

#include <algorithm>
#include <mutex>

#include "api/conform.h"
#include "base/diagnostic_json.h"
#include "compile_request.h"
#include "conform/receipt.h"
#include "replies.h"
#include "tab_conform.h"

namespace scellis::studio {

Response Conform(Engine& engine, const Request& req) {
  Response refusal;
  std::optional<Json> body = ParseBody(engine, req, {"tier", "ops", "seed"}, refusal);
  if (!body) return refusal;
  std::vector<Diagnostic> errors;
  api::ConformOptions options;
  options.select = engine.options().select;
  options.store_root = engine.store().root();
  if (auto t = body->find("tier"); t != body->end() && t->is_string())
    options.tier = t->get<std::string>();
  if (auto o = body->find("ops"); o != body->end() && !o->is_null()) {
    if (!o->is_array() ||
        !std::all_of(o->begin(), o->end(), [](const Json& e) { return e.is_string(); }))
      errors.push_back(BadField("ops", "\"ops\" is not an array of op names"));
    else
      options.ops = o->get<std::vector<std::string>>();
  }
  if (auto s = body->find("seed"); s != body->end() && !s->is_null()) {
    if (!s->is_number_unsigned())
      errors.push_back(BadField("seed", "\"seed\" is not a non-negative integer"));
    else
      options.seed = s->get<uint64_t>();
  }
  if (!errors.empty()) return ErrorResponse(400, errors);
  std::lock_guard<std::mutex> lock(engine.worker());
  auto report = api::Conform(options);
  if (!report.ok()) return ErrorResponse(StatusFor(report.errors()), report.errors());
  Json j = report->ToJson();
  j["diagnostics"] = DiagnosticsToJson(report->store_problems);
  return JsonResponse(200, j);
}

// Which kernels of a document hold receipts on the tab's device: what the canvas shows after a
// run in the tab (a run on the server reports its own device's in its result).
Response Receipts(Engine& engine, const Request& req) {
  Response refusal;
  Json body;
  auto c = CompileBody(engine, req, With(kCompileFields, {"adapter"}), pipeline::Rung::kExecplan,
                       refusal, &body);
  if (!c) return refusal;
  std::vector<Diagnostic> errors;
  std::optional<api::BrowserAdapter> adapter = ParseAdapter(body, errors);
  if (!errors.empty()) return ErrorResponse(400, errors);
  const execplan::Plan& plan = *c->second.plan;
  return JsonResponse(200, conform::CheckReceipts(engine.store(), api::BrowserProfile(*adapter).key,
                                                  plan.module(), plan.graph().tier)
                               .ToJson());
}

}  // namespace scellis::studio
