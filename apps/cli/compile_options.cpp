#include "command_options.h"
#include "pipeline/compile.h"

namespace scellis::cli {

// A training workflow's dataset read from its files batch by batch even where it fits whole.
void AddStreamDatasetFlag(CLI::App* cmd, CompileFlags& f) {
  cmd->add_flag("--stream-dataset", f.stream_dataset,
                "read a training dataset from its files batch by batch instead of holding it "
                "whole (the same batches, the same result)");
}

namespace {

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
  std::string optional;
  for (const pipeline::Pass& p : pipeline::Passes())
    if (p.optional) optional += (optional.empty() ? "" : ", ") + std::string(p.name);
  cmd->add_option("--disable-pass", f.disabled_passes,
                  "leave out an optional pass (" + optional + "); repeatable");
}

void AddRunCommand(CommandOptions& options) {
  Invocation& inv = options.inv();
  CLI::App* run =
      options.CompilingSubcommand(Command::kRun, "run", "compile, plan and execute a document");
  TypedFlags& run_typed = options.Typed(run);
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
  run->add_flag("--gpu-timestamps", inv.run.gpu_timestamps,
                "--backend=webgpu: time every dispatch on the GPU (the adapter's timestamp-query "
                "feature); the stats' gpu_timestamps give the kernels' busy time, the idle "
                "gaps between them, the sums by kernel and the first 4096 dispatches' times. "
                "Each timed dispatch runs in a compute pass of its own");
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
}

void AddLowerCommand(CommandOptions& options) {
  Invocation& inv = options.inv();
  CLI::App* lower = options.CompilingSubcommand(Command::kLower, "lower",
                                                "print one rung of the ladder, or dump them all");
  TypedFlags& lower_typed = options.Typed(lower);
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
}

}  // namespace

CLI::App* CommandOptions::CompilingSubcommand(Command command, const std::string& name,
                                              const std::string& description) {
  CLI::App* cmd = Subcommand(command, name, description);
  AddCompileFlags(cmd, Typed(cmd), inv_.compile);
  return cmd;
}

void AddCompileCommands(CommandOptions& options) {
  Invocation& inv = options.inv();
  AddRunCommand(options);
  AddLowerCommand(options);

  CLI::App* plan = options.CompilingSubcommand(
      Command::kPlan, "plan",
      "print the execution plan: tier, tolerances, memory, verdict (exit 2 when red)");
  AddPassFlags(plan, inv.compile);
  AddStreamDatasetFlag(plan, inv.compile);
  TypedFlags& plan_typed = options.Typed(plan);
  plan->add_option("--backend", inv.plan.backend,
                   "cpu (the default: the CPU reference) | webgpu | auto: the device whose "
                   "memory the plan is judged against; a training step is planned as `scellis "
                   "train` runs it there")
      ->check(CLI::IsMember({"auto", "webgpu", "cpu"}));
  plan->add_flag("--allow-software-adapter", inv.plan.allow_software_adapter,
                 "accept a software WebGPU adapter (SwiftShader) for --backend=webgpu");
  plan_typed.Integer("--adapter", &inv.plan.adapter, 0, 1023,
                     "the WebGPU adapter, by its index among those Dawn offers (0 first)");
  plan_typed.Integer("--steps-per-run", &inv.plan.steps_per_run, 1, 64,
                     "a training step: the steps per run `scellis train` would take (default 8)");
  plan->add_flag("--host-batches", inv.plan.host_batches,
                 "a training step on a GPU: planned with each batch gathered on the host, as "
                 "`scellis train --host-batches`");
  plan_typed.Integer("--ranks", &inv.plan.ranks, 1, 4096,
                     "a training step: its data-parallel WorkPlan over this many ranks, as "
                     "`scellis train --ranks` plans it (each rank's dataset, memory and verdict)");
  plan_typed.Integer("--chunks", &inv.plan.chunks, 1, 1 << 20,
                     "with --ranks: the batch's gradient summed over this many chunks, as "
                     "`scellis train --chunks`");

  CLI::App* validate = options.CompilingSubcommand(Command::kValidate, "validate",
                                                   "check a document without running it");
  AddStreamDatasetFlag(validate, inv.compile);
}

}  // namespace scellis::cli
