// `scellis ops`: the op table, as a list or as the Markdown of docs/ops.md.
#pragma once

#include <CLI/CLI.hpp>

namespace scellis::cli {

struct OpsFlags {
  bool markdown = false;
};

CLI::App* AddOpsCommand(CLI::App& app, OpsFlags& flags);
int OpsCommand(const OpsFlags& flags);

}  // namespace scellis::cli
