#include "argument_checks.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "base/atomic_file.h"
#include "doc/keys.h"

namespace scellis::cli {

// The long names of a subcommand's options, for "did you mean".
std::vector<std::string> OptionNames(const CLI::App* cmd) {
  std::vector<std::string> names = {"--help"};
  for (const CLI::Option* o : cmd->get_options())
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  return names;
}

// The document's key matcher, so a typo is judged alike in a document and on the command line.
std::string ClosestMatch(const std::string& word, const std::vector<std::string>& candidates) {
  return doc::ClosestKey(word, candidates).value_or("");
}

// Arguments nothing claimed: unknown flags and commands (with the closest known name), and
// positional arguments beyond those a command takes.
std::vector<Diagnostic> CheckLeftovers(const CLI::App& app, const CLI::App* sub) {
  std::vector<Diagnostic> errors, stray;
  for (const std::string& arg : app.remaining(true)) {
    if (arg.size() > 1 && arg[0] == '-') {
      std::string name = arg.substr(0, arg.find('='));
      std::string near = ClosestMatch(name, OptionNames(sub ? sub : &app));
      errors.push_back(UserError(
          "bad-flag", "",
          "unknown flag \"" + name + "\"" + (sub ? " for " + sub->get_name() : std::string()),
          near.empty() ? "see --help for the flags it takes" : "did you mean " + near + "?"));
    } else if (sub == nullptr) {
      std::vector<std::string> commands;
      for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; }))
        commands.push_back(c->get_name());
      std::string near = ClosestMatch(arg, commands);
      errors.push_back(UserError(
          "bad-flag", "", "unknown command \"" + arg + "\"",
          near.empty() ? "see scellis --help for the commands" : "did you mean " + near + "?"));
      break;  // the rest were meant for a command that does not exist
    } else {
      stray.push_back(UserError("bad-flag", "",
                                "unexpected argument \"" + arg + "\" for " + sub->get_name(),
                                "it takes one FILE; flags start with --"));
    }
  }
  // After an unknown flag, a stray word is most likely that flag's value: not worth a second error.
  if (errors.empty()) return stray;
  return errors;
}

// An option given with an empty value (`--out ""`, `--resume=`) names nothing.
std::vector<Diagnostic> CheckNonEmpty(const CLI::App* sub) {
  std::vector<Diagnostic> errors;
  for (const CLI::Option* o : sub->get_options()) {
    if (o->get_expected_min() == 0 || o->count() == 0) continue;  // a switch, or not given
    for (const std::string& v : o->results()) {
      if (!v.empty()) continue;
      errors.push_back(UserError("bad-flag", "", o->get_name() + " needs a non-empty value"));
      break;
    }
  }
  return errors;
}

// Outputs are regular files (or do not exist yet), and none of them is an input of the same run
// or another output: compared by device and inode, so `./doc.json`, a hard link or a symlink to
// the document are caught as well as its own name.
std::vector<Diagnostic> CheckOutputs(const std::vector<NamedPath>& inputs,
                                     const std::vector<NamedPath>& outputs) {
  std::vector<Diagnostic> errors;
  namespace fs = std::filesystem;
  auto same = [](const std::string& a, const std::string& b) {
    if (SameFile(a, b)) return true;
    std::error_code ea, eb;  // outputs that do not exist yet: compare where they would be
    fs::path pa = fs::weakly_canonical(a, ea), pb = fs::weakly_canonical(b, eb);
    return !ea && !eb && pa == pb;
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& out = outputs[i];
    if (out.path.empty()) continue;
    if (Status s = CheckOutputPath(out.path); !s.ok()) {
      for (Diagnostic d : s.errors()) {
        d.message = out.flag + ": " + d.message;
        errors.push_back(std::move(d));
      }
      continue;
    }
    for (const NamedPath& in : inputs) {
      if (in.path.empty() || !same(out.path, in.path)) continue;
      errors.push_back(UserError("bad-output-path", "",
                                 out.flag + " '" + out.path + "' is the same file as " + in.flag +
                                     " '" + in.path + "'; writing it would destroy the input",
                                 "write the output to another file"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (outputs[j].path.empty() || !same(out.path, outputs[j].path)) continue;
      errors.push_back(UserError("bad-output-path", "",
                                 out.flag + " and " + outputs[j].flag + " both name '" + out.path +
                                     "'; one would overwrite the other",
                                 "give each output its own file"));
    }
  }
  return errors;
}

// More CPU threads than the machine has only adds contention (and a huge count cannot be
// created): the count is capped and the run says so.
void CapThreads(int& threads, unsigned hardware_threads, std::vector<Diagnostic>& notes) {
  if (hardware_threads == 0) hardware_threads = std::max(1u, std::thread::hardware_concurrency());
  if (threads <= static_cast<int64_t>(hardware_threads)) return;
  notes.push_back(Note("threads-capped",
                       "--threads " + std::to_string(threads) + " is more than this machine's " +
                           std::to_string(hardware_threads) + " hardware threads; using " +
                           std::to_string(hardware_threads)));
  threads = static_cast<int>(hardware_threads);
}

}  // namespace scellis::cli
