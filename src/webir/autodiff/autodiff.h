// Reverse-mode automatic differentiation at WebIR. The backward pass is made of ordinary nodes
// appended to the same graph (purpose kGradient), so it is printed, fused, planned and run like
// any forward node. Each op's gradient rule lives with its shape rule (webir/ops/<family>.cpp,
// found by FindRule); the helpers below are what those rules build with.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "webir/graph.h"

namespace scellis::webir {

// Appends the backward pass of the scalar node `loss` to `g` and returns, for each node of `wrt`,
// the node holding d loss / d wrt (the shape of that node). A node the loss does not depend on
// gets a zeros constant. Gradients reaching a node along several uses are summed in a fixed order
// (the order of the consumers, last consumer first), so the graph, and therefore the bits, do not
// depend on anything but the forward graph.
//
// Diagnostics: `loss-not-scalar` (the loss has more than one element), `not-differentiable` (a
// node between a `wrt` node and the loss has no gradient rule, e.g. `positive` or `life`).
// The backward pass uses version-2 ops (axis sums, reshape), so the graph's version becomes at
// least 2. `seed` is d loss / d loss: 1, or mixed precision's loss scale, which scales every
// gradient alike.
Result<std::vector<int>> Backward(Graph& g, int loss, const std::vector<int>& wrt,
                                  double seed = 1.0);

// Rules append to g.nodes, so a reference into it (g.at(i), its type) dangles after any of these
// calls: rules copy what they need first. The `node` a rule receives is already a copy.
namespace grad {

// Appends `op` over `args`, typed by the op's registry rule, and returns its id. A rule that
// builds an ill-typed node is a bug: Emit then returns -1 and records an internal error that
// Backward reports; Emit over an arg of -1 returns -1 without recording anything new.
int Emit(Graph& g, const std::string& op, std::vector<int> args, Json attrs = Json::object());
// A `full` constant of shape `sizes` (a scalar by default).
int Constant(Graph& g, double value, const std::vector<int64_t>& sizes = {});
// Sums `grad` over the axes along which a value of type `target` was broadcast (sum with keepdim
// per axis, then reshape to drop the leading axes), so the result has the shape of `target`.
int SumToShape(Graph& g, int grad, TensorType target);
// Broadcasts `value` to `target`'s shape (multiplication by a ones constant, which fuses away).
int BroadcastTo(Graph& g, int value, TensorType target);
// Swaps the last two axes (transpose for rank 2, permute above).
int SwapLastTwo(Graph& g, int x);

}  // namespace grad
}  // namespace scellis::webir
