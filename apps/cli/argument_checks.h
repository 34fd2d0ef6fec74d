// The checks a parsed command line is held to before any command runs (command_line.cpp): stray
// arguments with the closest known name, empty values, output paths that would overwrite an input
// or each other, and a --threads count capped at the machine's.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "base/result.h"

namespace scellis::cli {

// The long names of a subcommand's options, for "did you mean".
std::vector<std::string> OptionNames(const CLI::App* cmd);
// The likely meant name, for "did you mean": the document's key matcher, so a typo is judged
// alike in a document and on the command line.
std::string ClosestMatch(const std::string& word, const std::vector<std::string>& candidates);
// Arguments nothing claimed: unknown flags and commands (with the closest known name), and
// positional arguments beyond those a command takes.
std::vector<Diagnostic> CheckLeftovers(const CLI::App& app, const CLI::App* sub);
// An option given with an empty value (`--out ""`, `--resume=`) names nothing.
std::vector<Diagnostic> CheckNonEmpty(const CLI::App* sub);

struct NamedPath {
  std::string flag;
  std::string path;
};
// Outputs are regular files (or do not exist yet), and none of them is an input of the same run
// or another output.
std::vector<Diagnostic> CheckOutputs(const std::vector<NamedPath>& inputs,
                                     const std::vector<NamedPath>& outputs);
// More CPU threads than the machine has (0: this machine's count) are capped, with a note.
void CapThreads(int& threads, unsigned hardware_threads, std::vector<Diagnostic>& notes);

}  // namespace scellis::cli
