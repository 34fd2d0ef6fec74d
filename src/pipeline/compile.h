// The whole descent, for callers above the ladder (the CLI, sessions, the Studio server): document
// text → Document → Program → Graph → Module → Plan, stopping at the requested rung. Each rung is
// verified as it is made.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "block/program.h"
#include "base/result.h"
#include "doc/document.h"
#include "execplan/plan.h"
#include "kernel/module.h"
#include "webir/graph.h"

namespace scellis::pipeline {

enum class Rung { kDoc = 0, kBlock = 1, kWebir = 2, kKernel = 3, kExecplan = 4 };
std::optional<Rung> ParseRung(const std::string& s);
const char* RungName(Rung r);

struct CompileOptions {
  block::LowerOptions lower;
  execplan::PlanOptions plan;
  Rung up_to = Rung::kExecplan;
};

struct Compiled {
  doc::Document doc;
  std::optional<block::Program> program;
  std::optional<webir::Graph> graph;
  std::optional<kernel::Module> module;
  std::optional<execplan::Plan> plan;
  std::vector<Diagnostic> notes;  // warnings gathered on the way down
};

Result<Compiled> Compile(std::string_view text, const CompileOptions& options);

// The text printer of one rung of `c` (which must have reached it).
std::string PrintRung(const Compiled& c, Rung r);
Json RungJson(const Compiled& c, Rung r);

}  // namespace scellis::pipeline
