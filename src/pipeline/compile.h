// The whole descent, for callers above the ladder (the CLI, sessions, the Studio server): document
// text → Document → Program → Graph → Module → Plan, stopping at the requested rung. Each lowering
// (FromX) does the structural conversion only; the named passes listed in compile.cpp transform
// the rung in place, in order. Each rung is verified once its passes ran.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/result.h"
#include "block/program.h"
#include "doc/document.h"
#include "execplan/plan.h"
#include "kernel/module.h"
#include "webir/graph.h"

namespace scellis::pipeline {

enum class Rung { kDoc = 0, kBlock = 1, kWebir = 2, kKernel = 3, kExecplan = 4 };
std::optional<Rung> ParseRung(const std::string& s);
const char* RungName(Rung r);

// One named pass. Optional passes may be disabled (the result stays correct, only slower).
struct Pass {
  Rung rung;
  std::string_view name;
  bool optional;
  std::variant<Status (*)(webir::Graph&), Status (*)(kernel::Module&), Status (*)(execplan::Plan&)>
      run;
};
// Every pass, in the order the descent runs them.
const std::vector<Pass>& Passes();

struct CompileOptions {
  block::LowerOptions lower;
  execplan::PlanOptions plan;
  Rung up_to = Rung::kExecplan;
  std::string print_after;                // stop after this pass (its rung as it stands)
  std::set<std::string> disabled_passes;  // optional passes only
  // Every matmul takes this schedule in place of the one schedule-matmul chooses (tests and
  // benchmarks compare schedules on one shape); see kernel::Module::matmul_schedule_override.
  std::optional<kernel::MatmulSchedule> matmul_schedule;
  // Likewise for wide elementwise kernels; see kernel::Module::elementwise_schedule_override.
  std::optional<kernel::ElementwiseSchedule> elementwise_schedule;
  // Likewise the chunk of wide sums; see kernel::Module::sum_chunk_override.
  std::optional<int64_t> sum_chunk;
  // The largest tile of block-butterfly-stages; see kernel::Module::stage_tile_override.
  std::optional<int64_t> stage_tile;
};

// Each rung is owned once; a later rung refers to the one it was lowered from.
struct Compiled {
  doc::Document doc;
  std::optional<block::Program> program;
  std::shared_ptr<const webir::Graph> graph;
  std::shared_ptr<const kernel::Module> module;
  std::optional<execplan::Plan> plan;
  std::vector<Diagnostic> notes;  // warnings gathered on the way down
  std::string stopped_after;      // the pass named by print_after, once it ran
};

Result<Compiled> Compile(std::string_view text, const CompileOptions& options);
// The descent from WebIR down, for callers that build a graph themselves (tests, conformance): the
// WebIR passes, then the kernel and plan rungs. `doc` and `program` stay empty.
Result<Compiled> CompileGraph(webir::Graph g, const CompileOptions& options);

// The rung the pass named `name` transforms; a `bad-pass` diagnostic for an unknown name.
Result<Rung> RungOfPass(const std::string& name);

// The text printer of one rung of `c` (which must have reached it).
std::string PrintRung(const Compiled& c, Rung r);
Json RungJson(const Compiled& c, Rung r);

// The rung dumps of a compiled module (which reached execplan): (file name, text), as
// `lower --dump-rungs` writes them.
std::vector<std::pair<std::string, std::string>> RungDumps(const Compiled& c);

}  // namespace scellis::pipeline
