// Matrix products. Determinism: each output element accumulates along K in increasing order on
// the CPU reference; GPU kernels tile K in a fixed order (no split-K atomics).
#include "webir/autodiff/autodiff.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

Result<TensorType> InferMatmul(InferContext& c) {
  const TensorType& a = c.args[0];
  const TensorType& b = c.args[1];
  if (a.rank() < 2 || b.rank() < 2) {
    return c.Error("bad-rank", "matmul takes tensors of rank 2 or more, got " +
                                   a.ShapeStringWithSizes() + " and " + b.ShapeStringWithSizes());
  }
  if ((a.rank() > 2 || b.rank() > 2) && c.version < 2) {
    return c.Error("op-newer-than-version",
                   "a batched matmul needs graph protocol version 2, the graph is labelled "
                   "version " +
                       std::to_string(c.version),
                   "label the graph \"version\": 2");
  }
  const Dim& k_a = a.dims[a.rank() - 1];
  const Dim& k_b = b.dims[b.rank() - 2];
  if (k_a.size != k_b.size) {
    return c.Error("shape-mismatch",
                   "matmul of " + a.ShapeStringWithSizes() + " and " + b.ShapeStringWithSizes() +
                       ": the inner sizes " + std::to_string(k_a.size) + " and " +
                       std::to_string(k_b.size) + " differ",
                   "the last dimension of a must equal the second-to-last of b");
  }
  std::vector<Dim> batch_a(a.dims.begin(), a.dims.end() - 2);
  std::vector<Dim> batch_b(b.dims.begin(), b.dims.end() - 2);
  auto batch = BroadcastDims(batch_a, batch_b);
  if (!batch) {
    return c.Error("shape-mismatch", "the batch dimensions of " + a.ShapeStringWithSizes() +
                                         " and " + b.ShapeStringWithSizes() + " do not broadcast");
  }
  TensorType out;
  out.dtype = a.dtype;
  out.dims = *batch;
  out.dims.push_back(a.dims[a.rank() - 2]);
  out.dims.push_back(b.dims[b.rank() - 1]);
  return out;
}

// out = a @ b over broadcast batch dims: da = g @ b^T and db = a^T @ g, each summed back over the
// batch dims along which its input was broadcast.
std::vector<int> GradMatmul(Graph& g, const Node& n, int gout) {
  int a = n.args[0], b = n.args[1];
  int ga = grad::Emit(g, "matmul", {gout, grad::SwapLastTwo(g, b)});
  int gb = grad::Emit(g, "matmul", {grad::SwapLastTwo(g, a), gout});
  return {grad::SumToShape(g, ga, g.at(a).type), grad::SumToShape(g, gb, g.at(b).type)};
}

}  // namespace

void AddLinalgRules(RuleSet& r) {
  r["matmul"] = {InferMatmul, GradMatmul};
}

}  // namespace scellis::webir
