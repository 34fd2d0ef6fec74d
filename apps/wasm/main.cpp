// The CPU reference compiled to WebAssembly: what a browser tab without a usable WebGPU adapter
// runs (web/wasm wraps it as @scellis/wasm-reference). One call runs a document through the same
// facade as `scellis run` (api::Run) on the CPU reference, single-threaded, and answers with the
// same JSON `scellis run --json --backend=cpu` prints: the run report, or
// {"ok": false, "diagnostics": [...]} when the document or the options are refused.
//
// Two additions, because a page has no stderr: the report carries "notes" (the compiler's and
// planner's warnings, which the CLI prints to stderr), and its "fallback_reason" is the caller's
// account of why WebGPU was not used ("no usable WebGPU adapter: <why>"), since only the page can
// know it. Backend and executor are the native reference's own, "cpu" and "reference": it is the
// same code, and its bits are the same.
//
// A second entry lowers a document to the device program the browser runtime (web/runtime)
// executes on the page's own WebGPU, exactly as `scellis_device_program` writes it natively: the
// runtime's pipelines (createPipeline) compile their traced documents through it.
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "api/run.h"
#include "base/diagnostic_json.h"
#include "base/json_util.h"
#include "doc/traced_document.h"
#include "pipeline/compile.h"
#include "runtime/device_program.h"

namespace scellis::wasm {
namespace {

Diagnostic BadOption(const std::string& message, const std::string& help = "") {
  return UserError("bad-run-option", "", message, help);
}

// The options of one run: {"tier": "debug" | "prod" | "fast", "steps": N, "history": [names],
// "bind": {"N": 64}, "budget": bytes, "why_no_webgpu": "..."}. Every field but why_no_webgpu may be
// left out, as the flags of `scellis run` may (a document may declare its own tier).
// The options both entries take for the descent: "tier" and "bind". False when `key` is neither.
bool ParseLowerOption(const std::string& key, const Json& value, block::LowerOptions& lower,
                      std::vector<Diagnostic>& errors) {
  if (key == "tier") {
    auto tier = value.is_string() ? policy::ParseTier(value.get<std::string>()) : std::nullopt;
    if (!tier)
      errors.push_back(BadOption("\"tier\" is " + value.dump().substr(0, 64) +
                                 ", expected \"debug\", \"prod\" or \"fast\""));
    else
      lower.tier = tier;
    return true;
  }
  if (key != "bind") return false;
  bool sizes = value.is_object();
  if (sizes)
    for (const auto& [name, size] : value.items())
      sizes = sizes && size.is_number_integer() && size.get<int64_t>() >= 0;
  if (!sizes)
    errors.push_back(
        BadOption("\"bind\" is not an object of dimension sizes", "for example {\"N\": 64}"));
  else
    for (const auto& [name, size] : value.items()) lower.bind[name] = size.get<int64_t>();
  return true;
}

Result<api::RunOptions> ParseOptions(const std::string& text, std::string& why_no_webgpu) {
  auto parsed = ParseUntrustedJson(text);
  if (!parsed.ok() || !parsed->is_object())
    return BadOption("the run options are not a JSON object");
  const Json& o = parsed.value();
  std::vector<Diagnostic> errors;
  api::RunOptions options;
  options.select.requested = "cpu";
  // No threads in the tab: the reference's bits do not depend on the count.
  options.select.cpu_threads = 1;
  for (const auto& [key, value] : o.items()) {
    if (ParseLowerOption(key, value, options.compile.lower, errors)) continue;
    if (key == "steps") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 1000000)
        errors.push_back(BadOption("\"steps\" is " + value.dump().substr(0, 64) +
                                   ", expected an integer from 1 to 1000000"));
      else
        options.steps = static_cast<int>(value.get<int64_t>());
    } else if (key == "history") {
      bool names = value.is_array();
      if (names)
        for (const Json& e : value) names = names && e.is_string();
      if (!names)
        errors.push_back(BadOption("\"history\" is not an array of output names"));
      else
        options.history = value.get<std::vector<std::string>>();
    } else if (key == "budget") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1)
        errors.push_back(BadOption("\"budget\" is " + value.dump().substr(0, 64) +
                                   ", expected a positive number of bytes"));
      else
        options.compile.plan.budget_bytes = value.get<int64_t>();
    } else if (key == "why_no_webgpu") {
      if (!value.is_string() || value.get<std::string>().empty())
        errors.push_back(BadOption("\"why_no_webgpu\" is not a non-empty string"));
      else
        why_no_webgpu = value.get<std::string>();
    } else {
      errors.push_back(
          BadOption("there is no run option \"" + key + "\"",
                    "the options are tier, steps, history, bind, budget and why_no_webgpu"));
    }
  }
  if (why_no_webgpu.empty() && !o.contains("why_no_webgpu"))
    errors.push_back(
        BadOption("the run options do not say why WebGPU is not used",
                  "pass \"why_no_webgpu\": the reason the page has no usable adapter"));
  if (!errors.empty()) return Status(errors);
  return options;
}

// Diagnostics as JSON, each naming the node its pointer lies in when the document parses. The
// document is parsed for that only when there are diagnostics to print: a large document's data
// is not read twice to run it.
Json DiagnosticsJson(const std::vector<Diagnostic>& diagnostics, std::string_view text) {
  if (diagnostics.empty()) return Json::array();
  auto document = ParseUntrustedJson(text);
  return DiagnosticsToJson(diagnostics, document.ok() ? &document.value() : nullptr);
}

std::string RunToJson(const char* document_text, const char* options_text) {
  const std::string_view text = document_text ? document_text : "";
  std::string why_no_webgpu;
  auto options = ParseOptions(options_text ? options_text : "", why_no_webgpu);
  if (!options.ok())
    return Json{{"ok", false}, {"diagnostics", DiagnosticsToJson(options.errors())}}.dump();

  std::vector<Diagnostic> notes;
  api::RunEvents events;
  events.note = [&](const Diagnostic& d) { notes.push_back(d); };
  auto result = api::Run(text, options.value(), events);
  if (!result.ok())
    return Json{{"ok", false}, {"diagnostics", DiagnosticsJson(result.errors(), text)}}.dump();
  Json report = result->ToJson();
  report["fallback_reason"] = "no usable WebGPU adapter: " + why_no_webgpu;
  report["notes"] = DiagnosticsJson(notes, text);
  return report.dump();
}

// The options of a lowering: {"tier": ..., "bind": {"N": 64}, "limits": {the device's
// max_storage_buffer_binding_size, min_storage_buffer_offset_alignment,
// max_compute_workgroups_per_dimension, max_storage_buffers_per_shader_stage}}; every field may be
// left out (WebGPU's guaranteed limits, the document's own tier; no storage-buffer count checked).
Result<runtime::ProgramLimits> ParseProgramOptions(const std::string& text,
                                                   pipeline::CompileOptions& compile) {
  auto parsed = ParseUntrustedJson(text);
  if (!parsed.ok() || !parsed->is_object())
    return BadOption("the program options are not a JSON object");
  std::vector<Diagnostic> errors;
  runtime::ProgramLimits limits;
  for (const auto& [key, value] : parsed->items()) {
    if (ParseLowerOption(key, value, compile.lower, errors)) continue;
    if (key == "limits" && value.is_object()) {
      for (const auto& [name, v] : value.items()) {
        if (!v.is_number_integer() || v.get<int64_t>() < 1) {
          errors.push_back(BadOption("the limit \"" + name + "\" is not a positive integer"));
        } else if (name == "max_storage_buffer_binding_size") {
          limits.max_storage_buffer_binding_size = v.get<uint64_t>();
        } else if (name == "min_storage_buffer_offset_alignment") {
          limits.min_storage_buffer_offset_alignment = v.get<uint32_t>();
        } else if (name == "max_compute_workgroups_per_dimension") {
          limits.max_compute_workgroups_per_dimension = v.get<uint32_t>();
        } else if (name == "max_storage_buffers_per_shader_stage") {
          // Judged by the plan: a kernel binding more makes it red, so no program is laid out.
          compile.plan.limits.max_storage_buffers_per_kernel = v.get<int64_t>();
        } else {
          errors.push_back(BadOption("there is no device limit \"" + name + "\""));
        }
      }
    } else {
      errors.push_back(BadOption("there is no program option \"" + key + "\"",
                                 "the options are tier, bind (an object) and limits (an object)"));
    }
  }
  if (!errors.empty()) return Status(errors);
  return limits;
}

std::string DeviceProgramToJson(const char* document_text, const char* options_text) {
  const std::string_view text = document_text ? document_text : "";
  pipeline::CompileOptions compile;
  auto limits = ParseProgramOptions(options_text ? options_text : "", compile);
  if (!limits.ok())
    return Json{{"ok", false}, {"diagnostics", DiagnosticsToJson(limits.errors())}}.dump();
  auto compiled = pipeline::Compile(text, compile);
  if (!compiled.ok())
    return Json{{"ok", false}, {"diagnostics", DiagnosticsJson(compiled.errors(), text)}}.dump();
  auto program = runtime::BuildDeviceProgram(*compiled->plan, {}, limits.value());
  if (!program.ok())
    return Json{{"ok", false}, {"diagnostics", DiagnosticsJson(program.errors(), text)}}.dump();
  return runtime::ToJson(*program).dump();
}

// A finished trace's document (doc::TracedDocument), for the browser runtime's tracer: the
// engine's answer, or the refusal.
std::string TracedDocumentToJson(const char* trace_text) {
  auto trace = ParseUntrustedJson(trace_text ? trace_text : "");
  if (!trace.ok())
    return Json{{"ok", false}, {"diagnostics", DiagnosticsToJson(trace.errors())}}.dump();
  auto made = doc::TracedDocument(trace.value());
  if (!made.ok())
    return Json{{"ok", false}, {"diagnostics", DiagnosticsToJson(made.errors())}}.dump();
  return made.value().dump();
}

char* Copy(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

}  // namespace
}  // namespace scellis::wasm

extern "C" {

// Runs the document (UTF-8 JSON text) with the options (a JSON object, see ParseOptions) and
// returns the report or the refusal as UTF-8 JSON text, which the caller releases with free().
char* scellis_run(const char* document_text, const char* options_json) {
  return scellis::wasm::Copy(scellis::wasm::RunToJson(document_text, options_json));
}

// Lowers the document (UTF-8 JSON text) to the device program the browser runtime executes, with
// the options (a JSON object, see ParseProgramOptions); returns the program
// ("scellis.device-program/1") or the refusal as UTF-8 JSON text, released with free().
char* scellis_device_program(const char* document_text, const char* options_json) {
  return scellis::wasm::Copy(scellis::wasm::DeviceProgramToJson(document_text, options_json));
}

// The document of a finished trace (UTF-8 JSON text, see doc::TracedDocument), as the browser
// runtime's tracer makes it: {doc, repeat, fed, state, prologue} or the refusal as UTF-8 JSON
// text, released with free(). The second argument (the calls' options object) takes nothing yet.
char* scellis_traced_document(const char* trace_text, const char* /*options_json*/) {
  return scellis::wasm::Copy(scellis::wasm::TracedDocumentToJson(trace_text));
}

// The engine's version (the project's, as the Studio server reports it); static storage.
const char* scellis_version() {
  return SCELLIS_VERSION;
}

}  // extern "C"
