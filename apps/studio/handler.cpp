#include "handler.h"

#include "base/diagnostic_json.h"
#include "compile_endpoints.h"
#include "conform_endpoints.h"
#include "info_endpoints.h"
#include "replies.h"
#include "static_files.h"
#include "store_endpoints.h"
#include "streams.h"
#include "tab_conform.h"

#ifndef SCELLIS_WEB_DIST
#define SCELLIS_WEB_DIST ""
#endif

namespace scellis::studio {
namespace {

using Handler = Response (*)(Engine&, const Request&);

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
