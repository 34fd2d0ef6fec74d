// `scellis ops`: the op table, as a list, as the Markdown of docs/ops.md or as JSON.
#include <iostream>

#include "common.h"
#include "ops/op_table.h"

namespace scellis::cli {

int OpsCommand(const OpsFlags& flags) {
  const ops::OpTable& table = *ops::BuiltinOps();
  if (flags.markdown) {
    std::cout << ops::ToMarkdown(table);
    return 0;
  }
  if (flags.json) {
    std::cout << ops::ToJson(table).dump(2) << "\n";
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
