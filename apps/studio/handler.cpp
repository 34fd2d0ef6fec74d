#include "handler.h"

#include <algorithm>
#include <cctype>

#include "api/conform.h"
#include "api/probe.h"
#include "base/diagnostic_json.h"
#include "compile_request.h"
#include "conform/receipt.h"
#include "doc/document.h"
#include "doc/keys.h"
#include "examples_data.h"
#include "pipeline/compile.h"
#include "pipeline/links.h"
#include "replies.h"
#include "runtime/device_program.h"
#include "static_files.h"
#include "store_endpoints.h"
#include "streams.h"
#include "tab_conform.h"

#ifndef SCELLIS_WEB_DIST
#define SCELLIS_WEB_DIST ""
#endif

#ifndef SCELLIS_VERSION
#define SCELLIS_VERSION "0.0.0"
#endif

namespace scellis::studio {
namespace {

// ---------------------------------------------------------------- the gallery

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

// ---------------------------------------------------------------- endpoints

using Handler = Response (*)(Engine&, const Request&);

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

Response Validate(Engine& engine, const Request& req) {
  Response refusal;
  auto c = CompileBody(engine, req, kCompileFields, pipeline::Rung::kExecplan, refusal);
  if (!c) return refusal;
  const auto& [cr, compiled] = *c;
  const execplan::Plan& plan = *compiled.plan;
  if (plan.verdict == execplan::Verdict::kRed)
    return ErrorResponse(422, plan.findings, &cr.document);
  std::vector<Diagnostic> notes = compiled.notes;
  notes.insert(notes.end(), plan.findings.begin(), plan.findings.end());
  return JsonResponse(200, {{"ok", true},
                            {"content_id", compiled.doc.content_id},
                            {"verdict", execplan::VerdictName(plan.verdict)},
                            {"diagnostics", DiagnosticsToJson(notes, &cr.document)}});
}

Response Lower(Engine& engine, const Request& req) {
  Response refusal;
  // The rung is read first: it decides how far to compile.
  std::optional<Json> peek = ParseBody(engine, req, With(kCompileFields, {"rung"}), refusal);
  if (!peek) return refusal;
  auto r = peek->find("rung");
  std::optional<pipeline::Rung> rung = r != peek->end() && r->is_string()
                                           ? pipeline::ParseRung(r->get<std::string>())
                                           : std::nullopt;
  if (!rung) {
    return ErrorResponse(
        400, BadField("rung", r == peek->end()
                                  ? "the request has no \"rung\""
                                  : "\"rung\" is " + r->dump().substr(0, 64) +
                                        ", expected doc, block, webir, kernel or execplan"));
  }
  auto c = CompileBody(engine, req, With(kCompileFields, {"rung"}), *rung, refusal);
  if (!c) return refusal;
  const pipeline::Compiled& compiled = c->second;
  return JsonResponse(200,
                      {{"rung", pipeline::RungName(*rung)},
                       {"text", pipeline::PrintRung(compiled, *rung)},
                       {"json", pipeline::RungJson(compiled, *rung)},
                       {"diagnostics", DiagnosticsToJson(compiled.notes, &c->first.document)}});
}

Response Rungs(Engine& engine, const Request& req) {
  Response refusal;
  auto c = CompileBody(engine, req, kCompileFields, pipeline::Rung::kExecplan, refusal);
  if (!c) return refusal;
  const pipeline::Compiled& compiled = c->second;
  Json rungs = Json::object();
  for (pipeline::Rung r : {pipeline::Rung::kDoc, pipeline::Rung::kBlock, pipeline::Rung::kWebir,
                           pipeline::Rung::kKernel, pipeline::Rung::kExecplan}) {
    rungs[pipeline::RungName(r)] = {{"text", pipeline::PrintRung(compiled, r)},
                                    {"json", pipeline::RungJson(compiled, r)}};
  }
  // Each kernel's WGSL, whole, for the kernel tab.
  Json wgsl = Json::array();
  for (const kernel::Kernel& k : compiled.module->kernels)
    wgsl.push_back(
        {{"kernel", k.name}, {"entry_point", k.Wgsl().entry_point}, {"source", k.Wgsl().source}});
  rungs["kernel"]["wgsl"] = wgsl;
  std::vector<Diagnostic> notes = compiled.notes;
  notes.insert(notes.end(), compiled.plan->findings.begin(), compiled.plan->findings.end());
  return JsonResponse(200, {{"rungs", rungs},
                            {"links", pipeline::ProvenanceLinks(compiled)},
                            {"verdict", execplan::VerdictName(compiled.plan->verdict)},
                            {"diagnostics", DiagnosticsToJson(notes, &c->first.document)}});
}

Response Plan(Engine& engine, const Request& req) {
  Response refusal;
  auto c = CompileBody(engine, req, kCompileFields, pipeline::Rung::kExecplan, refusal);
  if (!c) return refusal;
  const execplan::Plan& plan = *c->second.plan;
  // A red plan is an answer here, not a refusal: planning is the question asked.
  return JsonResponse(200,
                      {{"verdict", execplan::VerdictName(plan.verdict)},
                       {"plan", execplan::ToJson(plan)},
                       {"text", execplan::Print(plan)},
                       {"findings", DiagnosticsToJson(plan.findings, &c->first.document)},
                       {"diagnostics", DiagnosticsToJson(c->second.notes, &c->first.document)}});
}

Response Program(Engine& engine, const Request& req) {
  Response refusal;
  auto c = CompileBody(engine, req, kCompileFields, pipeline::Rung::kExecplan, refusal);
  if (!c) return refusal;
  const execplan::Plan& plan = *c->second.plan;
  if (plan.verdict == execplan::Verdict::kRed)
    return ErrorResponse(422, plan.findings, &c->first.document);
  auto program = runtime::BuildDeviceProgram(plan, {});
  if (!program.ok())
    return ErrorResponse(StatusFor(program.errors()), program.errors(), &c->first.document);
  return JsonResponse(200, runtime::ToJson(program.value()));
}

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

// ---------------------------------------------------------------- routing

struct Route {
  const char* method;
  const char* path;
  Handler handler;
};

const Route kRoutes[] = {
    {"GET", "/api/version", Version},
    {"GET", "/api/ops", Ops},
    {"GET", "/api/examples", ExamplesEndpoint},
    {"GET", "/api/probe", Probe},
    {"POST", "/api/validate", Validate},
    {"POST", "/api/lower", Lower},
    {"POST", "/api/rungs", Rungs},
    {"POST", "/api/plan", Plan},
    {"POST", "/api/program", Program},
    {"POST", "/api/run", Run},
    {"POST", "/api/train", Train},
    {"POST", "/api/conform", Conform},
    {"POST", "/api/documents", PutDocument},
    {"POST", "/api/conform/browser", TabConformStart},
    {"POST", "/api/receipts", Receipts},
};

}  // namespace

Json ErrorBody(const std::vector<Diagnostic>& diagnostics, const Json* document) {
  Json all = DiagnosticsToJson(diagnostics, document);
  Json first = all.empty() ? Json{{"code", "internal"},
                                  {"message", "no diagnostic"},
                                  {"pointer", nullptr},
                                  {"help", nullptr}}
                           : Json{{"code", all[0]["code"]},
                                  {"message", all[0]["message"]},
                                  {"pointer", all[0]["pointer"]},
                                  {"help", all[0]["help"]}};
  return {{"error", first}, {"diagnostics", all}};
}

const char* DefaultWebDir() {
  return SCELLIS_WEB_DIST;
}

Result<std::unique_ptr<Engine>> Engine::Open(EngineOptions options) {
  SCELLIS_ASSIGN_OR_RETURN(store::Store store, store::Store::Open(options.store_root));
  SCELLIS_ASSIGN_OR_RETURN(runtime::Selection selection, runtime::SelectBackend(options.select));
  std::unique_ptr<Engine> engine(new Engine(std::move(options), std::move(store)));
  engine->backend_ = selection.backend;
  engine->fallback_reason_ = selection.fallback_reason;
  return engine;
}

Response Handle(Engine& engine, const Request& req) {
  const std::string& path = req.path;
  if (path.rfind("/api/", 0) == 0 || path == "/api") {
    bool known_path = false;
    std::string allowed;
    for (const Route& r : kRoutes) {
      if (path != r.path) continue;
      known_path = true;
      allowed = r.method;
      if (req.method == r.method) return r.handler(engine, req);
    }
    if (const std::string jobs = "/api/conform/browser/";
        path.size() > jobs.size() && path.rfind(jobs, 0) == 0)
      return TabConformJobRequest(engine, req, path.substr(jobs.size()));
    if (const std::string runs = "/api/runs/", replay = "/replay";
        path.size() > runs.size() + replay.size() && path.rfind(runs, 0) == 0 &&
        path.compare(path.size() - replay.size(), replay.size(), replay) == 0) {
      if (req.method != "POST") return MethodNotAllowed("POST");
      return ReplayRun(engine, req,
                       path.substr(runs.size(), path.size() - runs.size() - replay.size()));
    }
    for (const auto& [prefix, what] :
         {std::pair{"/api/documents/", 0}, std::pair{"/api/runs/", 1}}) {
      const std::string p = prefix;
      if (path.size() <= p.size() || path.rfind(p, 0) != 0) continue;
      if (req.method != "GET") return MethodNotAllowed("GET");
      const std::string id = path.substr(p.size());
      return what == 0 ? GetDocument(engine, id) : GetRun(engine, id);
    }
    if (known_path) return MethodNotAllowed(allowed);
    return NotFound("API endpoint " + path.substr(0, 100));
  }
  if (req.method != "GET" && req.method != "HEAD") return MethodNotAllowed("GET");
  // The canvas's own routes: the page is index.html, which reads the id from its URL.
  for (const char* prefix : {"/w/", "/r/"}) {
    if (path.rfind(prefix, 0) != 0) continue;
    const std::string id = path.substr(3);
    if (!store::Store::IsId(id)) return ErrorResponse(400, BadId(id));
    return StaticFile(engine, "/");
  }
  return StaticFile(engine, path);
}

}  // namespace scellis::studio
