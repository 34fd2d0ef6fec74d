#include "tab_conform.h"

#include <algorithm>
#include <mutex>

#include "base/diagnostic_json.h"
#include "conform/runner.h"
#include "replies.h"
#include "runtime/device_program.h"

namespace scellis::studio {
namespace {

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

// A non-negative decimal segment of a path; whether it names a case, run or offset of the job is
// the job's to say.
std::optional<int64_t> Index(const std::string& s) {
  if (s.empty() || s.size() > 12 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(s);
}

// The status a job's refusal calls for.
int StatusOfJob(const std::vector<Diagnostic>& diags) {
  const std::string& code = diags.front().code;
  if (code == "not-found") return 404;
  if (code == "bad-offset") return 409;
  if (code == "request-too-large") return 413;
  return StatusFor(diags);
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
  auto started = engine.browser_jobs().Start(op, tier, seed, *adapter);
  if (!started.ok()) return ErrorResponse(StatusOfJob(started.errors()), started.errors());
  Json out = Json::array();
  for (const conform::RemoteCase& rc : started->cases) {
    Json c = {{"id", rc.id}, {"error", rc.error.empty() ? Json() : Json(rc.error)}};
    if (rc.program) {
      Json feeds = Json::object();
      for (const auto& [name, t] : rc.feeds)
        feeds[name] = {{"dtype", DTypeName(t.type.dtype)},
                       {"shape", t.type.sizes()},
                       {"data", runtime::Base64Encode(t.bytes)}};
      const runtime::ProgramOutput& o = rc.program->outputs.at(0);
      c["program"] = runtime::ToJson(*rc.program);
      c["feeds"] = std::move(feeds);
      c["output"] = {
          {"name", o.name}, {"shape", o.shape}, {"dtype", DTypeName(o.dtype)}, {"bytes", o.bytes}};
    }
    out.push_back(std::move(c));
  }
  return JsonResponse(200, {{"job", started->job},
                            {"tier", tier},
                            {"op", op},
                            {"seed", seed},
                            {"profile", api::BrowserProfile(*adapter).key},
                            {"runs", started->runs},
                            {"cases", std::move(out)}});
}

Response TabConformJobRequest(Engine& engine, const Request& req, const std::string& rest) {
  const std::vector<std::string> parts = Segments(rest);
  api::BrowserJobs& jobs = engine.browser_jobs();
  const std::string& job = parts[0];

  if (parts.size() == 2 && parts[1] == "judge") {
    if (req.method != "POST") return MethodNotAllowed("POST");
    Response refusal;
    if (!ParseBody(engine, req, {}, refusal)) return refusal;
    auto taken = jobs.Take(job);
    if (!taken.ok()) return ErrorResponse(StatusOfJob(taken.errors()), taken.errors());
    // The reference runs on the server's cores: one device job at a time.
    std::lock_guard<std::mutex> worker(engine.worker());
    auto report = api::JudgeBrowser(taken->op, taken->tier, taken->seed, taken->adapter,
                                    taken->answers, engine.store().root());
    if (!report.ok()) return ErrorResponse(StatusFor(report.errors()), report.errors());
    Json j = report->ToJson();
    j["diagnostics"] = DiagnosticsToJson(report->store_problems);
    return JsonResponse(200, j);
  }

  const std::optional<int64_t> index = parts.size() >= 3 ? Index(parts[1]) : std::nullopt;
  if (!index) return NotFound("runnable case " + parts[1].substr(0, 20) + " in this job");

  if (parts.size() == 3 && parts[2] == "failed") {
    if (req.method != "POST") return MethodNotAllowed("POST");
    Response refusal;
    std::optional<Json> body = ParseBody(engine, req, {"error"}, refusal);
    if (!body) return refusal;
    auto e = body->find("error");
    if (e == body->end() || !e->is_string() || e->get<std::string>().empty())
      return ErrorResponse(400,
                           BadField("error", "\"error\" is missing or not a non-empty string"));
    auto failed = jobs.Fail(job, *index, e->get<std::string>());
    if (!failed.ok()) return ErrorResponse(StatusOfJob(failed.errors()), failed.errors());
    return JsonResponse(200, {{"case", failed.value()}, {"failed", true}});
  }

  if (parts.size() != 4) return NotFound("API endpoint " + req.path.substr(0, 100));
  if (req.method != "PUT") return MethodNotAllowed("PUT");
  const std::optional<int64_t> run = Index(parts[2]), offset = Index(parts[3]);
  if (!run) return NotFound("run " + parts[2].substr(0, 20) + " of this case");
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
  if (!offset)
    return ErrorResponse(409, UserError("bad-offset", "",
                                        "this chunk's offset \"" + parts[3].substr(0, 20) +
                                            "\" is not a byte offset",
                                        "send the chunks in order"));
  auto received = jobs.Append(job, *index, *run, *offset, req.body);
  if (!received.ok()) return ErrorResponse(StatusOfJob(received.errors()), received.errors());
  return JsonResponse(200, {{"case", received->case_id},
                            {"run", *run},
                            {"received", received->received},
                            {"bytes", received->bytes}});
}

}  // namespace scellis::studio
