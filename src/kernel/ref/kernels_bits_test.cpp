// The CPU reference's fast kernels against the plain loops they replaced, written out simply here:
// the same bits for every element, on seeded random inputs of odd sizes, for 1, 2, 3 and 8
// threads. The reference is the oracle, so speed may change nothing it answers.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/detmath.h"
#include "base/random.h"
#include "execplan/plan.h"
#include "kernel/ref/graph_test.h"
#include "kernel/ref/ref.h"
#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"
#include "webir/graph.h"
#include "webir/op_rules.h"

namespace scellis::kernel::ref {
namespace {

using testing::Op;
using webir::Graph;
using webir::Node;

const int kThreadCounts[] = {1, 2, 3, 8};

int Input(Graph& g, std::vector<int64_t> shape) {
  return testing::Input(g, "in" + std::to_string(g.nodes.size()), shape);
}

// Values in [-scale, scale), a few exact zeros among them.
template <typename T>
std::vector<T> Random(uint64_t seed, int64_t n, double scale = 1.0) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double u = CounterUniform(seed, i);
    v[i] = u < 0.02 ? T(0) : static_cast<T>(scale * (2.0 * u - 1.0));
  }
  return v;
}

template <typename T>
std::vector<T> RunOp(const Graph& g, int node, const std::vector<std::vector<T>>& inputs,
                     const std::vector<bool>& transposed, int threads) {
  const OpImpl* impl = FindOp(g.at(node).op);
  EXPECT_NE(impl, nullptr);
  std::vector<T> out(static_cast<size_t>(g.at(node).type.elements()), T(-7));
  Parallel parallel(threads);
  OpArgs<T> args{&g, &g.at(node), {}, out.data(), &parallel, transposed, -1};
  for (const auto& in : inputs) args.inputs.push_back(in.data());
  if constexpr (std::is_same_v<T, float>)
    impl->f32(args);
  else
    impl->f64(args);
  return out;
}

template <typename T>
void ExpectSameBits(const std::vector<T>& got, const std::vector<T>& want,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the plain loop gives "
                    << want[i];
      return;
    }
}

// The plain matmul: each output adds a(i, k) * b(k, j) for k = 0 .. K - 1 in order; a batch of
// `batch` products, either operand broadcast when its batch is 1.
template <typename T>
std::vector<T> PlainMatmul(const std::vector<T>& A, const std::vector<T>& B, int64_t batch,
                           bool a_batched, bool b_batched, int64_t M, int64_t K, int64_t N, bool ta,
                           bool tb) {
  std::vector<T> C(static_cast<size_t>(batch * M * N));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const T* a = A.data() + (a_batched ? b * M * K : 0);
        const T* bm = B.data() + (b_batched ? b * K * N : 0);
        T acc = T(0);
        for (int64_t k = 0; k < K; ++k) {
          T x = ta ? a[k * M + i] : a[i * K + k];
          T y = tb ? bm[j * K + k] : bm[k * N + j];
          T product = x * y;
          acc = acc + product;
        }
        C[(b * M + i) * N + j] = acc;
      }
  return C;
}

template <typename T>
void CheckMatmul(int64_t M, int64_t K, int64_t N, bool ta, bool tb, uint64_t seed) {
  Graph g;
  int a = Input(g, {M, K}), b = Input(g, {K, N});
  int mm = Op(g, "matmul", {a, b});
  auto A = Random<T>(seed, M * K), B = Random<T>(seed + 1, K * N);
  auto want = PlainMatmul(A, B, 1, false, false, M, K, N, ta, tb);
  for (int threads : kThreadCounts)
    ExpectSameBits(RunOp<T>(g, mm, {A, B}, {ta, tb}, threads), want,
                   "matmul " + std::to_string(M) + "x" + std::to_string(K) + "x" +
                       std::to_string(N) + (ta ? " aT" : "") + (tb ? " bT" : "") + " threads " +
                       std::to_string(threads));
}

struct MatmulShape {
  int64_t M, K, N;
};
const MatmulShape kMatmulShapes[] = {{1, 1, 1},      {7, 63, 65},   {65, 7, 1},    {64, 784, 256},
                                     {784, 64, 256}, {63, 65, 10},  {1, 784, 7},   {130, 33, 97},
                                     {64, 256, 10},  {256, 64, 10}, {64, 10, 256}, {9, 1, 33}};

TEST(FastMatmul, SameBitsAsThePlainLoopF32) {
  uint64_t seed = 100;
  for (const MatmulShape& s : kMatmulShapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) CheckMatmul<float>(s.M, s.K, s.N, ta, tb, seed += 2);
}

TEST(FastMatmul, SameBitsAsThePlainLoopF64) {
  uint64_t seed = 500;
  for (const MatmulShape& s : kMatmulShapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) CheckMatmul<double>(s.M, s.K, s.N, ta, tb, seed += 2);
}

TEST(FastMatmul, BatchedAndBroadcastSameBits) {
  const int64_t batch = 3, M = 17, K = 65, N = 33;
  for (bool a_batched : {true, false}) {
    Graph g;
    int a = a_batched ? Input(g, {batch, M, K}) : Input(g, {M, K});
    int b = Input(g, {batch, K, N});
    int mm = Op(g, "matmul", {a, b});
    auto A = Random<float>(7, (a_batched ? batch : 1) * M * K);
    auto B = Random<float>(8, batch * K * N);
    auto want = PlainMatmul(A, B, batch, a_batched, true, M, K, N, false, false);
    for (int threads : kThreadCounts)
      ExpectSameBits(RunOp<float>(g, mm, {A, B}, {}, threads), want,
                     std::string("batched matmul") + (a_batched ? "" : " (a broadcast)") +
                         " threads " + std::to_string(threads));
  }
}

// Overflow, NaN and signed zeros go through the tile as through the plain loop.
TEST(FastMatmul, SpecialValuesSameBits) {
  const int64_t M = 9, K = 13, N = 40;
  Graph g;
  int a = Input(g, {M, K}), b = Input(g, {K, N});
  int mm = Op(g, "matmul", {a, b});
  auto A = Random<float>(21, M * K, 3e38), B = Random<float>(22, K * N, 2.0);
  A[5] = -0.0f;
  B[3] = std::numeric_limits<float>::infinity();
  A[K + 2] = std::numeric_limits<float>::quiet_NaN();
  auto want = PlainMatmul(A, B, 1, false, false, M, K, N, false, false);
  for (int threads : kThreadCounts) {
    auto got = RunOp<float>(g, mm, {A, B}, {}, threads);
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << i;
        got[i] = want[i];
      }
    }
    ExpectSameBits(got, want, "matmul with inf, nan, -0 threads " + std::to_string(threads));
  }
}

// Adam without maximize or weight decay, written out as the per-element rule it had: m' by
// ATen's two-sided lerp, v', then the update with the bias corrections rounded once to T.
template <typename T>
void CheckAdam(int64_t n, double beta1, int step, uint64_t seed) {
  const double lr = 1e-3, beta2 = 0.999, eps = 1e-8;
  Json attrs = {{"lr", lr},         {"beta1", beta1},      {"beta2", beta2},
                {"eps", eps},       {"weight_decay", 0.0}, {"decoupled", false},
                {"maximize", false}};
  Graph g;
  g.version = 2;  // as Op infers
  int p = Input(g, {n}), gr = Input(g, {n}), m = Input(g, {n}), v = Input(g, {n}), t = Input(g, {});
  int update = Op(g, "adam_update", {p, gr, m, v, t}, attrs);
  int first = Op(g, "adam_m", {p, gr, m, v, t}, attrs);
  int second = Op(g, "adam_v", {p, gr, m, v, t}, attrs);
  auto P = Random<T>(seed, n), G = Random<T>(seed + 1, n, 0.1), Mo = Random<T>(seed + 2, n, 0.01);
  auto V = Random<T>(seed + 3, n, 1e-4);
  for (T& x : V) x = x < T(0) ? -x : x;
  std::vector<T> step_value = {static_cast<T>(step)};

  std::vector<T> want_p(n), want_m(n), want_v(n);
  const T w = static_cast<T>(1.0 - beta1);
  const T b2 = static_cast<T>(beta2), value = static_cast<T>(1.0 - beta2);
  const double bc1 = 1.0 - std::pow(beta1, step), bc2 = 1.0 - std::pow(beta2, step);
  const T minus_step_size = static_cast<T>(-(lr / bc1)), bc2_sqrt = static_cast<T>(std::sqrt(bc2));
  for (int64_t i = 0; i < n; ++i) {
    T gi = G[i], mi = Mo[i];
    want_m[i] = std::fabs(w) < T(0.5) ? mi + w * (gi - mi) : gi - (gi - mi) * (T(1) - w);
    want_v[i] = V[i] * b2 + value * gi * gi;
    T denom = detmath::Sqrt(want_v[i]) / bc2_sqrt + static_cast<T>(eps);
    want_p[i] = P[i] + minus_step_size * want_m[i] / denom;
  }
  const std::vector<std::vector<T>> ins = {P, G, Mo, V, step_value};
  // The same three through the executor, which runs them chunk by chunk together.
  g.outputs = {{"p", update}, {"m", first}, {"v", second}};
  pipeline::CompileOptions options;
  options.plan.budget_bytes = int64_t{1} << 30;
  auto compiled = pipeline::CompileGraph(g, options);
  ASSERT_TRUE(compiled.ok()) << compiled.errors()[0].message;
  runtime::cpu::ExactFeeds<T> feeds;
  for (int i = 0; i < 5; ++i) feeds[g.at(i).name] = ins[i];
  const std::string what = "n " + std::to_string(n) + " beta1 " + std::to_string(beta1);
  for (int threads : kThreadCounts) {
    const std::string at = what + " threads " + std::to_string(threads);
    ExpectSameBits(RunOp<T>(g, update, ins, {}, threads), want_p, "adam_update " + at);
    ExpectSameBits(RunOp<T>(g, first, ins, {}, threads), want_m, "adam_m " + at);
    ExpectSameBits(RunOp<T>(g, second, ins, {}, threads), want_v, "adam_v " + at);
    auto run = runtime::cpu::RunPlan<T>(*compiled->plan, {}, Parallel(threads), feeds);
    ASSERT_TRUE(run.ok());
    ExpectSameBits(run.value()[0], want_p, "executor adam_update " + at);
    ExpectSameBits(run.value()[1], want_m, "executor adam_m " + at);
    ExpectSameBits(run.value()[2], want_v, "executor adam_v " + at);
  }
}

TEST(FastAdam, SameBitsAsThePerElementRule) {
  uint64_t seed = 900;
  for (int64_t n : {1, 7, 63, 65, 784, 200704 + 7})
    for (double beta1 : {0.9, 0.3}) {
      CheckAdam<float>(n, beta1, 3, seed += 4);
      CheckAdam<double>(n, beta1, 1, seed += 4);
    }
}

// A fused elementwise chain over broadcast inputs, against each op's scalar function applied
// element by element through the broadcast index, in the expression's order.
void CheckFused(const std::vector<int64_t>& shape, const std::vector<int64_t>& bias_shape,
                const std::vector<int64_t>& scale_shape, uint64_t seed) {
  Graph g;
  g.version = 2;  // as Op infers
  int x = Input(g, shape), bias = Input(g, bias_shape), scale = Input(g, scale_shape);
  int sum = Op(g, "add", {x, bias});
  int relu = Op(g, "relu", {sum});
  int prod = Op(g, "mul", {relu, scale});
  int e = Op(g, "exp", {prod});
  int out = Op(g, "sub", {e, x});
  g.outputs = {{"out", out}};
  const std::vector<int64_t> out_sizes = g.at(out).type.sizes();
  const int64_t total = g.at(out).type.elements();
  auto elements = [](const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  };
  std::vector<float> X = Random<float>(seed, elements(shape), 2.0);
  std::vector<float> B = Random<float>(seed + 1, elements(bias_shape));
  std::vector<float> S = Random<float>(seed + 2, elements(scale_shape));
  auto f = [](const char* op) { return FindScalar(op)->f32; };
  auto at = [&](const std::vector<float>& v, const std::vector<int64_t>& s, int64_t i) {
    std::vector<int64_t> strides = BroadcastStrides(s, out_sizes);
    std::vector<int64_t> idx = Unravel(i, out_sizes);
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
    return v[off];
  };
  std::vector<float> want(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) {
    float xi = at(X, shape, i);
    float r = f("relu")(f("add")(xi, at(B, bias_shape, i), 0), 0, 0);
    want[i] = f("sub")(f("exp")(f("mul")(r, at(S, scale_shape, i), 0), 0, 0), xi, 0);
  }
  pipeline::CompileOptions options;
  options.plan.budget_bytes = int64_t{1} << 30;
  auto compiled = pipeline::CompileGraph(g, options);
  ASSERT_TRUE(compiled.ok()) << compiled.errors()[0].message;
  runtime::cpu::ExactFeeds<float> feeds = {
      {g.at(x).name, X}, {g.at(bias).name, B}, {g.at(scale).name, S}};
  for (int threads : kThreadCounts) {
    auto got = runtime::cpu::RunPlan<float>(*compiled->plan, {}, Parallel(threads), feeds);
    ASSERT_TRUE(got.ok());
    ExpectSameBits(got.value()[0], want,
                   "fused chain over " + std::to_string(total) + " elements, threads " +
                       std::to_string(threads));
  }
}

TEST(FastFused, SameBitsAsElementByElement) {
  CheckFused({1, 1}, {1}, {1, 1}, 10);
  CheckFused({7, 65}, {65}, {7, 1}, 20);
  CheckFused({63, 784}, {784}, {63, 1}, 30);
  CheckFused({65, 257}, {1, 257}, {1}, 40);
  CheckFused({3, 5, 1111}, {5, 1}, {1111}, 50);
  CheckFused({40000}, {40000}, {1}, 60);
  CheckFused({64, 256}, {256}, {64, 256}, 70);  // the main job's bias and ReLU epilogue
  CheckFused({2, 40000}, {2, 1}, {40000}, 80);  // rows longer than a chunk
  CheckFused({9, 1, 3}, {4, 1}, {1, 3}, 90);    // a broadcast output dimension of size 4
}

}  // namespace
}  // namespace scellis::kernel::ref
