#include "command_options.h"

namespace scellis::cli {

void AddRecordCommands(CommandOptions& options) {
  Invocation& inv = options.inv();
  CLI::App* runs =
      options.Subcommand(Command::kRuns, "runs", "list the run records in the store, newest first");
  TypedFlags& runs_typed = options.Typed(runs);
  runs_typed.Integer("--limit", &inv.runs.limit, 0, kIntMax,
                     "list at most N records (default 20; 0: all)");
  runs->add_flag("--json", inv.runs.json, "machine-readable output");

  CLI::App* replay = options.Subcommand(
      Command::kReplay, "replay",
      "run a recorded run again and compare its outputs with the record (exit 0 agree, 1 "
      "disagree, 2 refused)");
  TypedFlags& replay_typed = options.Typed(replay);
  replay->add_option("run", inv.replay.run_id, "the record's id (sha256:...)")->required();
  replay_typed.Integer("--threads", &inv.replay.threads, 0, kIntMax,
                       "CPU reference threads, 0 for one per hardware thread");
  replay->add_flag("--json", inv.replay.json, "machine-readable output");

  CLI::App* store_cmd = options.Subcommand(
      Command::kStore, "store",
      "maintain the store: verify (re-hash everything) or gc (remove what is unreferenced)");
  store_cmd->add_option("action", inv.store.action, "verify | gc")
      ->required()
      ->check(CLI::IsMember({"verify", "gc"}));
  store_cmd->add_flag("--dry-run", inv.store.dry_run,
                      "gc: say what would be removed, remove nothing");
  store_cmd->add_flag("--json", inv.store.json, "machine-readable output");
}

}  // namespace scellis::cli
