#include "tab_conform.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>

#include "base/diagnostic_json.h"
#include "conform/runner.h"
#include "replies.h"
#include "runtime/device_program.h"

namespace scellis::studio {
namespace {

std::string NewJobId() {
  std::random_device rd;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return buf;
}

// The largest answer a job may hold: what a group's cases output, twice in the debug tier.
constexpr int64_t kMaxTabAnswerBytes = int64_t{256} << 20;

Diagnostic NoJob() {
  return UserError("not-found", "", "there is no browser conformance job by that id",
                   "jobs are what POST /api/conform/browser returns; the server keeps the " +
                       std::to_string(kMaxTabConformJobs) + " newest");
}

// Splits "<job>/<case>/<run>/<offset>" and the like into its parts.
std::vector<std::string> Segments(const std::string& rest) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= rest.size()) {
    size_t slash = rest.find('/', start);
    if (slash == std::string::npos) slash = rest.size();
    parts.push_back(rest.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

std::optional<int64_t> Index(const std::string& s, int64_t high) {
  if (s.empty() || s.size() > 12 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  int64_t v = std::stoll(s);
  return v <= high ? std::optional<int64_t>(v) : std::nullopt;
}

}  // namespace

std::optional<api::BrowserAdapter> ParseAdapter(const Json& body, std::vector<Diagnostic>& errors) {
  auto it = body.find("adapter");
  if (it == body.end() || !it->is_object()) {
    errors.push_back(BadField("adapter", "\"adapter\" is missing or not an object",
                              "describe the tab's adapter: {vendor, architecture, device, "
                              "description, software, limits}"));
    return std::nullopt;
  }
  static const std::vector<std::string> kStrings = {"vendor", "architecture", "device",
                                                    "description"};
  static const std::vector<std::string> kLimits = {"maxStorageBufferBindingSize", "maxBufferSize",
                                                   "minStorageBufferOffsetAlignment",
                                                   "maxComputeWorkgroupsPerDimension"};
  api::BrowserAdapter a;
  const size_t before = errors.size();
  for (const auto& [key, value] : it->items()) {
    const std::string at = "adapter/" + key;
    if (std::find(kStrings.begin(), kStrings.end(), key) != kStrings.end()) {
      if (!value.is_string() || value.get<std::string>().size() > 256) {
        errors.push_back(BadField(at, "\"" + key + "\" is not a string of at most 256 bytes"));
        continue;
      }
      std::string v = value.get<std::string>();
      (key == "vendor"         ? a.vendor
       : key == "architecture" ? a.architecture
       : key == "device"       ? a.device
                               : a.description) = v;
    } else if (key == "software") {
      if (!value.is_boolean())
        errors.push_back(BadField(at, "\"software\" is not a boolean"));
      else
        a.is_software = value.get<bool>();
    } else if (key == "limits") {
      if (!value.is_object()) {
        errors.push_back(BadField(at, "\"limits\" is not an object"));
        continue;
      }
      for (const auto& [name, n] : value.items()) {
        if (std::find(kLimits.begin(), kLimits.end(), name) == kLimits.end())
          continue;  // others unused
        if (!n.is_number_unsigned() || n.get<uint64_t>() == 0 ||
            n.get<uint64_t>() > (uint64_t{1} << 48)) {
          errors.push_back(BadField(at + "/" + name, "\"" + name + "\" is not a positive integer"));
          continue;
        }
        const uint64_t v = n.get<uint64_t>();
        if (name == "maxStorageBufferBindingSize")
          a.max_storage_buffer_binding_size = v;
        else if (name == "maxBufferSize")
          a.max_buffer_size = v;
        else if (name == "minStorageBufferOffsetAlignment")
          a.min_storage_buffer_offset_alignment =
              static_cast<uint32_t>(std::min<uint64_t>(v, 1u << 16));
        else
          a.max_compute_workgroups_per_dimension =
              static_cast<uint32_t>(std::min<uint64_t>(v, 1u << 31));
      }
    } else {
      errors.push_back(UserError("unknown-field", "/" + at,
                                 "the adapter has no field \"" + key.substr(0, 64) + "\""));
    }
  }
  if (errors.size() != before) return std::nullopt;
  return a;
}

Response TabConformStart(Engine& engine, const Request& req) {
  Response refusal;
  std::optional<Json> body = ParseBody(engine, req, {"tier", "op", "seed", "adapter"}, refusal);
  if (!body) return refusal;
  std::vector<Diagnostic> errors;
  std::string tier, op;
  if (auto t = body->find("tier"); t != body->end() && t->is_string()) tier = t->get<std::string>();
  if (auto o = body->find("op"); o != body->end() && o->is_string())
    op = o->get<std::string>();
  else
    errors.push_back(BadField("op", "\"op\" is missing or not a string",
                              "one op of GET /api/ops, or \"fused\""));
  uint64_t seed = conform::FreshSeed();
  if (auto s = body->find("seed"); s != body->end() && !s->is_null()) {
    if (!s->is_number_unsigned())
      errors.push_back(BadField("seed", "\"seed\" is not a non-negative integer"));
    else
      seed = s->get<uint64_t>();
  }
  std::optional<api::BrowserAdapter> adapter = ParseAdapter(*body, errors);
  if (!errors.empty()) return ErrorResponse(400, errors);
  auto cases = api::BrowserCases(op, tier, seed, *adapter);
  if (!cases.ok()) return ErrorResponse(StatusFor(cases.errors()), cases.errors());

  const bool debug = tier == "debug";
  TabConformJob job;
  job.tier = tier;
  job.op = op;
  job.seed = seed;
  job.adapter = *adapter;
  Json out = Json::array();
  int64_t total = 0;
  for (const conform::RemoteCase& rc : *cases) {
    Json c = {{"id", rc.id}, {"error", rc.error.empty() ? Json() : Json(rc.error)}};
    int64_t bytes = 0;
    if (rc.program) {
      Json feeds = Json::object();
      for (const auto& [name, t] : rc.feeds)
        feeds[name] = {{"dtype", DTypeName(t.type.dtype)},
                       {"shape", t.type.sizes()},
                       {"data", runtime::Base64Encode(t.bytes)}};
      const runtime::ProgramOutput& o = rc.program->outputs.at(0);
      bytes = o.bytes;
      c["program"] = runtime::ToJson(*rc.program);
      c["feeds"] = std::move(feeds);
      c["output"] = {
          {"name", o.name}, {"shape", o.shape}, {"dtype", DTypeName(o.dtype)}, {"bytes", o.bytes}};
    }
    job.case_ids.push_back(rc.program ? rc.id : "");
    job.output_bytes.push_back(bytes);
    total += bytes * (debug ? 2 : 1);
    out.push_back(std::move(c));
  }
  if (total > kMaxTabAnswerBytes)
    return ErrorResponse(
        413, UserError("request-too-large", "/op",
                       "the answers of \"" + op + "\" would be " + std::to_string(total) +
                           " bytes, over the server's " + std::to_string(kMaxTabAnswerBytes)));
  for (auto& runs : job.runs) runs.resize(job.case_ids.size());
  job.errors.resize(job.case_ids.size());
  const std::string id = NewJobId();
  {
    std::lock_guard<std::mutex> lock(engine.tab_jobs_lock());
    auto& order = engine.tab_job_order();
    while (order.size() >= kMaxTabConformJobs) {
      engine.tab_jobs().erase(order.front());
      order.erase(order.begin());
    }
    engine.tab_jobs()[id] = std::move(job);
    order.push_back(id);
  }
  return JsonResponse(200, {{"job", id},
                            {"tier", tier},
                            {"op", op},
                            {"seed", seed},
                            {"profile", api::BrowserProfile(*adapter).key},
                            {"runs", debug ? 2 : 1},
                            {"cases", std::move(out)}});
}

Response TabConformJobRequest(Engine& engine, const Request& req, const std::string& rest) {
  const std::vector<std::string> parts = Segments(rest);
  std::unique_lock<std::mutex> lock(engine.tab_jobs_lock());
  auto it = engine.tab_jobs().find(parts[0]);
  if (it == engine.tab_jobs().end()) return ErrorResponse(404, NoJob());
  TabConformJob& job = it->second;

  if (parts.size() == 2 && parts[1] == "judge") {
    if (req.method != "POST") return MethodNotAllowed("POST");
    Response refusal;
    if (!ParseBody(engine, req, {}, refusal)) return refusal;
    TabConformJob taken = std::move(job);
    engine.tab_jobs().erase(it);
    auto& order = engine.tab_job_order();
    order.erase(std::remove(order.begin(), order.end(), parts[0]), order.end());
    lock.unlock();

    std::map<std::string, conform::RemoteAnswer> answers;
    const bool debug = taken.tier == "debug";
    for (size_t i = 0; i < taken.case_ids.size(); ++i) {
      if (taken.case_ids[i].empty()) continue;
      conform::RemoteAnswer a;
      if (!taken.errors[i].empty()) {
        a.error = taken.errors[i];
      } else {
        auto complete = [&](int run) {
          return static_cast<int64_t>(taken.runs[run][i].size()) == taken.output_bytes[i];
        };
        if (!complete(0) || (debug && !complete(1))) continue;  // judged as "no answer"
        auto floats = [](const std::vector<std::byte>& b) {
          std::vector<float> f(b.size() / 4);
          std::memcpy(f.data(), b.data(), f.size() * 4);
          return f;
        };
        a.out = floats(taken.runs[0][i]);
        if (debug) a.rerun = floats(taken.runs[1][i]);
      }
      answers[taken.case_ids[i]] = std::move(a);
    }
    // The reference runs on the server's cores: one device job at a time.
    std::lock_guard<std::mutex> worker(engine.worker());
    auto report = api::JudgeBrowser(taken.op, taken.tier, taken.seed, taken.adapter, answers,
                                    engine.store().root());
    if (!report.ok()) return ErrorResponse(StatusFor(report.errors()), report.errors());
    Json j = report->ToJson();
    j["diagnostics"] = DiagnosticsToJson(report->store_problems);
    return JsonResponse(200, j);
  }

  std::optional<int64_t> index =
      parts.size() >= 3 ? Index(parts[1], static_cast<int64_t>(job.case_ids.size()) - 1)
                        : std::nullopt;
  if (!index || job.case_ids[*index].empty())
    return NotFound("runnable case " + parts[1].substr(0, 20) + " in this job");
  const size_t i = static_cast<size_t>(*index);

  if (parts.size() == 3 && parts[2] == "failed") {
    if (req.method != "POST") return MethodNotAllowed("POST");
    Response refusal;
    std::optional<Json> body = ParseBody(engine, req, {"error"}, refusal);
    if (!body) return refusal;
    auto e = body->find("error");
    if (e == body->end() || !e->is_string() || e->get<std::string>().empty())
      return ErrorResponse(400,
                           BadField("error", "\"error\" is missing or not a non-empty string"));
    job.errors[i] = e->get<std::string>().substr(0, 1000);
    return JsonResponse(200, {{"case", job.case_ids[i]}, {"failed", true}});
  }

  if (parts.size() != 4) return NotFound("API endpoint " + req.path.substr(0, 100));
  if (req.method != "PUT") return MethodNotAllowed("PUT");
  const int runs = job.tier == "debug" ? 2 : 1;
  std::optional<int64_t> run = Index(parts[2], runs - 1);
  std::optional<int64_t> offset = Index(parts[3], job.output_bytes[i]);
  if (!run)
    return NotFound("run " + parts[2].substr(0, 20) + " of this case (the tier runs each case " +
                    std::to_string(runs) + " time" + (runs > 1 ? "s" : "") + ")");
  if (MediaType(req.content_type) != "application/octet-stream")
    return ErrorResponse(415, UserError("unsupported-media-type", "",
                                        "an answer is sent as application/octet-stream, not \"" +
                                            req.content_type.substr(0, 100) + "\""));
  if (req.body.size() > engine.options().max_request_bytes)
    return ErrorResponse(413, UserError("request-too-large", "",
                                        "an answer chunk has " + std::to_string(req.body.size()) +
                                            " bytes, over the server's cap of " +
                                            std::to_string(engine.options().max_request_bytes),
                                        "send it in smaller chunks"));
  std::vector<std::byte>& have = job.runs[*run][i];
  if (!offset || *offset != static_cast<int64_t>(have.size()))
    return ErrorResponse(409,
                         UserError("bad-offset", "",
                                   "this chunk starts at byte " + parts[3].substr(0, 20) +
                                       "; the answer so far has " + std::to_string(have.size()),
                                   "send the chunks in order"));
  if (static_cast<int64_t>(have.size() + req.body.size()) > job.output_bytes[i])
    return ErrorResponse(422, UserError("answer-too-long", "",
                                        "the output of " + job.case_ids[i] + " has " +
                                            std::to_string(job.output_bytes[i]) +
                                            " bytes; this chunk goes past it"));
  const auto* bytes = reinterpret_cast<const std::byte*>(req.body.data());
  have.insert(have.end(), bytes, bytes + req.body.size());
  return JsonResponse(200, {{"case", job.case_ids[i]},
                            {"run", *run},
                            {"received", have.size()},
                            {"bytes", job.output_bytes[i]}});
}

}  // namespace scellis::studio
