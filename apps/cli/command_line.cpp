#include "command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "argument_checks.h"
#include "command_options.h"
#include "typed_flags.h"

namespace scellis::cli {

CLI::App* CommandOptions::Subcommand(Command command, const std::string& name,
                                     const std::string& description) {
  CLI::App* cmd = app_.add_subcommand(name, description);
  command_of_[cmd] = command;
  return cmd;
}

TypedFlags& CommandOptions::Typed(CLI::App* cmd) {
  if (auto it = typed_of_.find(cmd); it != typed_of_.end()) return *it->second;
  TypedFlags& t = typed_.emplace_back(cmd);
  typed_of_[cmd] = &t;
  return t;
}

const TypedFlags* CommandOptions::TypedOf(const CLI::App* sub) const {
  auto it = typed_of_.find(sub);
  return it == typed_of_.end() ? nullptr : it->second;
}

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
  // The subcommands, in the order the help lists them.
  CommandOptions options(app, inv);
  AddCompileCommands(options);
  AddTrainCommands(options);
  AddServiceCommands(options);
  AddRecordCommands(options);

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
  if (const TypedFlags* typed = options.TypedOf(sub)) {
    std::vector<Diagnostic> conversion = typed->Convert();
    errors.insert(errors.end(), conversion.begin(), conversion.end());
  }
  if (!errors.empty()) return Status(errors);

  const NamedPath document{"the document", inv.compile.file};
  inv.command = options.CommandOf(sub);
  switch (inv.command) {
    case Command::kRun:
      errors = CheckOutputs({document}, {{"--out", inv.run.out_file}});
      CapThreads(inv.run.threads, hardware_threads, inv.notes);
      break;
    case Command::kLower:
      if (auto rung = LowerRung(inv.compile, inv.lower); !rung.ok()) errors = rung.errors();
      break;
    case Command::kTrain:
      errors = CheckOutputs({document, {"--resume", inv.train.resume}},
                            {{"--checkpoint", inv.train.checkpoint},
                             {"--init-out", inv.train.init_out},
                             {"--losses-out", inv.train.losses_out}});
      CapThreads(inv.train.threads, hardware_threads, inv.notes);
      break;
    case Command::kConform:
      errors = CheckConformFlags(inv.conform);
      break;
    case Command::kReplay:
      CapThreads(inv.replay.threads, hardware_threads, inv.notes);
      break;
    default:  // the other commands' flags need no check beyond their conversion
      break;
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
      return PlanCommand(inv.compile, inv.plan);
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
