// The rules WebIR applies to each op, keyed by op name: how it types its output (the infer rule)
// and how it differentiates (the gradient rule). What an op is — its ports, attributes, kind and
// tolerance — is its entry in ops::OpTable; these rules live here because they build WebIR.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/determinism.h"
#include "base/host_tensor.h"
#include "base/json_util.h"
#include "base/result.h"
#include "base/tensor_type.h"
#include "ops/op_table.h"

namespace scellis::webir {

struct Graph;
struct Node;

using ops::OpKind;

// The most entries a list op (concat, stack) takes in one node: the WebGPU minimum of storage
// buffers per shader stage (8) less the output. A longer list is lowered as a tree of such nodes.
inline constexpr size_t kMaxListArgs = 7;

struct InferContext {
  std::vector<TensorType> args;
  Json attrs;  // may be normalized by the rule (e.g. negative axes made positive)
  int version = 1;
  std::string pointer;
  std::string where;
  // Where each arg is written (a list entry's own pointer), when known; else `pointer` serves.
  std::vector<std::string> arg_pointers;
  // The op's table entry, for rules that read more of it than its name (a user op's shape rule).
  const ops::OpSpec* spec = nullptr;

  Diagnostic Error(std::string code, std::string message, std::string help = "") const;
  // A diagnostic about arg `i`, at its own pointer.
  Diagnostic ArgError(size_t i, std::string code, std::string message, std::string help = "") const;
};

using InferFn = Result<TensorType> (*)(InferContext&);

// Reverse-mode rule: given the node and the id of the gradient of its output, appends nodes to
// `g` and returns the gradient id for each arg (-1 where the arg gets none, e.g. integer labels),
// each of that arg's shape (broadcast args are summed back). `node` is a copy, safe to read while
// the rule appends; rules build with the helpers of webir/autodiff/autodiff.h and are run by
// Backward there.
using GradFn = std::vector<int> (*)(Graph& g, const Node& node, int grad_out);

// Why this node has no gradient although its op has a rule (an attribute choosing a form that is
// not differentiable), or nullptr when it has one.
using NoGradientFn = const char* (*)(const Node& node);

struct OpRule {
  InferFn infer = nullptr;
  GradFn grad = nullptr;  // nullptr: not differentiable
  NoGradientFn no_gradient = nullptr;  // nullptr: every node with a grad rule is differentiable
};

using RuleSet = std::map<std::string, OpRule, std::less<>>;

// The rule of `op`, or nullptr when WebIR has none (an op that only a session's own table knows).
const OpRule* FindRule(std::string_view op);
// The rule of a table entry: a user op's (webir/ops/user.cpp) for kind kUser, else FindRule's.
// Its infer rule reads InferContext::spec, which the caller sets to `spec`.
const OpRule* RuleOf(const ops::OpSpec& spec);

// Families add their rules here (one file per family under ops/).
void AddElementwiseRules(RuleSet& r);
void AddReduceRules(RuleSet& r);
void AddLinalgRules(RuleSet& r);
void AddLayoutRules(RuleSet& r);
void AddStencilRules(RuleSet& r);
void AddNnRules(RuleSet& r);
void AddOptimRules(RuleSet& r);
void AddRandomRules(RuleSet& r);
void AddIndexRules(RuleSet& r);
void AddPositionRules(RuleSet& r);  // arange, butterfly
// The one rule every user op shares: it reads the op's definition from InferContext::spec.
const OpRule& UserOpRule();

// Index operands (webir/ops/index.cpp). Kernels read indices without checking them, so every
// index is range-checked before a kernel reads it: known ones when the graph is made, fed ones
// before each step.
bool IsIndexOp(std::string_view op);
struct IndexUse {
  int op = -1;        // the index_select, gather, index_add or scatter_add node
  int source = -1;    // the input or full node whose values its index holds (maybe rearranged)
  int64_t bound = 0;  // the size of the axis it indexes: each value must be in [0, bound)
};
// Every index operand of `g` with its source; `index-not-checkable` at the op's pointer where the
// values are computed on the device.
Result<std::vector<IndexUse>> IndexUses(const Graph& g);
// The first value of `values` (the source's tensor) outside [0, use.bound) as
// `index-out-of-range` of `kind` at the op's pointer, naming `what` and the position.
Status CheckIndexValues(const Graph& g, const IndexUse& use, const HostTensor& values,
                        ErrorKind kind, const std::string& what);
// Checks the indices known when the graph is made: inline data and full constants.
Status CheckKnownIndices(const Graph& g);

// matmul_fixed's operands (webir/ops/linalg.cpp). Kernels keep the low 64 bits of each sum, so
// every result is proved to fit i32 before a kernel computes it: known operands when the graph is
// made, fed ones before each step.
struct FixedPointUse {
  int op = -1;  // the matmul_fixed node
  int a = -1;   // the input or full nodes its operands are
  int b = -1;
};
// Every matmul_fixed of `g` with its operands' sources; `fixed-point-not-checkable` at the op's
// pointer where an operand is computed on the device (or carried).
Result<std::vector<FixedPointUse>> FixedPointUses(const Graph& g);
// The first result of the product of `a` and `b` (the operands' values) outside i32 as
// `fixed-point-overflow` of `kind` at the op's pointer, naming `what` and the output position.
Status CheckFixedPointValues(const Graph& g, const FixedPointUse& use, const HostTensor& a,
                             const HostTensor& b, ErrorKind kind, const std::string& what);
// Checks the products whose operands are both known when the graph is made.
Status CheckKnownFixedPoint(const Graph& g);

// Runs `rule` (the rule of `op`) and checks the shape it inferred: an output of more than
// kMaxElements elements (the non-zero sizes counted, see CheckedElements) is `tensor-too-large`
// at the node's pointer. Every place that types a node calls this, never rule.infer directly, so
// no rule can hand an unchecked shape to the rungs below.
Result<TensorType> InferChecked(std::string_view op, const OpRule& rule, InferContext& c);

// Whether `v` is an integer that `t` holds when `t` is i32 or u32 (scalars, bounds and fill
// values meeting integer operands are stored exactly, never rounded or saturated); true for the
// other dtypes. IntegerRangeText gives the range for a diagnostic: "[-2147483648, 2147483647]".
bool FitsIntegerDType(double v, DType t);
std::string IntegerRangeText(DType t);

// Shared shape rules.
Result<TensorType> InferSameAsFirst(InferContext& c);
Result<TensorType> InferBroadcast(InferContext& c);
// Reads an optional integer attribute `name` as an axis of `rank`, normalizing negatives.
Result<int> AxisAttr(InferContext& c, const char* name, int rank);

}  // namespace scellis::webir
