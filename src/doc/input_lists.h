// The input lists of list ports (concat's and stack's `inputs`): what is said of an empty one, by
// the document's parser and by a node typed on its own (webir/type_node.h) alike.
#pragma once

#include <string>

#include "base/diagnostic.h"

namespace scellis::doc {

// `empty-input-list` at `pointer`: the list port `port` of a node of `op` names no entry.
Diagnostic EmptyInputList(const std::string& pointer, const std::string& port,
                          const std::string& op);

}  // namespace scellis::doc
