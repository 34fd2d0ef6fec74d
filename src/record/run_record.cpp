#include "record/run_record.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/sha256.h"
#include "ops/user_op.h"

#ifndef SCELLIS_VERSION
#define SCELLIS_VERSION "0.0.0"
#endif

namespace scellis::record {
namespace {

// UTC with milliseconds, so records of one second still list in the order they were made.
std::string NowUtcMillis() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms.count()));
  return out;
}

}  // namespace

// Stores the document as an object (so the Studio's /api/documents serves it too) and the
// record, then files the record under the day it was made.
Result<std::string> PutRecord(const store::Store& store, std::string_view document, Json record) {
  auto doc = ParseUntrustedJson(document);
  if (!doc.ok()) return doc.status();
  SCELLIS_ASSIGN_OR_RETURN(std::string document_id, store.Put(doc.value()));
  record["document_id"] = document_id;
  record["kind"] = kRunRecordKind;
  record["engine_version"] = SCELLIS_VERSION;
  const std::string date = NowUtcMillis();
  record["date"] = date;
  SCELLIS_ASSIGN_OR_RETURN(std::string id, store.Put(record));
  SCELLIS_TRY(store.Index(kRecordIndex, "", date.substr(0, 10), id));
  return id;
}

std::string TensorHash(const runtime::HostTensor& t) {
  Sha256 h;
  std::string head = std::string(DTypeName(t.type.dtype)) + ";";
  const std::vector<int64_t> sizes = t.type.sizes();
  for (size_t i = 0; i < sizes.size(); ++i) head += (i ? "," : "") + std::to_string(sizes[i]);
  head += ";";
  h.Update(head);
  h.Update(std::string_view(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size()));
  return h.FinalHex();
}

Result<Json> TensorDigest(const store::Store& store, const runtime::HostTensor& t) {
  Json d = {{"dtype", DTypeName(t.type.dtype)},
            {"shape", t.type.sizes()},
            {"sha256", TensorHash(t)},
            {"blob", nullptr}};
  if (static_cast<int64_t>(t.bytes.size()) <= kKeptTensorBytes) {
    SCELLIS_ASSIGN_OR_RETURN(std::string blob,
                             store.PutBlob(std::string_view(
                                 reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size())));
    d["blob"] = blob;
  }
  return d;
}

Result<runtime::HostTensor> KeptTensor(const store::Store& store, const Json& digest) {
  if (!digest.is_object() || !digest.contains("blob") || !digest["blob"].is_string()) {
    return UserError("record-tensor-not-kept", "",
                     "the record keeps only the digest of this tensor (it was larger than " +
                         std::to_string(kKeptTensorBytes) + " bytes), not its values");
  }
  auto dtype = ParseDType(digest.value("dtype", ""));
  if (!dtype || !digest["shape"].is_array())
    return UserError("not-a-run-record", "", "a tensor digest of the record has no dtype/shape");
  SCELLIS_ASSIGN_OR_RETURN(std::string bytes, store.GetBlob(digest["blob"].get<std::string>()));
  runtime::HostTensor t;
  t.type = MakeType(digest["shape"].get<std::vector<int64_t>>(), *dtype);
  const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
  t.bytes.assign(p, p + bytes.size());
  if (t.type.bytes() != static_cast<int64_t>(t.bytes.size()) ||
      TensorHash(t) != digest.value("sha256", "")) {
    return UserError("store-object-corrupt", "",
                     "the kept tensor " + digest["blob"].get<std::string>() +
                         " does not match the digest its record gives",
                     "the record or its blob was changed after it was written");
  }
  return t;
}

Json CompileSettingsJson(const pipeline::CompileOptions& o) {
  Json j;
  j["tier"] = o.lower.tier ? Json(policy::TierName(*o.lower.tier)) : Json();
  j["tier_override"] = o.lower.tier_override;
  j["bind"] = Json::object();
  for (const auto& [name, size] : o.lower.bind) j["bind"][name] = size;
  j["budget_bytes"] = o.plan.budget_bytes ? Json(*o.plan.budget_bytes) : Json();
  j["disabled_passes"] =
      std::vector<std::string>(o.disabled_passes.begin(), o.disabled_passes.end());
  return j;
}

Result<pipeline::CompileOptions> CompileSettingsFrom(const Json& j) {
  pipeline::CompileOptions o;
  auto bad = [](const std::string& what) {
    return UserError("not-a-run-record", "", "the record's settings have " + what);
  };
  if (!j.is_object()) return bad("no compile settings");
  if (j.contains("tier") && j["tier"].is_string()) {
    o.lower.tier = policy::ParseTier(j["tier"].get<std::string>());
    if (!o.lower.tier) return bad("an unknown tier");
  }
  o.lower.tier_override = j.value("tier_override", false);
  if (j.contains("bind") && j["bind"].is_object())
    for (const auto& [name, size] : j["bind"].items()) {
      if (!size.is_number_integer()) return bad("a binding that is not a size");
      o.lower.bind[name] = size.get<int64_t>();
    }
  if (j.contains("budget_bytes") && j["budget_bytes"].is_number_integer())
    o.plan.budget_bytes = j["budget_bytes"].get<int64_t>();
  if (j.contains("disabled_passes") && j["disabled_passes"].is_array())
    for (const Json& p : j["disabled_passes"])
      if (p.is_string()) o.disabled_passes.insert(p.get<std::string>());
  return o;
}

Json CallableUserOpsJson(const ops::OpTable* table) {
  Json out = Json::array();
  if (!table) return out;
  for (const ops::OpSpec& spec : table->ops()) {
    if (!spec.user || !spec.user->callable || !spec.user->gradient_of.empty()) continue;
    out.push_back({{"name", spec.name},
                   {"definition", spec.user->definition},
                   {"definition_hash", spec.user->definition_hash}});
  }
  return out;
}

Result<std::string> RecordRun(const store::Store& store, std::string_view document,
                              const api::RunOptions& options, const api::RunReport& report) {
  SCELLIS_ASSIGN_OR_RETURN(Json inputs, DigestsOf(store, options.feeds));
  SCELLIS_ASSIGN_OR_RETURN(Json outputs, DigestsOf(store, report.outputs));
  Json record = {
      {"command", "run"},
      {"content_id", report.content_id},
      {"plan_hash", report.plan_hash},
      {"tier", report.determinism_tier},
      {"tolerance",
       {{"class", report.tolerance},
        {"atol", report.thresholds.atol},
        {"rtol", report.thresholds.rtol}}},
      {"device_profile", report.profile},
      {"backend", report.backend},
      {"executor", report.executor},
      {"fallback_reason", report.fallback_reason ? Json(*report.fallback_reason) : Json()},
      {"receipts", report.receipts ? Json(report.receipts->used) : Json::array()},
      {"inputs", inputs},
      {"outputs", outputs},
      {"streaming", report.streaming},
      {"user_ops", CallableUserOpsJson(options.compile.lower.ops.get())},
      {"settings",
       {{"compile", CompileSettingsJson(options.compile)},
        {"backend", options.select.requested},
        {"allow_software_adapter", options.select.allow_software_adapter},
        {"steps", options.steps},
        {"history", options.history},
        {"executor", options.executor}}}};
  return PutRecord(store, document, std::move(record));
}

std::vector<std::pair<std::string, runtime::HostTensor>> TrainingOutputs(
    const train::TrainResult& result) {
  std::vector<float> accuracy;
  for (const train::EpochResult& e : result.epochs)
    accuracy.push_back(static_cast<float>(e.test_accuracy));
  const int64_t steps = static_cast<int64_t>(result.losses.size());
  const int64_t epochs = static_cast<int64_t>(accuracy.size());
  return {{"losses", runtime::HostTensor::FromFloats(MakeType({steps}), result.losses)},
          {"test_accuracy", runtime::HostTensor::FromFloats(MakeType({epochs}), accuracy)}};
}

Result<std::string> RecordTraining(const store::Store& store, std::string_view document,
                                   const train::TrainOptions& options,
                                   const train::TrainResult& result) {
  SCELLIS_ASSIGN_OR_RETURN(Json outputs, DigestsOf(store, TrainingOutputs(result)));
  Json record = {
      {"command", "train"},
      {"content_id", result.content_id},
      {"plan_hash", result.plan_hash},
      {"tier", result.determinism_tier},
      {"tolerance", {{"class", result.tolerance}, {"atol", result.atol}, {"rtol", result.rtol}}},
      {"device_profile", result.profile},
      {"backend", result.backend},
      {"executor", result.executor},
      {"fallback_reason", result.fallback_reason ? Json(*result.fallback_reason) : Json()},
      {"receipts", Json::array()},
      {"user_ops", CallableUserOpsJson(options.compile.lower.ops.get())},
      // The dataset is named by its source; its files are read again on replay.
      {"inputs", {{"dataset", {{"source", result.dataset}}}}},
      {"outputs", outputs},
      {"settings",
       {{"compile", CompileSettingsJson(options.compile)},
        {"backend", options.select.requested},
        {"allow_software_adapter", options.select.allow_software_adapter},
        {"epochs", options.epochs},
        {"steps_per_run", options.steps_per_run},
        {"max_steps", options.max_steps},
        {"ranks", options.ranks},
        {"chunks", options.chunks},
        {"resumed", !options.resume.empty()}}}};
  return PutRecord(store, document, std::move(record));
}

Result<Json> LoadRecord(const store::Store& store, const std::string& run_id) {
  SCELLIS_ASSIGN_OR_RETURN(Json record, store.Get(run_id));
  if (!record.is_object() || record.value("kind", "") != kRunRecordKind) {
    return UserError("not-a-run-record", "",
                     run_id + " is in the store but is not a run record of this version",
                     "scellis runs lists the run records");
  }
  return record;
}

Result<Json> RecordWithValues(const store::Store& store, const std::string& run_id) {
  SCELLIS_ASSIGN_OR_RETURN(Json record, LoadRecord(store, run_id));
  Json values = Json::object();
  const Json outputs = record.value("outputs", Json::object());
  for (const auto& [name, digest] : outputs.items()) {
    auto t = KeptTensor(store, digest);
    if (t.ok()) {
      values[name] = api::TensorToJson(t.value());
    } else if (t.errors().front().code == "record-tensor-not-kept") {
      values[name] = nullptr;
    } else {
      Diagnostic d = t.errors().front();
      d.message = "output \"" + name + "\": " + d.message;
      return Status(d);
    }
  }
  record["run_id"] = run_id;
  record["values"] = std::move(values);
  return record;
}

Json RunSummary::ToJson() const {
  return {{"run_id", id},       {"date", date}, {"command", command},
          {"backend", backend}, {"tier", tier}, {"content_id", content_id}};
}

std::vector<RunSummary> ListRuns(const store::Store& store, size_t limit,
                                 std::vector<Diagnostic>* problems) {
  std::vector<RunSummary> runs;
  std::vector<std::string> days = store.Keys(kRecordIndex, "");
  for (auto day = days.rbegin(); day != days.rend(); ++day) {
    std::vector<RunSummary> of_day;
    for (const std::string& id : store.Lookup(kRecordIndex, "", *day)) {
      auto r = LoadRecord(store, id);
      if (!r.ok()) {
        if (problems) problems->push_back(r.errors().front());
        continue;
      }
      const Json& j = r.value();
      of_day.push_back({id, j.value("date", ""), j.value("command", ""), j.value("backend", ""),
                        j.value("tier", ""), j.value("content_id", "")});
    }
    std::sort(of_day.begin(), of_day.end(), [](const RunSummary& a, const RunSummary& b) {
      return a.date != b.date ? a.date > b.date : a.id < b.id;
    });
    runs.insert(runs.end(), of_day.begin(), of_day.end());
    if (limit && runs.size() >= limit) break;
  }
  if (limit && runs.size() > limit) runs.resize(limit);
  return runs;
}

bool RecordingEnabled() {
  const char* off = std::getenv("SCELLIS_NO_RECORD");
  return off == nullptr || *off == 0 || std::string(off) == "0";
}

bool IsRecordObject(const Json& object) {
  if (!object.is_object() || !object.contains("kind") || !object["kind"].is_string()) return false;
  const std::string kind = object["kind"].get<std::string>();
  return kind == kRunRecordKind || kind == "scellis.run-record/1" ||
         kind == "scellis.train-record/1" || kind == "scellis.shard_run/1";
}

}  // namespace scellis::record
