// Running a document's one large matmul over the ranks of a job (`run --ranks=N`): every rank
// plans the same WorkPlan (workplan/matmul_split.h), computes its block of the output on its own
// device, and the blocks are gathered to rank 0, which assembles the output and reports the run as
// a one-process run would. On the CPU reference the output is bit for bit the one-process run's.
#pragma once

#include <optional>

#include "api/run.h"
#include "workplan/collective.h"

namespace scellis::api {

// What each rank is told about the run it takes part in, before it computes anything.
struct SplitRunEvents {
  std::function<void(const Diagnostic&)> note;
  std::function<void(const std::string& backend, const std::optional<std::string>& fallback)>
      backend;
};

// The run's report on rank 0; nullopt on the other ranks. A document that does not partition, or a
// WorkPlan that is red, is refused alike on every rank before any collective. A failure after the
// ranks began computing ends the job through `world.Abort` (another rank may be waiting).
// `options.steps` must be 1 and `options.history` empty (a split run is one step).
Result<std::optional<RunReport>> RunSplit(std::string_view text, const RunOptions& options,
                                          workplan::Collective& world,
                                          const SplitRunEvents& events = {});

}  // namespace scellis::api
