// Shared pieces of the `scellis` command: the flags of each subcommand (filled and checked by
// ParseCommandLine, command_line.h), reading documents, reporting diagnostics.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "pipeline/compile.h"
#include "store/store.h"

namespace scellis::cli {

struct CompileFlags {
  std::string file;
  std::string tier;
  bool tier_override = false;
  std::vector<std::string> bind;        // N=64
  std::optional<int64_t> budget_bytes;  // --budget, converted (2G)
  bool json = false;
  std::vector<std::string> disabled_passes;  // --disable-pass (lower, plan, run)
  std::string print_after;                   // --print-after (lower)
  bool stream_dataset = false;  // --stream-dataset (plan, validate, train): stream, never hold
};

struct ConformFlags {
  std::vector<std::string> ops;  // empty: every op
  std::string tier;
  std::string backend = "auto";
  bool allow_software_adapter = false;
  std::optional<uint64_t> seed;  // none: a fresh one
  bool json = false;
  std::string doc;  // a document whose own ops --ops may name
};

// The flag problems conform can see without a device: no tier, an op it does not know, a --doc
// that cannot be read or does not parse.
std::vector<Diagnostic> CheckConformFlags(const ConformFlags& f);

// The compile options the flags ask for (tier, bindings, budget), or `bad-flag` diagnostics.
// ParseCommandLine calls it to refuse bad flags early; the commands call it again for the value.
Result<pipeline::CompileOptions> CompileOptionsFrom(const CompileFlags& f);

// Reads the file and compiles it up to `up_to`. On failure prints the diagnostics (stderr; also a
// JSON object on stdout with --json) and returns the exit code in `exit_code`.
std::optional<pipeline::Compiled> CompileFile(const CompileFlags& f, pipeline::Rung up_to,
                                              const execplan::DeviceLimits& limits, int& exit_code);

// `scellis plan`'s backend and the trainer's choices it plans a training step with.
struct PlanFlags {
  std::string backend = "cpu";  // the CPU reference unless asked
  bool allow_software_adapter = false;
  std::optional<uint32_t> adapter;
  int steps_per_run = 8;      // as `scellis train --steps-per-run`
  bool host_batches = false;  // as `scellis train --host-batches`
  int ranks = 0;              // as `scellis train --ranks`: the data-parallel step's WorkPlan
  int chunks = 0;             // as `scellis train --chunks`
};

// The plan `plan`, `validate` and `run` judge, on the backend `p` names: a training workflow's as
// `scellis train` runs its step in one process (train::PlanStep: its dataset held whole or
// streamed, its runs in flight, on a GPU its batches gathered on the device); any other
// document's as compiled. nullopt when it could not be made (`code` says how it ended).
std::optional<pipeline::Compiled> CompilePlan(const CompileFlags& f, const PlanFlags& p,
                                              bool say_unmeasured, int& code);

// Prints diagnostics and returns the exit code they call for.
int Report(const std::vector<Diagnostic>& diags, const std::string& file, bool json);
void PrintNotes(const std::vector<Diagnostic>& notes, const std::string& file);

struct TrainFlags {
  int epochs = 0;
  int steps_per_run = 8;
  std::string backend = "auto";
  bool allow_software = false;
  int threads = 0;
  std::optional<uint32_t> adapter;  // --adapter: the WebGPU adapter's index
  std::string checkpoint, resume;
  int64_t max_steps = 0;   // caps each epoch's steps (quick checks)
  std::string init_out;    // the initial state, as safetensors (for peers to start from)
  std::string losses_out;  // every step's loss, as JSON
  int ranks = 1;           // data parallel over an MPI job's ranks
  int chunks = 0;          // the batch's gradient summed over chunks (0: one per rank)
  int collective_timeout_seconds = 300;
  bool record_shards = false;  // the last step's shards, into the store
  bool no_record = false;      // --no-record: leave no run record
  bool host_batches = false;   // --host-batches: feed batches from the host on a GPU too
};
int TrainCommand(const CompileFlags& f, const TrainFlags& t);

struct VerifyFlags {
  std::string run_id;
  int shard = 0;
  bool json = false;
};
int VerifyCommand(const VerifyFlags& v);

struct RunFlags {
  std::string backend = "auto";
  int threads = 0;
  std::string out_file;
  bool allow_software_adapter = false;
  std::optional<uint32_t> adapter;  // --adapter: the WebGPU adapter's index
  bool gpu_timestamps = false;      // --gpu-timestamps: every dispatch timed on the GPU
  int steps = 1;
  std::vector<std::string> history;  // outputs whose every step is printed
  std::string executor;              // --executor: "" | "fused" | "generic"
  bool no_record = false;            // --no-record: leave no run record
  int ranks = 0;                     // --ranks: the matmul's blocks over an MPI job; 0: not given
  int collective_timeout_seconds = 300;
};

// The run records (cmd_records.cpp).
struct RunsFlags {
  int limit = 20;  // 0: all
  bool json = false;
};
int RunsCommand(const RunsFlags& flags);

struct ReplayFlags {
  std::string run_id;
  int threads = 0;
  bool json = false;
};
int ReplayCommand(const ReplayFlags& flags);

struct StoreFlags {
  std::string action;  // verify | gc
  bool dry_run = false;
  bool json = false;
};
int StoreCommand(const StoreFlags& flags);

// Records a finished run in the default store unless recording is off; the run id, or "" (with a
// warning on stderr saying why the record was not written: the run itself happened).
std::string RecordOrWarn(bool no_record,
                         const std::function<Result<std::string>(const store::Store&)>& write);
int RunCommand(const CompileFlags& f, const RunFlags& r);

struct LowerFlags {
  std::string to;        // --to=RUNG
  std::string dump_dir;  // --dump-rungs=DIR
  int ranks = 0;         // --ranks (--to=workplan); 0: not given
  int chunks = 0;        // --chunks (--to=workplan); 0: one per rank
};
// The rung `lower` prints (or the last it dumps), or a `bad-flag`/`bad-pass` diagnostic when the
// flags ask for none or more than one mode.
Result<pipeline::Rung> LowerRung(const CompileFlags& f, const LowerFlags& l);
int LowerCommand(const CompileFlags& f, const LowerFlags& l);
int PlanCommand(const CompileFlags& f, const PlanFlags& p);
int ValidateCommand(const CompileFlags& f);
int ProbeCommand(bool json);
int ConformCommand(const ConformFlags& f);

struct OpsFlags {
  bool markdown = false;
  bool json = false;
};
int OpsCommand(const OpsFlags& flags);

struct StudioFlags {
  int port = 8737;  // 0: any free port
  std::string host = "127.0.0.1";
  bool open = false;  // try xdg-open on the URL
  std::string store;  // "" : the default store
  std::string backend = "auto";
  bool allow_software_adapter = false;
  std::string web_dir;  // "" : the directory the build recorded
  std::optional<int64_t> max_request_bytes;
};
int StudioCommand(const StudioFlags& flags);

}  // namespace scellis::cli
