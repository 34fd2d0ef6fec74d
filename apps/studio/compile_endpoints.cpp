#include "compile_endpoints.h"

#include "base/diagnostic_json.h"
#include "compile_request.h"
#include "pipeline/compile.h"
#include "pipeline/links.h"
#include "replies.h"
#include "runtime/device_program.h"

namespace scellis::studio {

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

}  // namespace scellis::studio
