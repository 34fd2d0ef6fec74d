#include "handler.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "api/conform.h"
#include "api/probe.h"
#include "api/run.h"
#include "base/diagnostic_json.h"
#include "conform/receipt.h"
#include "doc/document.h"
#include "doc/keys.h"
#include "examples_data.h"
#include "pipeline/compile.h"
#include "pipeline/links.h"
#include "record/replay.h"
#include "record/run_record.h"
#include "replies.h"
#include "runtime/device_program.h"
#include "static_files.h"
#include "tab_conform.h"
#include "train/trainer.h"

#ifndef SCELLIS_WEB_DIST
#define SCELLIS_WEB_DIST ""
#endif

#ifndef SCELLIS_VERSION
#define SCELLIS_VERSION "0.0.0"
#endif

namespace scellis::studio {
namespace {

constexpr const char* kNdjson = "application/x-ndjson";

// ---------------------------------------------------------------- responses

Json Line(const std::string& event, Json fields = Json::object()) {
  Json j = {{"event", event}};
  j.update(fields);
  return j;
}

// ---------------------------------------------------------------- requests

Diagnostic BadId(const std::string& id) {
  // The id is not echoed whole: it is whatever the client sent.
  return UserError("bad-id", "",
                   "the id is not of the form sha256:<64 hex digits> (" +
                       std::to_string(id.size()) + " characters given)",
                   "ids are what POST /api/documents and POST /api/run return");
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

// The document and the compile options of a request: {document, tier?, bind?, budget?}.
struct CompileRequest {
  Json document;
  std::string text;
  pipeline::CompileOptions options;
};

bool IsDimName(const std::string& s) {
  if (s.empty() || s.size() > 128 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
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

// ---------------------------------------------------------------- the store

// A document stored under its content id (the store names an object by the SHA-256 of its
// canonical form, which is how a document's content id is made, so the two are the same).
Result<std::string> StoreDocument(const Engine& engine, const Json& document) {
  return engine.store().Put(document);
}

Diagnostic Missing(const std::string& what, const std::string& id) {
  return UserError("store-object-missing", "", "the store holds no " + what + " " + id);
}

// ---------------------------------------------------------------- endpoints

using Handler = Response (*)(Engine&, const Request&);

const std::vector<std::string> kCompileFields = {"document", "tier", "bind", "budget"};

std::vector<std::string> With(std::vector<std::string> base, std::vector<std::string> more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

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

// Parses a compile request and compiles it to `up_to`; on failure `refusal` holds the response.
std::optional<std::pair<CompileRequest, pipeline::Compiled>> CompileBody(
    Engine& engine, const Request& req, const std::vector<std::string>& fields,
    pipeline::Rung up_to, Response& refusal, Json* body_out = nullptr) {
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

// Devices are single-threaded: a stream that finds the worker busy says so, then waits its turn.
std::unique_lock<std::mutex> TakeWorker(Engine& engine, const LineWriter& write) {
  std::unique_lock<std::mutex> lock(engine.worker(), std::try_to_lock);
  if (!lock.owns_lock()) {
    write(Line("queued").dump());
    lock.lock();
  }
  return lock;
}

Json ErrorLine(const std::vector<Diagnostic>& diags, const Json& document) {
  Json body = ErrorBody(diags, &document);
  return Line("error", {{"error", body["error"]}, {"diagnostics", body["diagnostics"]}});
}

// Records a finished run in the server's store (unless recording is off): its run id, or null
// with a note saying why the record was lost. The run happened either way, and its result is sent.
template <typename Write, typename Record>
Json RecordOrNote(const Write& write, const Record& record_it, const Engine& engine) {
  if (!record::RecordingEnabled()) return nullptr;
  Result<std::string> id = record_it(engine.store());
  if (id.ok()) return id.value();
  Diagnostic d = id.errors().front();
  d.severity = Severity::kWarning;
  d.message = "the run is not recorded: " + d.message;
  write(Line("note", DiagnosticToJson(d)));
  return nullptr;
}

Response Run(Engine& engine, const Request& req) {
  Response refusal;
  Json body;
  auto c = CompileBody(engine, req, With(kCompileFields, {"backend", "steps", "history"}),
                       pipeline::Rung::kExecplan, refusal, &body);
  if (!c) return refusal;
  CompileRequest cr = std::move(c->first);
  // A red plan never dispatches: refused here, before any stream begins.
  if (c->second.plan->verdict == execplan::Verdict::kRed)
    return ErrorResponse(422, c->second.plan->findings, &cr.document);

  std::vector<Diagnostic> errors;
  api::RunOptions options;
  options.compile = cr.options;
  options.select = engine.options().select;
  // Receipts are looked up where conformance (POST /api/conform) mints them: the server's store.
  options.store_root = engine.store().root();
  if (auto b = body.find("backend"); b != body.end() && !b->is_null()) {
    const std::string name = b->is_string() ? b->get<std::string>() : "";
    if (name != "auto" && name != "cpu" && name != "webgpu")
      errors.push_back(BadField("backend", "\"backend\" is " + b->dump().substr(0, 64) +
                                               ", expected \"auto\", \"cpu\" or \"webgpu\""));
    else
      options.select.requested = name;
  }
  options.steps = static_cast<int>(IntField(body, "steps", 1, 1000000, errors).value_or(1));
  if (auto h = body.find("history"); h != body.end() && !h->is_null()) {
    if (!h->is_array() ||
        !std::all_of(h->begin(), h->end(), [](const Json& e) { return e.is_string(); }))
      errors.push_back(BadField("history", "\"history\" is not an array of output names"));
    else
      options.history = h->get<std::vector<std::string>>();
  }
  if (!errors.empty()) return ErrorResponse(400, errors);

  Response r;
  r.content_type = kNdjson;
  Engine* e = &engine;
  r.stream = [e, cr = std::move(cr), options](const LineWriter& write_line) {
    bool alive = true;
    auto write = [&](const Json& j) {
      if (alive) alive = write_line(j.dump());
    };
    auto lock = TakeWorker(*e, write_line);
    api::RunEvents events;
    events.progress = [&](int done, int total) {
      write(Line("progress", {{"step", done}, {"total", total}}));
    };
    // A page that went away stops the run at its next submission: the device is freed.
    events.cancelled = [&] { return !alive; };
    events.note = [&](const Diagnostic& d) {
      write(Line("note", DiagnosticToJson(d, &cr.document)));
    };
    events.selected = [&](const runtime::Selection& s) {
      // The executor is the one the run reports: it is known once the plan is on the device.
      write(
          Line("start", {{"backend", s.backend},
                         {"executor", nullptr},
                         {"fallback_reason", s.fallback_reason ? Json(*s.fallback_reason) : Json()},
                         {"attempts", s.attempts}}));
    };
    auto result = api::Run(cr.text, options, events);
    if (!result.ok()) {
      write(ErrorLine(result.errors(), cr.document));
      return;
    }
    const api::RunReport& report = result.value();
    const Json run_id = RecordOrNote(write, [&](const store::Store& store) {
      return record::RecordRun(store, cr.text, options, report);
    }, *e);
    write(Line("result", {{"run_id", run_id}, {"report", report.ToJson()}}));
  };
  return r;
}

Response Train(Engine& engine, const Request& req) {
  Response refusal;
  Json body;
  // The document is checked down to its blocks (the train section included) before any stream
  // begins; the trainer binds the batch and compiles the rest.
  auto c = CompileBody(engine, req,
                       {"document", "tier", "budget", "epochs", "steps_per_run", "max_steps"},
                       pipeline::Rung::kBlock, refusal, &body);
  if (!c) return refusal;
  CompileRequest cr = std::move(c->first);
  // A dataset read from files would let a request name a path on this machine: the server
  // trains only on named datasets.
  if (std::optional<Diagnostic> d = train::DatasetFromFiles(c->second.doc))
    return ErrorResponse(422, std::vector<Diagnostic>{*d}, &cr.document);
  std::vector<Diagnostic> errors;
  train::TrainOptions options;
  options.compile = cr.options;
  options.select = engine.options().select;
  options.store_root = engine.store().root();  // where a streamed dataset's inflated copy goes
  options.epochs = static_cast<int>(IntField(body, "epochs", 1, 10000, errors).value_or(0));
  options.steps_per_run = static_cast<int>(
      IntField(body, "steps_per_run", 1, api::kMaxStepsPerSubmission, errors).value_or(8));
  options.max_steps =
      IntField(body, "max_steps", 1, std::numeric_limits<int64_t>::max(), errors).value_or(0);
  if (!errors.empty()) return ErrorResponse(400, errors);

  Response r;
  r.content_type = kNdjson;
  Engine* e = &engine;
  r.stream = [e, cr = std::move(cr), options](const LineWriter& write_line) {
    bool alive = true;
    auto write = [&](const Json& j) {
      if (alive) alive = write_line(j.dump());
    };
    auto lock = TakeWorker(*e, write_line);
    train::TrainEvents events;
    events.note = [&](const Diagnostic& d) {
      write(Line("note", DiagnosticToJson(d, &cr.document)));
    };
    events.backend = [&](const std::string& backend, const std::optional<std::string>& fallback) {
      write(Line("start", {{"backend", backend},
                           {"executor", nullptr},
                           {"fallback_reason", fallback ? Json(*fallback) : Json()},
                           {"attempts", nullptr}}));
    };
    events.progress = [&](const train::Progress& p) {
      write(Line("progress", {{"epoch", p.epoch},
                              {"epochs", p.epochs},
                              {"step", p.step},
                              {"total", p.total},
                              {"loss", p.loss},
                              {"steps_per_second", p.steps_per_second}}));
    };
    // A page that went away stops the training at its next submission: the device is freed.
    events.cancelled = [&] { return !alive; };
    events.epoch = [&](const train::EpochResult& ep) {
      write(Line("epoch", {{"epoch", ep.epoch},
                           {"epochs", ep.epochs},
                           {"mean_loss", ep.mean_loss},
                           {"test_accuracy", ep.test_accuracy},
                           {"examples", ep.examples},
                           {"steps", ep.steps},
                           {"seconds", ep.seconds},
                           {"train_seconds", ep.train_seconds}}));
    };
    train::Trainer trainer(options, events);
    auto result = trainer.Train(cr.text);
    if (!result.ok()) {
      write(ErrorLine(result.errors(), cr.document));
      return;
    }
    const train::TrainResult& t = result.value();
    const Json run_id = RecordOrNote(write, [&](const store::Store& store) {
      return record::RecordTraining(store, cr.text, options, t);
    }, *e);
    write(Line("result", {{"run_id", run_id}, {"result", t.ToJson()}, {"losses", t.losses}}));
  };
  return r;
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

Response PutDocument(Engine& engine, const Request& req) {
  Response refusal;
  // Validated before it is stored: an invalid document is refused and nothing is written. A red
  // plan is no fault of the document (another machine may have the memory), so it is kept.
  auto c = CompileBody(engine, req, {"document"}, pipeline::Rung::kExecplan, refusal);
  if (!c) return refusal;
  auto id = StoreDocument(engine, c->first.document);
  if (!id.ok()) return ErrorResponse(StatusFor(id.errors()), id.errors());
  return JsonResponse(200, {{"content_id", id.value()}});
}

Response GetDocument(Engine& engine, const std::string& id) {
  if (!store::Store::IsId(id)) return ErrorResponse(400, BadId(id));
  auto object = engine.store().Get(id);
  if (!object.ok()) return ErrorResponse(StatusFor(object.errors()), object.errors());
  if (record::IsRecordObject(object.value())) return ErrorResponse(404, Missing("document", id));
  return JsonResponse(200, {{"content_id", id}, {"document", object.value()}});
}

// A run record of any front end (the CLI's `scellis run` and `train` write the same), with the
// values it kept.
Response GetRun(Engine& engine, const std::string& id) {
  if (!store::Store::IsId(id)) return ErrorResponse(400, BadId(id));
  auto record = record::RecordWithValues(engine.store(), id);
  if (!record.ok()) return ErrorResponse(StatusFor(record.errors()), record.errors());
  return JsonResponse(200, record.value());
}

// `scellis replay` from the page: the same guarantees and the same named refusals. A replay that
// disagrees is an answer (200, "agree": false, its "disagreement"), not a refusal.
Response ReplayRun(Engine& engine, const Request& req, const std::string& id) {
  if (!store::Store::IsId(id)) return ErrorResponse(400, BadId(id));
  Response refusal;
  if (!ParseBody(engine, req, {}, refusal)) return refusal;
  std::lock_guard<std::mutex> lock(engine.worker());
  auto result = record::Replay(id, {.store_root = engine.store().root(),
                                    .cpu_threads = engine.options().select.cpu_threads});
  if (!result.ok()) return ErrorResponse(StatusFor(result.errors()), result.errors());
  return JsonResponse(200, result->ToJson());
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
