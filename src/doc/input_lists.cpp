#include "doc/input_lists.h"

namespace scellis::doc {

Diagnostic EmptyInputList(const std::string& pointer, const std::string& port,
                          const std::string& op) {
  return UserError("empty-input-list", pointer,
                   "the input list \"" + port + "\" of \"" + op + "\" is empty",
                   "list at least one node id");
}

}  // namespace scellis::doc
