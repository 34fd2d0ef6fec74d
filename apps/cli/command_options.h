// The subcommands of `scellis` and their flags, added to the parser family by family (the files
// *_options.cpp, beside the cmd_*.cpp files that run them). ParseCommandLine (command_line.cpp)
// adds them in the order the help lists them, then checks and converts what was given.
#pragma once

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "command_line.h"
#include "typed_flags.h"

namespace scellis::cli {

inline constexpr int64_t kIntMax = INT_MAX;

// The parser being built: the subcommands added so far, the command each stands for and the typed
// flags of each, all writing into one Invocation.
class CommandOptions {
 public:
  CommandOptions(CLI::App& app, Invocation& inv) : app_(app), inv_(inv) {}

  Invocation& inv() { return inv_; }
  // A subcommand standing for `command`.
  CLI::App* Subcommand(Command command, const std::string& name, const std::string& description);
  // A subcommand that compiles a document, with the flags every such command takes (the document,
  // tier, bindings, budget, --json; compile_options.cpp).
  CLI::App* CompilingSubcommand(Command command, const std::string& name,
                                const std::string& description);
  // The typed flags of `cmd` (made on first use; converted once the command line is parsed).
  TypedFlags& Typed(CLI::App* cmd);

  // The command `sub` stands for.
  Command CommandOf(const CLI::App* sub) const { return command_of_.at(sub); }
  // The typed flags of `sub`, or null when it has none.
  const TypedFlags* TypedOf(const CLI::App* sub) const;

 private:
  CLI::App& app_;
  Invocation& inv_;
  std::deque<TypedFlags> typed_;                     // stable addresses
  std::map<const CLI::App*, TypedFlags*> typed_of_;  // a subcommand's typed flags
  std::map<const CLI::App*, Command> command_of_;
};

// --stream-dataset, of the commands that read a training workflow's dataset.
void AddStreamDatasetFlag(CLI::App* cmd, CompileFlags& f);

// run, lower, plan, validate (compile_options.cpp).
void AddCompileCommands(CommandOptions& options);
// train, verify (train_options.cpp).
void AddTrainCommands(CommandOptions& options);
// probe, conform, ops, studio (service_options.cpp).
void AddServiceCommands(CommandOptions& options);
// runs, replay, store (records_options.cpp).
void AddRecordCommands(CommandOptions& options);

}  // namespace scellis::cli
