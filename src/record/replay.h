// Replaying a run record: the recorded document is run again with the recorded settings, on the
// recorded backend, and every output is compared with the record. A session record's session is
// prepared again from its initial values and every recorded step re-run with its feeds; its
// outputs are the watched values after each step (record/session_record.h).
//
// The guarantee a record carries decides the comparison:
//   bit-exact   a run on the CPU reference (the same bits on every machine), or a run at tier
//               debug (bit-identical reruns on the same device profile): every output's digest
//               must match. A debug record of a GPU run replays only on the same device profile;
//               elsewhere the replay is refused (`replay-profile-mismatch`), never downgraded.
//   tolerance   any other run: every element within the recorded thresholds (atol + rtol *
//               |recorded|), which needs the recorded values (kept blobs); an output kept only as
//               a digest must then match bit for bit, or the replay is refused
//               (`record-tensor-not-kept`) since it cannot be judged.
// A backend that cannot be had is refused too (`replay-backend-unavailable`), as is a training
// record that resumed from a checkpoint (`replay-needs-checkpoint`). A tampered record, document
// or kept tensor is refused by the store (`store-object-corrupt`).
//
// A record of a run that used user ops with callable references holds their definitions, not the
// callables: the replay is given them again (ReplayOptions::user_ops). One the record names but
// the replay is not given is refused (`replay-needs-user-op`), as is one given with another
// signature, WGSL or version string than the record's (`replay-user-op-mismatch`); either is
// refused before anything runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/user_ops.h"
#include "base/json_util.h"
#include "base/result.h"

namespace scellis::record {

struct ReplayOptions {
  std::string store_root;  // "": the default store
  int cpu_threads = 0;
  // The user ops with callable references the recorded run was given (extra ones are unused).
  std::vector<api::UserOpDefinition> user_ops;
};

struct OutputComparison {
  std::string name;
  bool digest_equal = false;  // bit for bit
  bool ok = false;            // within the guarantee
  bool compared_values = false;
  int64_t first_difference = -1;  // the first element outside the guarantee; -1: none or unknown
  double replayed = 0, recorded = 0;  // at first_difference
  double max_abs_diff = 0;
};

struct ReplayResult {
  std::string run_id, command;
  std::string guarantee;  // "bit-exact" | "tolerance"
  std::string tolerance;  // the recorded class
  double atol = 0, rtol = 0;
  std::string recorded_profile, profile, backend;
  std::vector<OutputComparison> outputs;
  bool agree = false;

  // The first output outside the guarantee, or nullptr.
  const OutputComparison* first_disagreement() const;
  // `replay-disagrees`, naming that output and its first differing element; none when the
  // replay agrees with the record.
  std::optional<Diagnostic> Disagreement() const;
  Json ToJson() const;
};

Result<ReplayResult> Replay(const std::string& run_id, const ReplayOptions& options = {});

}  // namespace scellis::record
