// The `scellis` command line: parsed and checked as a whole before any command runs.
//
// ParseCommandLine prints nothing, touches no device and reads no document: it only turns argv
// into an Invocation, or into the diagnostics that refuse it (`bad-flag` for a flag's form or
// range, an unknown flag or command with the closest known one; `bad-output-path` for an output
// that is not a regular file or that names one of the run's inputs). The fuzz target
// tools/fuzz/cli_args_fuzz.cpp calls it on arbitrary argument lists.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "common.h"

namespace scellis::cli {

enum class Command {
  kHelp,
  kRun,
  kLower,
  kPlan,
  kValidate,
  kTrain,
  kVerify,
  kProbe,
  kConform,
  kOps,
  kStudio,
  kRuns,
  kReplay,
  kStore
};

struct Invocation {
  Command command = Command::kHelp;
  std::string help;  // kHelp: the text asked for, for stdout
  CompileFlags compile;
  PlanFlags plan;
  RunFlags run;
  TrainFlags train;
  VerifyFlags verify;
  LowerFlags lower;
  ConformFlags conform;
  OpsFlags ops;
  StudioFlags studio;
  RunsFlags runs;
  ReplayFlags replay;
  StoreFlags store;
  bool probe_json = false;
  std::vector<Diagnostic> notes;  // said on stderr when the command starts (a capped --threads)
};

// `args` are the arguments after the program's name. `hardware_threads` is what --threads is
// capped at (0: this machine's).
Result<Invocation> ParseCommandLine(const std::vector<std::string>& args,
                                    unsigned hardware_threads = 0);

// Runs the parsed command; returns the process's exit code.
int Execute(const Invocation& invocation);

// Whether the arguments ask for JSON output (so a refusal of them is JSON too).
bool AsksForJson(const std::vector<std::string>& args);

}  // namespace scellis::cli
