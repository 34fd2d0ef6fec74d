// The reference of a user op (ops/user_op.h) as a WebIR graph of built-in ops, planned for the
// types its node is given: how WebIR checks that the reference computes what the op declares, and
// what the CPU reference runs for the op.
#pragma once

#include <vector>

#include "base/result.h"
#include "base/tensor_type.h"
#include "ops/op_table.h"
#include "webir/graph.h"

namespace scellis::webir {

// The reference of `spec` (a kUser entry) lowered through the document, block and WebIR rungs with
// its ports of the types `args` (in port order). Its one output is "out". A diagnostic points into
// the op's definition (doc::AtReference).
Result<Graph> ReferenceGraph(const ops::OpSpec& spec, const std::vector<TensorType>& args);

}  // namespace scellis::webir
