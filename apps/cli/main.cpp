// The `scellis` command.
#include <iostream>

#include "cmd_ops.h"
#include "common.h"

int main(int argc, char** argv) {
  using namespace scellis::cli;
  CLI::App app{
      "Scellis: compute workflows lowered rung by rung to WGSL, run on WebGPU or the CPU "
      "reference"};
  app.require_subcommand(1);

  CompileFlags run_flags;
  std::string backend = "auto", out_file;
  int threads = 0;
  int run_steps = 1;
  bool allow_software = false;
  CLI::App* run = app.add_subcommand("run", "compile, plan and execute a document");
  AddCompileFlags(run, run_flags);
  run->add_option("--backend", backend, "auto | webgpu | cpu")
      ->check(CLI::IsMember({"auto", "webgpu", "cpu"}));
  run->add_option("--threads", threads, "CPU reference threads (results do not depend on it)");
  run->add_option("--steps", run_steps,
                  "run N steps in a prepared session (inputs with \"carry\" take the named output "
                  "between steps; up to 64 steps per submission); prints the last step's outputs");
  run->add_option("--out", out_file, "also write the JSON result to FILE (atomically)");
  run->add_flag("--allow-software-adapter", allow_software,
                "accept a software WebGPU adapter (SwiftShader) for --backend=webgpu");

  CompileFlags lower_flags;
  std::string to, dump_dir;
  CLI::App* lower = app.add_subcommand("lower", "print one rung of the ladder, or dump them all");
  AddCompileFlags(lower, lower_flags);
  lower->add_option("--to", to, "doc | block | webir | kernel | execplan");
  lower->add_option("--dump-rungs", dump_dir, "write every rung into DIR");

  CompileFlags plan_flags;
  CLI::App* plan =
      app.add_subcommand("plan", "print the execution plan: tier, tolerances, memory, verdict");
  AddCompileFlags(plan, plan_flags);

  CompileFlags validate_flags;
  CLI::App* validate = app.add_subcommand("validate", "check a document without running it");
  AddCompileFlags(validate, validate_flags);

  CompileFlags train_flags;
  TrainFlags train_opts;
  CLI::App* train = nullptr;
  AddTrainCommand(app, train_flags, train_opts, train);

  bool probe_json = false;
  CLI::App* probe = app.add_subcommand(
      "probe", "show the WebGPU adapter, its limits, and what auto would choose");
  probe->add_flag("--json", probe_json, "machine-readable output");

  ConformFlags conform_flags;
  CLI::App* conform = app.add_subcommand(
      "conform", "check every GPU kernel against the CPU reference; passing mints receipts");
  AddConformFlags(conform, conform_flags);

  OpsFlags ops_flags;
  CLI::App* ops = AddOpsCommand(app, ops_flags);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (*run) return RunCommand(run_flags, backend, threads, out_file, allow_software, run_steps);
  if (*lower) return LowerCommand(lower_flags, to, dump_dir);
  if (*plan) return PlanCommand(plan_flags);
  if (*validate) return ValidateCommand(validate_flags);
  if (*probe) return ProbeCommand(probe_json);
  if (*train) return TrainCommand(train_flags, train_opts);
  if (*conform) return ConformCommand(conform_flags);
  if (*ops) return OpsCommand(ops_flags);
  return 2;
}
