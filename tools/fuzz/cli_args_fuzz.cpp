// Fuzz target: the `scellis` command line. The bytes, split on newlines, are an argument list;
// ParseCommandLine must turn it into an Invocation or into diagnostics (never crash, abort, hang
// or throw). Nothing is executed: every check of the flags happens in the parser, before any
// command would run, so the parser is the whole attack surface of argv. (The parser only stats the
// paths it is given; it opens, reads and writes none.)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "command_line.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(current);
      current.clear();
    } else if (c != '\0') {  // a real argv entry cannot hold a NUL
      current += c;
    }
  }
  if (!current.empty()) args.push_back(current);
  // A fixed count so the cap on --threads does not depend on the fuzzing machine.
  scellis::Result<scellis::cli::Invocation> r = scellis::cli::ParseCommandLine(args, 8);
  if (r.ok()) {
    const scellis::cli::Invocation& inv = r.value();
    if (inv.run.threads > 8 || inv.train.threads > 8) std::abort();  // the cap held
    if (inv.run.steps < 1) std::abort();
  } else {
    if (r.errors().empty()) std::abort();
    for (const scellis::Diagnostic& d : r.errors())
      if (d.code.empty() || d.message.empty() || scellis::ExitCodeFor(d) != 2) std::abort();
  }
  return 0;
}
