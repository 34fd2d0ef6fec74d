#include "command_options.h"

namespace scellis::cli {

void AddTrainCommands(CommandOptions& options) {
  Invocation& inv = options.inv();
  CLI::App* train = options.CompilingSubcommand(
      Command::kTrain, "train", "train a workflow's \"train\" section on its dataset");
  TypedFlags& train_typed = options.Typed(train);
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
  train->add_flag("--host-batches", inv.train.host_batches,
                  "on a GPU, gather each step's batch on the host and feed it, rather than hold "
                  "the train split on the device and gather there (the same bits)");
  train->add_flag("--no-record", inv.train.no_record,
                  "leave no run record in the store (also: SCELLIS_NO_RECORD=1)");

  CLI::App* verify =
      options.Subcommand(Command::kVerify, "verify",
                         "re-run one shard of a recorded data-parallel step on the CPU reference");
  TypedFlags& verify_typed = options.Typed(verify);
  verify->add_option("run", inv.verify.run_id, "the record's id (sha256:...)")->required();
  verify_typed.Integer("--shard", &inv.verify.shard, 0, 4095, "the shard (rank) to re-run");
  verify->add_flag("--json", inv.verify.json, "machine-readable output");
}

}  // namespace scellis::cli
