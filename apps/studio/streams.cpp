#include "streams.h"

#include <algorithm>
#include <limits>

#include "api/run.h"
#include "base/diagnostic_json.h"
#include "compile_request.h"
#include "record/run_record.h"
#include "replies.h"
#include "train/trainer.h"

namespace scellis::studio {
namespace {

constexpr const char* kNdjson = "application/x-ndjson";

Json Line(const std::string& event, Json fields = Json::object()) {
  Json j = {{"event", event}};
  j.update(fields);
  return j;
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

// A stream's writer: once a write fails (the page went away) it writes nothing more, and the run
// it serves is cancelled at its next submission, so the device is freed.
struct StreamWriter {
  const LineWriter& line;
  bool alive = true;
  void operator()(const Json& j) {
    if (alive) alive = line(j.dump());
  }
};

// What a run's and a training's streams begin with: the device's worker, held for the whole
// stream, and the events every run has (notes, cancellation) wired to the page.
template <typename Events>
std::unique_lock<std::mutex> BeginStream(Engine& engine, StreamWriter& write, const Json& document,
                                         Events& events) {
  auto lock = TakeWorker(engine, write.line);
  events.note = [&write, &document](const Diagnostic& d) {
    write(Line("note", DiagnosticToJson(d, &document)));
  };
  events.cancelled = [&write] { return !write.alive; };
  return lock;
}

Json ErrorLine(const std::vector<Diagnostic>& diags, const Json& document) {
  Json body = ErrorBody(diags, &document);
  return Line("error", {{"error", body["error"]}, {"diagnostics", body["diagnostics"]}});
}

// Records a finished run in the server's store (unless recording is off): its run id, or null
// with a note saying why the record was lost. The run happened either way, and its result is sent.
template <typename Write, typename Record>
Json RecordOrNote(Write& write, const Record& record_it, const Engine& engine) {
  if (!record::RecordingEnabled()) return nullptr;
  Result<std::string> id = record_it(engine.store());
  if (id.ok()) return id.value();
  Diagnostic d = id.errors().front();
  d.severity = Severity::kWarning;
  d.message = "the run is not recorded: " + d.message;
  write(Line("note", DiagnosticToJson(d)));
  return nullptr;
}

}  // namespace

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
    StreamWriter write{write_line};
    api::RunEvents events;
    auto lock = BeginStream(*e, write, cr.document, events);
    events.progress = [&](int done, int total) {
      write(Line("progress", {{"step", done}, {"total", total}}));
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
    const Json run_id = RecordOrNote(
        write,
        [&](const store::Store& store) {
          return record::RecordRun(store, cr.text, options, report);
        },
        *e);
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
    StreamWriter write{write_line};
    train::TrainEvents events;
    auto lock = BeginStream(*e, write, cr.document, events);
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
    const Json run_id = RecordOrNote(
        write,
        [&](const store::Store& store) {
          return record::RecordTraining(store, cr.text, options, t);
        },
        *e);
    write(Line("result", {{"run_id", run_id}, {"result", t.ToJson()}, {"losses", t.losses}}));
  };
  return r;
}

}  // namespace scellis::studio
