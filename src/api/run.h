// Running a document once or for many steps: the facade behind `scellis run` (and every other
// front end that runs a document). The backend is chosen first, since the plan is judged against
// the limits of the device it runs on; a red plan is refused before anything is dispatched.
//
// Many steps run as a prepared session: carried values stay on the backend between steps, up to
// 64 steps go into one submission, and only what the caller asked for comes back — the last value
// of each output, plus the value after every step of the outputs named in `history` (a loss curve,
// say). A 1000-generation Game of Life reads back one grid, not a thousand.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conform/receipt.h"
#include "pipeline/compile.h"
#include "runtime/backends/select.h"

namespace scellis::api {

// Steps per run: the most a prepared session takes in one run (read back once).
inline constexpr int kMaxStepsPerSubmission = 64;

struct RunOptions {
  pipeline::CompileOptions compile;  // tier, bindings, budget; the device limits are filled in
  runtime::SelectOptions select;
  int steps = 1;
  std::vector<std::string> history;  // outputs whose value after every step is returned
  std::string store_root;            // where receipts are looked up; "" : the default store
  // Values for inputs and params by name, in place of inline data or initializers: a front end
  // hands its callers' arrays over as bytes instead of writing them into the document's JSON.
  runtime::Feeds feeds;
  // Pins the backend's executor ("fused-encoder" | "generic" on WebGPU); "" lets it choose.
  std::string executor;
  // When set, the run is refused (`replay-profile-mismatch`, before anything is compiled or
  // dispatched) unless the chosen backend's device profile is exactly this one: a replay that
  // promises bit-exactness must not quietly run on another device.
  std::optional<std::string> require_profile;
};

// What a front end may want to tell its user before the run starts.
struct RunEvents {
  std::function<void(const Diagnostic&)> note;  // compiler and planner notes and warnings
  // The backend chosen, with the reason when `auto` fell back (before any dispatch).
  std::function<void(const std::string& backend, const std::optional<std::string>& fallback)>
      backend;
  // The whole choice — backend, fallback reason, every backend tried and why it was passed over —
  // once the plan is accepted, before any dispatch.
  std::function<void(const runtime::Selection&)> selected;
  // After every submission of a many-step run: steps done of the total.
  std::function<void(int done, int total)> progress;
  // A streamed run (api/stream.h), after every chunk: rows done of the streamed input's total.
  std::function<void(int64_t rows_done, int64_t rows)> stream_progress;
  // Asked after every submission: true stops the run with `cancelled` (the Studio's page went
  // away); nothing of it is reported.
  std::function<bool()> cancelled;
};

struct RunReport {
  std::string backend;   // "cpu" | "webgpu"
  std::string executor;  // "reference" | "fused-encoder" | "generic"
  // Why the run did not take the best path: the backend `auto` fell back from, or the executor
  // that was pinned in place of the fused encoder. Null when nothing fell back.
  std::optional<std::string> fallback_reason;
  std::vector<std::string> attempts;  // every backend tried, with why it was passed over
  std::string determinism_tier;
  std::string content_id;
  std::string profile;    // the device profile the run happened on (DeviceProfile::key)
  std::string adapter;    // which adapter of the host (DeviceProfile::adapter), or ""
  std::string plan_hash;  // workplan::PlanHash of the plan that ran
  std::string tolerance;  // the graph's tolerance class, and its thresholds at the run's tier
  policy::Thresholds thresholds;
  int steps = 1;
  // The last value of every output, in the graph's output order.
  std::vector<std::pair<std::string, runtime::HostTensor>> outputs;
  // For each output named in RunOptions::history, its value after every step.
  std::vector<std::pair<std::string, std::vector<runtime::HostTensor>>> history;
  // The backend's own counters plus "steps", "submissions" and "readback_bytes" (every byte
  // brought back to the host for this run).
  Json stats = Json::object();
  // A run of a streamed input in chunks (api/stream.h): the input, its rows, the rows per chunk
  // and the chunks; null when the run took its inputs whole.
  Json streaming;
  // Which kernels hold conformance receipts on this device (WebGPU runs with a store only).
  std::optional<conform::ReceiptReport> receipts;

  int64_t readback_bytes() const { return stats.value("readback_bytes", int64_t{0}); }
  // `{"backend": ..., "outputs": {"next": {"shape": [16, 16], "dtype": "f32", "data": [...]}},
  //   "history": {"loss": {"shape": [], "dtype": "f32", "steps": [[...], ...]}}, "stats": ...}`.
  Json ToJson() const;
};

// A training workflow whose dataset feeds its inputs (the train section's images and labels), run
// as a document: `dataset-not-read` at the images input, since a run reads no dataset (the trainer
// feeds those inputs batch by batch). None for any other program. Run refuses such a workflow with
// it once its plan is judged, unless the images input is fed.
std::optional<Diagnostic> DatasetNotRead(const block::Program& p);

Result<RunReport> Run(std::string_view text, const RunOptions& options,
                      const RunEvents& events = {});

// The fallback a pinned executor amounts to ("the generic executor was pinned: ..."), or none
// when `executor` is "" or the backend's best.
std::optional<std::string> PinnedExecutorFallback(const std::string& executor);

// A host tensor as JSON: shape, dtype and values (integral values as integers, non-finite ones
// as the strings "NaN", "Infinity", "-Infinity").
Json TensorToJson(const runtime::HostTensor& t);

// The values of a host tensor as f32 (an integer beyond 2^24 rounded to one).
std::vector<float> ValuesOf(const runtime::HostTensor& t);

// Each value as printed text: floats as the shortest decimal of their f32 or f16 value ("nan",
// "inf" for the special ones), integers and bools exactly.
std::vector<std::string> ValueTexts(const runtime::HostTensor& t);

}  // namespace scellis::api
