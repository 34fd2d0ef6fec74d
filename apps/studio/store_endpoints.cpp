#include "store_endpoints.h"

#include <mutex>

#include "compile_request.h"
#include "record/replay.h"
#include "record/run_record.h"
#include "replies.h"

namespace scellis::studio {
namespace {

// A document stored under its content id (the store names an object by the SHA-256 of its
// canonical form, which is how a document's content id is made, so the two are the same).
Result<std::string> StoreDocument(const Engine& engine, const Json& document) {
  return engine.store().Put(document);
}

Diagnostic Missing(const std::string& what, const std::string& id) {
  return UserError("store-object-missing", "", "the store holds no " + what + " " + id);
}

}  // namespace

Diagnostic BadId(const std::string& id) {
  // The id is not echoed whole: it is whatever the client sent.
  return UserError("bad-id", "",
                   "the id is not of the form sha256:<64 hex digits> (" +
                       std::to_string(id.size()) + " characters given)",
                   "ids are what POST /api/documents and POST /api/run return");
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

}  // namespace scellis::studio
