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
  RunFlags run_opts;
  CLI::App* run = nullptr;
  AddRunCommand(app, run_flags, run_opts, run);
  AddPassFlags(run, run_flags);

  CompileFlags lower_flags;
  std::string to, dump_dir;
  CLI::App* lower = app.add_subcommand("lower", "print one rung of the ladder, or dump them all");
  AddCompileFlags(lower, lower_flags);
  AddPassFlags(lower, lower_flags);
  lower->add_option("--to", to, "doc | block | webir | kernel | execplan");
  lower->add_option("--print-after", lower_flags.print_after,
                    "print the rung as it stands after the named pass, and stop");
  lower->add_option("--dump-rungs", dump_dir, "write every rung into DIR");

  CompileFlags plan_flags;
  CLI::App* plan =
      app.add_subcommand("plan",
                         "print the execution plan: tier, tolerances, memory, verdict (exit 2 when "
                         "red)");
  AddCompileFlags(plan, plan_flags);
  AddPassFlags(plan, plan_flags);

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
  if (*run) return RunCommand(run_flags, run_opts);
  if (*lower) return LowerCommand(lower_flags, to, dump_dir);
  if (*plan) return PlanCommand(plan_flags);
  if (*validate) return ValidateCommand(validate_flags);
  if (*probe) return ProbeCommand(probe_json);
  if (*train) return TrainCommand(train_flags, train_opts);
  if (*conform) return ConformCommand(conform_flags);
  if (*ops) return OpsCommand(ops_flags);
  return 2;
}
