#include "command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include "argument_checks.h"
#include "typed_flags.h"

namespace scellis::cli {
namespace {

constexpr int64_t kIntMax = INT_MAX;

// A training workflow's dataset read from its files batch by batch even where it fits whole.
void AddStreamDatasetFlag(CLI::App* cmd, CompileFlags& f) {
  cmd->add_flag("--stream-dataset", f.stream_dataset,
                "read a training dataset from its files batch by batch instead of holding it "
                "whole (the same batches, the same result)");
}

void AddCompileFlags(CLI::App* cmd, TypedFlags& typed, CompileFlags& f) {
  cmd->add_option("file", f.file, "workflow document or graph (JSON)")->required();
  cmd->add_option("--tier", f.tier,
                  "determinism tier: debug | prod | fast (composes strictest-wins)")
      ->check(CLI::IsMember({"debug", "prod", "fast"}));
  cmd->add_flag("--tier-override", f.tier_override,
                "let --tier replace the declared tiers (announced when it drops a stricter one)");
  cmd->add_option("--bind", f.bind, "bind a symbolic dimension, e.g. --bind N=64");
  typed.Bytes("--budget", &f.budget_bytes,
              "memory budget in bytes: a whole number, optionally with K, M, G or T (powers of "
              "1024)");
  cmd->add_flag("--json", f.json, "machine-readable output");
}

// --disable-pass=NAME, repeatable: leaves an optional pass of the descent out.
void AddPassFlags(CLI::App* cmd, CompileFlags& f) {
  cmd->add_option("--disable-pass", f.disabled_passes,
                  "leave out an optional pass (fuse-elementwise, fuse-generators, fold-transposes, "
                  "fuse-matmul-epilogue, merge-optimizer-outputs, write-state-in-place, "
                  "merge-optimizer-kernels, fuse-optimizer-into-gradient, hoist-loop-invariants, "
                  "schedule-elementwise, schedule-sum, block-butterfly-stages, block-temporally); "
                  "repeatable");
}

}  // namespace

bool AsksForJson(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--json") != args.end();
}

Result<Invocation> ParseCommandLine(const std::vector<std::string>& args,
                                    unsigned hardware_threads) {
  Invocation inv;
  CLI::App app{
      "Scellis: compute workflows lowered rung by rung to WGSL, run on WebGPU or the CPU "
      "reference",
      "scellis"};
  // Unknown arguments are collected, not thrown at: they are refused below with a suggestion.
  app.allow_extras();
  std::deque<TypedFlags> typed;                     // stable addresses
  std::map<const CLI::App*, TypedFlags*> typed_of;  // a subcommand's typed flags
  auto typed_for = [&](CLI::App* cmd) -> TypedFlags& {
    TypedFlags& t = typed.emplace_back(cmd);
    typed_of[cmd] = &t;
    return t;
  };

  CLI::App* run = app.add_subcommand("run", "compile, plan and execute a document");
  TypedFlags& run_typed = typed_for(run);
  AddCompileFlags(run, run_typed, inv.compile);
  AddPassFlags(run, inv.compile);
  run->add_option("--backend", inv.run.backend, "auto | webgpu | cpu | null (computes nothing)")
      ->check(CLI::IsMember({"auto", "webgpu", "cpu", "null"}));
  run_typed.Integer("--threads", &inv.run.threads, 0, kIntMax,
                    "CPU reference threads, 0 for one per hardware thread (results do not "
                    "depend on it; capped at the machine's)");
  run_typed.Integer(
      "--steps", &inv.run.steps, 1, kIntMax,
      "run N steps in a prepared session (inputs with \"carry\" take the named "
      "output between steps; up to 64 steps per run, read back once); prints the last "
      "step's outputs");
  run->add_option("--history", inv.run.history,
                  "also read back and print every step's value of output NAME (repeatable)");
  run->add_option("--out", inv.run.out_file,
                  "also write the JSON result to FILE (atomically; a regular file, never the "
                  "document)");
  run->add_flag("--allow-software-adapter", inv.run.allow_software_adapter,
                "accept a software WebGPU adapter (SwiftShader) for --backend=webgpu");
  run_typed.Integer("--adapter", &inv.run.adapter, 0, 1023,
                    "the WebGPU adapter, by its index among those Dawn offers (0 first; default: "
                    "Dawn's first, or under MPI the host-local rank modulo the adapter count)");
  run->add_option("--executor", inv.run.executor,
                  "pin the WebGPU executor: fused (every step and iteration in one submission, "
                  "the default) or generic (a submission per iteration, for comparisons)")
      ->check(CLI::IsMember({"fused", "generic"}));
  run->add_flag("--no-record", inv.run.no_record,
                "leave no run record in the store (also: SCELLIS_NO_RECORD=1)");
  run_typed.Integer("--ranks", &inv.run.ranks, 1, 4096,
                    "the document's one matmul cut into blocks of its output over the ranks of "
                    "an MPI job (mpirun -np N), gathered to rank 0; the CPU reference gives the "
                    "bits of one process");
  run_typed.Integer("--collective-timeout", &inv.run.collective_timeout_seconds, 1, 86400,
                    "--ranks: seconds a rank waits at the gather before it stops the job "
                    "(rank-lost; default 300)");

  CLI::App* lower = app.add_subcommand("lower", "print one rung of the ladder, or dump them all");
  TypedFlags& lower_typed = typed_for(lower);
  AddCompileFlags(lower, lower_typed, inv.compile);
  AddPassFlags(lower, inv.compile);
  lower->add_option("--to", inv.lower.to, "doc | block | webir | kernel | execplan | workplan");
  lower_typed.Integer("--ranks", &inv.lower.ranks, 1, 4096,
                      "--to=workplan: the ranks the training step (or a run's one matmul) is "
                      "shared among");
  lower_typed.Integer("--chunks", &inv.lower.chunks, 1, 1 << 20,
                      "--to=workplan: the chunks the batch's gradient is summed over (default: "
                      "one per rank)");
  lower->add_option("--print-after", inv.compile.print_after,
                    "print the rung as it stands after the named pass, and stop");
  lower->add_option("--dump-rungs", inv.lower.dump_dir, "write every rung into DIR");

  CLI::App* plan =
      app.add_subcommand("plan",
                         "print the execution plan: tier, tolerances, memory, verdict (exit 2 when "
                         "red)");
  AddCompileFlags(plan, typed_for(plan), inv.compile);
  AddPassFlags(plan, inv.compile);
  AddStreamDatasetFlag(plan, inv.compile);

  CLI::App* validate = app.add_subcommand("validate", "check a document without running it");
  AddCompileFlags(validate, typed_for(validate), inv.compile);
  AddStreamDatasetFlag(validate, inv.compile);

  CLI::App* train =
      app.add_subcommand("train", "train a workflow's \"train\" section on its dataset");
  TypedFlags& train_typed = typed_for(train);
  AddCompileFlags(train, train_typed, inv.compile);
  AddStreamDatasetFlag(train, inv.compile);
  train_typed.Integer("--epochs", &inv.train.epochs, 1, kIntMax,
                      "epochs (default: the document's)");
  train_typed.Integer("--steps-per-run", &inv.train.steps_per_run, 1, 64,
                      "training steps per run (read back once), 1 to 64");
  train->add_option("--backend", inv.train.backend, "auto | webgpu | cpu")
      ->check(CLI::IsMember({"auto", "webgpu", "cpu"}));
  train->add_flag("--allow-software-adapter", inv.train.allow_software,
                  "accept a software WebGPU adapter");
  train_typed.Integer("--adapter", &inv.train.adapter, 0, 1023,
                      "the WebGPU adapter, by its index among those Dawn offers (0 first; default: "
                      "Dawn's first, or under MPI the host-local rank modulo the adapter count)");
  train_typed.Integer("--threads", &inv.train.threads, 0, kIntMax,
                      "CPU reference threads, 0 for one per hardware thread (capped at the "
                      "machine's)");
  train->add_option("--checkpoint", inv.train.checkpoint,
                    "write params and optimizer state here after each epoch (.safetensors, "
                    "atomic; not the --resume file)");
  train->add_option("--resume", inv.train.resume, "continue from a checkpoint");
  train_typed.Integer("--max-steps", &inv.train.max_steps, 1, INT64_MAX,
                      "cap the steps of each epoch (for quick checks)");
  train->add_option("--init-out", inv.train.init_out,
                    "write the initial params and optimizer state (.safetensors)");
  train->add_option("--losses-out", inv.train.losses_out, "write every step's loss as JSON");
  train_typed.Integer("--ranks", &inv.train.ranks, 1, 4096,
                      "data parallel over the ranks of an MPI job (mpirun -np N); the CPU "
                      "reference gives the bits of one rank with the same --chunks");
  train_typed.Integer("--chunks", &inv.train.chunks, 1, 1 << 20,
                      "sum the batch's gradient over this many chunks, in a fixed tree "
                      "(default: one per rank)");
  train_typed.Integer("--collective-timeout", &inv.train.collective_timeout_seconds, 1, 86400,
                      "seconds a rank waits for the others at an all-gather before it stops the "
                      "job (rank-lost; default 300)");
  train->add_flag("--record-shards", inv.train.record_shards,
                  "record the last step's shards in the store, for scellis verify --shard");
  train->add_flag("--no-record", inv.train.no_record,
                  "leave no run record in the store (also: SCELLIS_NO_RECORD=1)");

  CLI::App* verify = app.add_subcommand(
      "verify", "re-run one shard of a recorded data-parallel step on the CPU reference");
  TypedFlags& verify_typed = typed_for(verify);
  verify->add_option("run", inv.verify.run_id, "the record's id (sha256:...)")->required();
  verify_typed.Integer("--shard", &inv.verify.shard, 0, 4095, "the shard (rank) to re-run");
  verify->add_flag("--json", inv.verify.json, "machine-readable output");

  CLI::App* probe = app.add_subcommand(
      "probe", "show the WebGPU adapter, its limits, and what auto would choose");
  probe->add_flag("--json", inv.probe_json, "machine-readable output");

  CLI::App* conform = app.add_subcommand(
      "conform", "check every GPU kernel against the CPU reference; passing mints receipts");
  TypedFlags& conform_typed = typed_for(conform);
  conform
      ->add_option("--ops", inv.conform.ops,
                   "only these ops (comma-separated; \"fused\" for fused chains)")
      ->delimiter(',');
  conform
      ->add_option("--tier", inv.conform.tier, "determinism tier: debug | prod | fast (required)")
      ->check(CLI::IsMember({"debug", "prod", "fast"}));
  conform->add_option("--backend", inv.conform.backend, "auto (a hardware GPU) | webgpu")
      ->check(CLI::IsMember({"auto", "webgpu"}));
  conform->add_flag("--allow-software-adapter", inv.conform.allow_software_adapter,
                    "accept a software WebGPU adapter (SwiftShader) for --backend=webgpu");
  conform_typed.Unsigned("--seed", &inv.conform.seed,
                         "seed of the generated data (printed on every run)");
  conform->add_flag("--json", inv.conform.json, "machine-readable output");
  conform->add_option("--doc", inv.conform.doc,
                      "a document defining ops of its own (its \"ops\" section): --ops may name "
                      "them; without --ops, all of them are checked");

  CLI::App* ops = app.add_subcommand("ops", "list the ops this build has");
  ops->add_flag("--markdown", inv.ops.markdown, "print the reference of docs/ops.md");

  CLI::App* studio = app.add_subcommand(
      "studio",
      "serve the Studio: the canvas and a JSON API over the engine (loopback by default)");
  TypedFlags& studio_typed = typed_for(studio);
  studio_typed.Integer("--port", &inv.studio.port, 0, 65535,
                       "TCP port (default 8737; 0 picks a free one and prints it)");
  studio->add_option("--host", inv.studio.host,
                     "address to listen on (default 127.0.0.1; anything else exposes the "
                     "engine to the network)");
  studio->add_flag("--open", inv.studio.open, "open the Studio in a browser (xdg-open)");
  studio->add_option("--store", inv.studio.store,
                     "content-addressed store for documents and run records (default: "
                     "$SCELLIS_STORE, else ~/.local/share/scellis/store)");
  studio->add_option("--backend", inv.studio.backend, "auto | webgpu | cpu")
      ->check(CLI::IsMember({"auto", "webgpu", "cpu"}));
  studio->add_flag("--allow-software-adapter", inv.studio.allow_software_adapter,
                   "accept a software WebGPU adapter (SwiftShader) for --backend=webgpu");
  studio->add_option("--web-dir", inv.studio.web_dir,
                     "the built Studio to serve (default: web/dist of this build's source tree)");
  studio_typed.Bytes("--max-request-bytes", &inv.studio.max_request_bytes,
                     "largest request body accepted (default 16M)");

  CLI::App* runs = app.add_subcommand("runs", "list the run records in the store, newest first");
  TypedFlags& runs_typed = typed_for(runs);
  runs_typed.Integer("--limit", &inv.runs.limit, 0, kIntMax,
                     "list at most N records (default 20; 0: all)");
  runs->add_flag("--json", inv.runs.json, "machine-readable output");

  CLI::App* replay = app.add_subcommand(
      "replay",
      "run a recorded run again and compare its outputs with the record (exit 0 agree, 1 "
      "disagree, 2 refused)");
  TypedFlags& replay_typed = typed_for(replay);
  replay->add_option("run", inv.replay.run_id, "the record's id (sha256:...)")->required();
  replay_typed.Integer("--threads", &inv.replay.threads, 0, kIntMax,
                       "CPU reference threads, 0 for one per hardware thread");
  replay->add_flag("--json", inv.replay.json, "machine-readable output");

  CLI::App* store_cmd = app.add_subcommand(
      "store",
      "maintain the store: verify (re-hash everything) or gc (remove what is unreferenced)");
  store_cmd->add_option("action", inv.store.action, "verify | gc")
      ->required()
      ->check(CLI::IsMember({"verify", "gc"}));
  store_cmd->add_flag("--dry-run", inv.store.dry_run,
                      "gc: say what would be removed, remove nothing");
  store_cmd->add_flag("--json", inv.store.json, "machine-readable output");

  // CLI11 takes argv as a reversed list.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    std::ostringstream out, err;
    app.exit(e, out, err);
    inv.help = out.str();
    return inv;
  } catch (const CLI::CallForAllHelp& e) {
    std::ostringstream out, err;
    app.exit(e, out, err);
    inv.help = out.str();
    return inv;
  } catch (const CLI::ParseError& e) {
    return UserError("bad-flag", "", e.what(), "see scellis --help");
  }

  std::vector<CLI::App*> chosen = app.get_subcommands();
  CLI::App* sub = chosen.empty() ? nullptr : chosen.front();
  std::vector<Diagnostic> errors = CheckLeftovers(app, sub);
  if (!errors.empty()) return Status(errors);
  if (sub == nullptr) {
    return UserError(
        "bad-flag", "", "no command given",
        "scellis run|lower|plan|validate|train|verify|probe|conform|ops|studio|runs|replay|"
        "store; see "
        "--help");
  }
  errors = CheckNonEmpty(sub);
  if (auto it = typed_of.find(sub); it != typed_of.end()) {
    std::vector<Diagnostic> conversion = it->second->Convert();
    errors.insert(errors.end(), conversion.begin(), conversion.end());
  }
  if (!errors.empty()) return Status(errors);

  const NamedPath document{"the document", inv.compile.file};
  if (sub == run) {
    inv.command = Command::kRun;
    errors = CheckOutputs({document}, {{"--out", inv.run.out_file}});
    CapThreads(inv.run.threads, hardware_threads, inv.notes);
  } else if (sub == lower) {
    inv.command = Command::kLower;
    if (auto rung = LowerRung(inv.compile, inv.lower); !rung.ok()) errors = rung.errors();
  } else if (sub == plan) {
    inv.command = Command::kPlan;
  } else if (sub == validate) {
    inv.command = Command::kValidate;
  } else if (sub == train) {
    inv.command = Command::kTrain;
    errors = CheckOutputs({document, {"--resume", inv.train.resume}},
                          {{"--checkpoint", inv.train.checkpoint},
                           {"--init-out", inv.train.init_out},
                           {"--losses-out", inv.train.losses_out}});
    CapThreads(inv.train.threads, hardware_threads, inv.notes);
  } else if (sub == verify) {
    inv.command = Command::kVerify;
  } else if (sub == probe) {
    inv.command = Command::kProbe;
  } else if (sub == conform) {
    inv.command = Command::kConform;
    errors = CheckConformFlags(inv.conform);
  } else if (sub == ops) {
    inv.command = Command::kOps;
  } else if (sub == studio) {
    inv.command = Command::kStudio;
  } else if (sub == runs) {
    inv.command = Command::kRuns;
  } else if (sub == replay) {
    inv.command = Command::kReplay;
    CapThreads(inv.replay.threads, hardware_threads, inv.notes);
  } else if (sub == store_cmd) {
    inv.command = Command::kStore;
  }
  if (!inv.compile.file.empty()) {
    auto compile = CompileOptionsFrom(inv.compile);
    if (!compile.ok())
      errors.insert(errors.end(), compile.errors().begin(), compile.errors().end());
  }
  if (!errors.empty()) return Status(errors);
  return inv;
}

int Execute(const Invocation& inv) {
  PrintNotes(inv.notes, "");
  switch (inv.command) {
    case Command::kHelp:
      std::fputs(inv.help.c_str(), stdout);
      return 0;
    case Command::kRun:
      return RunCommand(inv.compile, inv.run);
    case Command::kLower:
      return LowerCommand(inv.compile, inv.lower);
    case Command::kPlan:
      return PlanCommand(inv.compile);
    case Command::kValidate:
      return ValidateCommand(inv.compile);
    case Command::kTrain:
      return TrainCommand(inv.compile, inv.train);
    case Command::kVerify:
      return VerifyCommand(inv.verify);
    case Command::kProbe:
      return ProbeCommand(inv.probe_json);
    case Command::kConform:
      return ConformCommand(inv.conform);
    case Command::kOps:
      return OpsCommand(inv.ops);
    case Command::kStudio:
      return StudioCommand(inv.studio);
    case Command::kRuns:
      return RunsCommand(inv.runs);
    case Command::kReplay:
      return ReplayCommand(inv.replay);
    case Command::kStore:
      return StoreCommand(inv.store);
  }
  return 3;
}

}  // namespace scellis::cli
