// The `scellis` command: the whole command line is checked first; only then does a command run.
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "command_line.h"

int main(int argc, char** argv) {
  using namespace scellis::cli;
#if defined(__GLIBC__)
  // A training step allocates and frees host vectors of about 1 MiB (gradient sets, partials,
  // feeds). Over glibc's starting mmap threshold (128 KiB) each is mapped and unmapped afresh
  // unless some earlier large free happened to raise it: a streamed data-parallel epoch ran 2.5x
  // slower than a held one for that alone (bench/RESULTS.md, 2026-12-03). Fixed thresholds keep
  // such blocks on the heap; blocks past 32 MiB are still mapped, and a heap with over 64 MiB
  // free at its top is still trimmed.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
  std::vector<std::string> args(argv + 1, argv + argc);
  scellis::Result<Invocation> invocation = ParseCommandLine(args);
  if (!invocation.ok()) return Report(invocation.errors(), "", AsksForJson(args));
  return Execute(invocation.value());
}
