#include "cmd_ops.h"

#include <iostream>

#include "ops/op_table.h"

namespace scellis::cli {

CLI::App* AddOpsCommand(CLI::App& app, OpsFlags& flags) {
  CLI::App* cmd = app.add_subcommand("ops", "list the ops this build has");
  cmd->add_flag("--markdown", flags.markdown, "print the reference of docs/ops.md");
  return cmd;
}

int OpsCommand(const OpsFlags& flags) {
  const ops::OpTable& table = *ops::BuiltinOps();
  if (flags.markdown) {
    std::cout << ops::ToMarkdown(table);
    return 0;
  }
  for (const ops::OpSpec& s : table.ops()) {
    std::string ports;
    for (const ops::Port& p : s.ports) ports += (ports.empty() ? "" : ", ") + p.name;
    std::cout << s.name << "(" << ports << ")  v" << s.min_version << "  "
              << ops::OpKindName(s.kind) << "  " << policy::ToleranceName(s.tolerance) << "  "
              << s.summary << "\n";
  }
  return 0;
}

}  // namespace scellis::cli
