// One op node typed on its own: what lowering checks and infers for each op node of a document
// (the op's table entry and version, its attributes, its ports and their dtypes, the scalar form
// and operand attributes as rank-0 constants, the op's type rule), factored out of the lowering so
// that a front end adding one node at a time asks the same code a whole document meets.
#pragma once

#include <string>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"
#include "base/tensor_type.h"
#include "doc/document.h"
#include "ops/op_table.h"

namespace scellis::webir {

// A value the node reads: an entry of one of its ports (a list port's entries in list order).
struct NodeInput {
  std::string port;
  TensorType type;
};

// An op node as written, with the types of what it reads.
struct OpNode {
  std::string op;
  Json params = Json::object();  // its attributes as written ("scalar" too; "name" is skipped)
  std::vector<NodeInput> inputs;
  // List ports written with no entry, which a document's parser refuses before a node is typed.
  std::vector<std::string> empty_lists;
  std::string pointer;  // the node's JSON pointer
  std::string where;    // its description in diagnostics (`matmul "proj"`)
  // A graph node writes ports and attributes as its own fields; a workflow block wires its ports
  // and keeps its attributes under "params": diagnostics point accordingly.
  doc::Form form = doc::Form::kGraph;
};

// An argument of the typed node: one of its inputs, or a rank-0 constant the node is given (the
// scalar form's operand, an operand attribute) whose value is `value`.
struct TypedArg {
  int input = -1;  // index into OpNode::inputs; -1 for a constant
  TensorType type;
  Json value;           // a constant's value
  std::string pointer;  // where the argument is written
};

struct TypedNode {
  const ops::OpSpec* spec = nullptr;
  std::vector<TypedArg> args;  // in the op's port order, then its operand attributes
  Json attrs;                  // the attributes as the op's rule normalised them
  TensorType type;             // the node's output
};

// Types `node` as a graph labelled `version` holds it: the engine's diagnostics (each at its
// pointer) where the op, an attribute, a port, a dtype or the shapes are refused.
Result<TypedNode> TypeOpNode(const ops::OpTable& ops, const OpNode& node, int version);

// What a front end needs of one node: its output type and the lowest graph-protocol version whose
// rules accept its form (the op's own version, broadcasting, batched matmul, axis reductions...).
struct NodeTypes {
  TensorType type;
  int min_version = 1;
};

// `node` typed at the newest version this build reads (its diagnostics when refused there), and
// the lowest version at which TypeOpNode accepts it.
Result<NodeTypes> InferNode(const ops::OpTable& ops, const OpNode& node);

}  // namespace scellis::webir
