// The op registry: every op is one entry — name, the lowest protocol version that has it, its
// inputs and attributes, its shape and dtype rule, its gradient rule, determinism notes and default
// tolerance class. Its CPU reference and WGSL live one rung down, by family
// (kernel/ref/<family>.cpp, kernel/emit/wgsl/<family>.cpp); a test walks this registry and fails when
// an op lacks either.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"
#include "base/tensor_type.h"
#include "base/determinism.h"

namespace scellis::webir {

struct Graph;
struct Node;

enum class OpKind {
  kSource,       // input, param, full
  kElementwise,  // one output element from the same index of each (broadcast) input; fusable
  kReduce,       // sum, mean
  kMatmul,
  kLayout,     // transpose, permute, reshape
  kStencil,    // life
  kNormalize,  // softmax, log_softmax
  kLoss,       // cross_entropy and its gradient
  kOptimizer,  // sgd/momentum/adam updates
};

struct InferContext {
  std::vector<TensorType> args;
  Json attrs;  // may be normalized by the rule (e.g. negative axes made positive)
  int version = 1;
  std::string pointer;
  std::string where;

  Diagnostic Error(std::string code, std::string message, std::string help = "") const;
};

using InferFn = Result<TensorType> (*)(InferContext&);

// Reverse-mode rule: given the node and the id of the gradient of its output, appends nodes to
// `g` and returns the gradient id for each arg (-1 where the arg gets none, e.g. integer labels),
// each of that arg's shape (broadcast args are summed back). `node` is a copy, safe to read while
// the rule appends; rules build with the helpers of webir/autodiff/autodiff.h and are run by
// Backward there.
using GradFn = std::vector<int> (*)(Graph& g, const Node& node, int grad_out);

struct OpDef {
  std::string name;
  int min_version = 1;
  std::vector<std::string> inputs;  // port names, in argument order
  std::vector<std::string> attrs;   // accepted attribute names
  OpKind kind = OpKind::kElementwise;
  InferFn infer = nullptr;
  GradFn grad = nullptr;  // nullptr: not differentiable
  policy::ToleranceClass tolerance = policy::ToleranceClass::kTight;
  std::string determinism;  // reduction order, atomics: what a reader needs to trust the bits
  std::string summary;
};

const std::vector<OpDef>& Registry();
const OpDef* FindOp(std::string_view name);

// Families register themselves here (one file per family under ops/).
void RegisterElementwiseOps(std::vector<OpDef>& r);
void RegisterReduceOps(std::vector<OpDef>& r);
void RegisterLinalgOps(std::vector<OpDef>& r);
void RegisterLayoutOps(std::vector<OpDef>& r);
void RegisterStencilOps(std::vector<OpDef>& r);
void RegisterNnOps(std::vector<OpDef>& r);
void RegisterOptimOps(std::vector<OpDef>& r);

// Shared shape rules.
Result<TensorType> InferSameAsFirst(InferContext& c);
Result<TensorType> InferBroadcast(InferContext& c);
// Reads an optional integer attribute `name` as an axis of `rank`, normalizing negatives.
Result<int> AxisAttr(InferContext& c, const char* name, int rank);

}  // namespace scellis::webir
