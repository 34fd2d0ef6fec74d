// Matrix products. Determinism: each output element accumulates along K in increasing order on
// the CPU reference; GPU kernels tile K in a fixed order (no split-K atomics).
#include <algorithm>
#include <cstdlib>
#include <optional>

#include "base/fixed_point.h"
#include "base/host_tensor.h"
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
  if (a.dtype != b.dtype) {
    return c.Error("dtype-mismatch",
                   std::string("matmul of ") + DTypeName(a.dtype) + " and " + DTypeName(b.dtype),
                   "convert one with cast{a, dtype}: no op mixes dtypes on its own");
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

// matmul_fixed: a[M, K] and b[K, N] of i32 fixed-point values, an i32 result.
Result<TensorType> InferMatmulFixed(InferContext& c) {
  const TensorType& a = c.args[0];
  const TensorType& b = c.args[1];
  if (a.rank() != 2 || b.rank() != 2) {
    return c.Error("bad-rank", "matmul_fixed takes two tensors of rank 2, got " +
                                   a.ShapeStringWithSizes() + " and " + b.ShapeStringWithSizes());
  }
  if (a.dims[1].size != b.dims[0].size) {
    return c.Error("shape-mismatch",
                   "matmul_fixed of " + a.ShapeStringWithSizes() + " and " +
                       b.ShapeStringWithSizes() + ": the inner sizes " +
                       std::to_string(a.dims[1].size) + " and " + std::to_string(b.dims[0].size) +
                       " differ",
                   "the last dimension of a must equal the first of b");
  }
  const int frac_bits = c.attrs["frac_bits"].get<int>();
  if (frac_bits < 0 || frac_bits > kMaxFracBits) {
    return c.Error("bad-attribute",
                   "frac_bits is " + std::to_string(frac_bits) + ", expected 0 to " +
                       std::to_string(kMaxFracBits),
                   "the fraction bits of the i32 fixed-point values a, b and the result");
  }
  TensorType out;
  out.dtype = DType::kI32;
  out.dims = {a.dims[0], b.dims[1]};
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
  r["matmul_fixed"] = {InferMatmulFixed, nullptr};
}

namespace {

// The input (not carried) or full node whose values an operand is, or -1 when the device
// computes it.
int FixedPointSource(const Graph& g, int node) {
  const Node& n = g.at(node);
  if (n.role == Role::kConst) return node;
  if (n.role != Role::kInput) return -1;
  for (const Carry& c : g.carries)
    if (c.to == node) return -1;
  return node;
}

}  // namespace

Result<std::vector<FixedPointUse>> FixedPointUses(const Graph& g) {
  std::vector<FixedPointUse> uses;
  for (const Node& n : g.nodes) {
    if (n.op != "matmul_fixed") continue;
    FixedPointUse u{n.id, FixedPointSource(g, n.args[0]), FixedPointSource(g, n.args[1])};
    if (u.a < 0 || u.b < 0) {
      return UserError("fixed-point-not-checkable", n.origin,
                       "matmul_fixed's operand %" + g.at(n.args[u.a < 0 ? 0 : 1]).name +
                           " is computed on the device, so no bound can prove the product fits "
                           "i32 before a kernel computes it",
                       "give both operands as inputs (inline data or fed) or full constants");
    }
    uses.push_back(u);
  }
  return uses;
}

Status CheckFixedPointValues(const Graph& g, const FixedPointUse& use, const HostTensor& a,
                             const HostTensor& b, ErrorKind kind, const std::string& what) {
  const Node& op = g.at(use.op);
  const int frac_bits = op.attrs["frac_bits"].get<int>();
  const int64_t M = a.type.dims[0].size, K = a.type.dims[1].size, N = b.type.dims[1].size;
  auto at = [](const HostTensor& t, int64_t i) { return static_cast<int64_t>(t.ValueAt(i)); };
  // A bound first: every |sum| is at most the largest row sum of |a| times the largest |b|.
  __int128 row_max = 0, b_max = 0;
  for (int64_t m = 0; m < M; ++m) {
    __int128 row = 0;
    for (int64_t k = 0; k < K; ++k) row += std::abs(at(a, m * K + k));
    row_max = std::max(row_max, row);
  }
  for (int64_t i = 0; i < K * N; ++i) b_max = std::max<__int128>(b_max, std::abs(at(b, i)));
  if (FixedPointResult(row_max * b_max, frac_bits) && FixedPointResult(-row_max * b_max, frac_bits))
    return Status::Ok();
  // Else each sum, exactly, in row-major order: the first that does not fit is named.
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      __int128 sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += __int128{at(a, m * K + k)} * at(b, k * N + n);
      if (FixedPointResult(sum, frac_bits)) continue;
      Diagnostic d = UserError(
          "fixed-point-overflow", op.origin,
          "matmul_fixed's result at " + PositionText(m * N + n, {M, N}) + " of " + what +
              " is outside the i32 range (its sum of products over 2^" +
              std::to_string(frac_bits) + " is beyond -2^31 .. 2^31 - 1)",
          "scale the operands down, or use more fraction bits");
      d.kind = kind;
      return d;
    }
  }
  return Status::Ok();
}

namespace {

// The values of a source node known when the graph is made, or nullopt for a fed input.
std::optional<HostTensor> KnownValues(const Node& s) {
  if (s.role == Role::kConst) {
    HostTensor t = HostTensor::Zeros(s.type);
    for (int64_t i = 0; i < s.type.elements(); ++i) t.SetValue(i, s.attrs["value"].get<double>());
    return t;
  }
  if (s.data) return HostTensor::FromValues(s.type, *s.data);
  return std::nullopt;
}

}  // namespace

Status CheckKnownFixedPoint(const Graph& g) {
  SCELLIS_ASSIGN_OR_RETURN(std::vector<FixedPointUse> uses, FixedPointUses(g));
  for (const FixedPointUse& u : uses) {
    std::optional<HostTensor> a = KnownValues(g.at(u.a)), b = KnownValues(g.at(u.b));
    if (!a || !b) continue;  // fed: checked before each step that reads it
    SCELLIS_TRY(CheckFixedPointValues(g, u, *a, *b, ErrorKind::kUser, "the document's data"));
  }
  return Status::Ok();
}


}  // namespace scellis::webir
