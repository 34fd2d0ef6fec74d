#include "pipeline/compile.h"

#include "base/enum_table.h"
#include "execplan/passes/check_guarantees.h"

namespace scellis::pipeline {

namespace {
constexpr EnumTable<Rung, 5> kRungs({{{Rung::kDoc, "doc"},
                                      {Rung::kBlock, "block"},
                                      {Rung::kWebir, "webir"},
                                      {Rung::kKernel, "kernel"},
                                      {Rung::kExecplan, "execplan"}}});
}  // namespace

std::optional<Rung> ParseRung(const std::string& s) {
  return kRungs.Parse(s);
}
const char* RungName(Rung r) {
  return kRungs.Name(r);
}

Result<Compiled> Compile(std::string_view text, const CompileOptions& options) {
  Compiled c;
  SCELLIS_ASSIGN_OR_RETURN(c.doc, doc::Parse(text, *options.lower.ops));
  if (options.up_to < Rung::kBlock) return c;
  SCELLIS_ASSIGN_OR_RETURN(c.program, block::FromDoc(c.doc, options.lower));
  c.notes = c.program->notes;
  if (options.up_to < Rung::kWebir) return c;
  SCELLIS_ASSIGN_OR_RETURN(c.graph, webir::FromBlock(*c.program));
  if (options.up_to < Rung::kKernel) return c;
  SCELLIS_ASSIGN_OR_RETURN(c.module, kernel::FromWebir(*c.graph));
  if (options.up_to < Rung::kExecplan) return c;
  SCELLIS_ASSIGN_OR_RETURN(c.plan, execplan::FromKernel(*c.module, options.plan));
  SCELLIS_TRY(execplan::CheckGuarantees(*c.plan));
  return c;
}

std::string PrintRung(const Compiled& c, Rung r) {
  switch (r) {
    case Rung::kDoc:
      return doc::Print(c.doc);
    case Rung::kBlock:
      return block::Print(*c.program);
    case Rung::kWebir:
      return webir::Print(*c.graph);
    case Rung::kKernel:
      return kernel::Print(*c.module);
    case Rung::kExecplan:
      return execplan::Print(*c.plan);
  }
  return "";
}

Json RungJson(const Compiled& c, Rung r) {
  switch (r) {
    case Rung::kDoc:
      return doc::ToJson(c.doc);
    case Rung::kBlock:
      return block::ToJson(*c.program);
    case Rung::kWebir:
      return webir::ToJson(*c.graph);
    case Rung::kKernel:
      return kernel::ToJson(*c.module);
    case Rung::kExecplan:
      return execplan::ToJson(*c.plan);
  }
  return Json();
}

}  // namespace scellis::pipeline
