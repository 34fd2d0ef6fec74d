// The `scellis` command: the whole command line is checked first; only then does a command run.
#include <string>
#include <vector>

#include "base/host_heap.h"
#include "command_line.h"

int main(int argc, char** argv) {
  using namespace scellis::cli;
  scellis::KeepStepSizedBlocksOnHeap();
  std::vector<std::string> args(argv + 1, argv + argc);
  scellis::Result<Invocation> invocation = ParseCommandLine(args);
  if (!invocation.ok()) return Report(invocation.errors(), "", AsksForJson(args));
  return Execute(invocation.value());
}
