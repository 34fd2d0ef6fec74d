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

// matmul_q: a[M, K] f32 times the transpose of b[N, K] in k-quant blocks (the table admits only
// those dtypes for b, and the document only whole blocks along K).
Result<TensorType> InferMatmulQ(InferContext& c) {
  const TensorType& a = c.args[0];
  const TensorType& b = c.args[1];
  if (a.rank() != 2 || b.rank() != 2) {
    return c.Error("bad-rank",
                   "matmul_q takes a of rank 2 and b of rank 2 (its rows of blocks), got " +
                       a.ShapeStringWithSizes() + " and " + b.ShapeStringWithSizes(),
                   "reshape a batch of rows into one [rows, K] matrix first");
  }
  if (a.dims[1].size != b.dims[1].size) {
    return c.Error("shape-mismatch",
                   "matmul_q of " + a.ShapeStringWithSizes() + " and " + b.ShapeStringWithSizes() +
                       ": the inner sizes " + std::to_string(a.dims[1].size) + " and " +
                       std::to_string(b.dims[1].size) + " differ",
                   "b holds the weight as a linear layer stores it, [out_features, K]: the last "
                   "dimensions of a and b must be equal");
  }
  TensorType out;
  out.dims = {a.dims[0], b.dims[0]};
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
  r["matmul_q"] = {InferMatmulQ, nullptr};
}

}  // namespace scellis::webir
