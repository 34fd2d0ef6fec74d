// Every op of graph protocol version 1, run through the whole descent and the CPU reference,
// checked against values computed here independently in double precision with hand-written loops.
//
// Data is fresh on every run (never all zeros); the seed is printed and may be fixed with
// SCELLIS_TEST_SEED=<n> to replay a failure. Elementwise ops, layout and life must match exactly:
// rounding a double result of one +, -, * to f32 gives the correctly rounded f32 result, so there
// is exactly one right answer. Matmul and sum are accumulations, checked to a relative 1e-5 of
// the sum of the magnitudes of their terms (the scale any accumulation error is proportional to).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "support/graph.h"

namespace scellis::testing {
namespace {

uint32_t TestSeed() {
  static const uint32_t seed = [] {
    const char* env = std::getenv("SCELLIS_TEST_SEED");
    uint32_t s =
        env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : std::random_device{}();
    std::printf("v1 ops: random seed %u (replay with SCELLIS_TEST_SEED=%u)\n", s, s);
    return s;
  }();
  return seed;
}

class V1Ops : public ::testing::Test {
 protected:
  void SetUp() override {
    uint32_t seed =
        TestSeed() ^ static_cast<uint32_t>(std::hash<std::string>{}(
                         ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    rng_.seed(seed);
    trace_ = std::make_unique<::testing::ScopedTrace>(
        __FILE__, __LINE__, "SCELLIS_TEST_SEED=" + std::to_string(TestSeed()));
  }

  // Uniform in [-4, 4), about one value in eight exactly zero; never all zeros.
  std::vector<float> Random(int64_t n) {
    std::uniform_real_distribution<float> value(-4.0f, 4.0f);
    std::uniform_int_distribution<int> zero(0, 7);
    std::vector<float> v(static_cast<size_t>(n));
    bool nonzero = false;
    for (float& x : v) {
      x = zero(rng_) == 0 ? 0.0f : value(rng_);
      nonzero |= x != 0.0f;
    }
    if (n > 0 && !nonzero) v[0] = 1.5f;
    return v;
  }
  float RandomScalar() {
    std::uniform_real_distribution<float> value(-3.0f, 3.0f);
    float s = 0;
    while (s == 0) s = value(rng_);
    return s;
  }

  std::mt19937 rng_;
  std::unique_ptr<::testing::ScopedTrace> trace_;
};

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Bitwise equality with the f32 rounding of the double reference.
void ExpectExact(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  int shown = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    float w = static_cast<float>(want[i]);
    if (Bits(got[i]) != Bits(w) && shown++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << w;
  }
}

// |got - want| <= rtol * scale[i], where scale is the sum of the magnitudes of the terms.
void ExpectClose(const std::vector<float>& got, const std::vector<double>& want,
                 const std::vector<double>& scale, double rtol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  int shown = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= rtol * scale[i]) && shown++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i] << " (error "
                    << err << " over " << rtol * scale[i] << ")";
  }
}

std::vector<float> RunOne(const Json& doc, const std::string& output,
                          std::vector<int64_t>* shape = nullptr) {
  runtime::RunResult r = CompileAndRun(doc.dump());
  const runtime::HostTensor* t = FindOutput(r, output);
  if (!t) {
    ADD_FAILURE() << "no output " << output;
    return {};
  }
  if (shape) *shape = t->type.sizes();
  return t->ToFloats();
}

TEST_F(V1Ops, Input) {
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{}, {1}, {7}, {5, 9}, {2, 3, 1, 4}}) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<float> x = Random(n);
    std::vector<int64_t> got_shape;
    std::vector<float> got =
        RunOne(GraphDoc({InputNode(0, shape, x)}, {{"x", 0}}), "x", &got_shape);
    EXPECT_EQ(got_shape, shape);
    ExpectExact(got, std::vector<double>(x.begin(), x.end()));
  }
}

TEST_F(V1Ops, Full) {
  float v = RandomScalar();
  Json doc = GraphDoc({{{"id", 0}, {"op", "full"}, {"shape", {3, 4}}, {"value", v}}}, {{"f", 0}});
  std::vector<int64_t> shape;
  std::vector<float> got = RunOne(doc, "f", &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{3, 4}));
  ExpectExact(got, std::vector<double>(12, v));
}

// Same shape, and large enough to span several chunks of elementwise work.
TEST_F(V1Ops, AddSubMulSameShape) {
  const std::vector<int64_t> shape = {130, 257};
  std::vector<float> a = Random(130 * 257), b = Random(130 * 257);
  for (const char* op : {"add", "sub", "mul"}) {
    SCOPED_TRACE(op);
    Json doc = GraphDoc({InputNode(0, shape, a),
                         InputNode(1, shape, b),
                         {{"id", 2}, {"op", op}, {"a", 0}, {"b", 1}}},
                        {{"y", 2}});
    std::vector<double> want(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      double x = a[i], y = b[i];
      want[i] = op == std::string("add") ? x + y : op == std::string("sub") ? x - y : x * y;
    }
    ExpectExact(RunOne(doc, "y"), want);
  }
}

TEST_F(V1Ops, AddSubMulScalarForm) {
  std::vector<float> a = Random(6 * 11);
  float s = RandomScalar();
  for (const char* op : {"add", "sub", "mul"}) {
    SCOPED_TRACE(op);
    Json doc = GraphDoc(
        {InputNode(0, {6, 11}, a), {{"id", 1}, {"op", op}, {"a", 0}, {"scalar", s}}}, {{"y", 1}});
    std::vector<double> want(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      double x = a[i], y = s;
      want[i] = op == std::string("add") ? x + y : op == std::string("sub") ? x - y : x * y;
    }
    ExpectExact(RunOne(doc, "y"), want);
  }
}

TEST_F(V1Ops, ReluAndPositive) {
  std::vector<float> a = Random(1000);
  a[0] = -0.0f;  // relu keeps it -0 (as torch.relu), positive gives 0: never positive
  Json doc = GraphDoc({InputNode(0, {1000}, a),
                       {{"id", 1}, {"op", "relu"}, {"a", 0}},
                       {{"id", 2}, {"op", "positive"}, {"a", 0}}},
                      {{"relu", 1}, {"positive", 2}});
  runtime::RunResult r = CompileAndRun(doc.dump());
  std::vector<double> relu(a.size()), positive(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    relu[i] = a[i] < 0 ? 0.0 : static_cast<double>(a[i]);
    positive[i] = a[i] > 0 ? 1.0 : 0.0;
  }
  ASSERT_TRUE(FindOutput(r, "relu") && FindOutput(r, "positive"));
  ExpectExact(FindOutput(r, "relu")->ToFloats(), relu);
  ExpectExact(FindOutput(r, "positive")->ToFloats(), positive);
}

TEST_F(V1Ops, Transpose) {
  for (auto [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{37, 53}, {1, 9}, {9, 1}, {200, 130}}) {
    std::vector<float> a = Random(rows * cols);
    std::vector<int64_t> shape;
    std::vector<float> got =
        RunOne(GraphDoc({InputNode(0, {rows, cols}, a), {{"id", 1}, {"op", "transpose"}, {"a", 0}}},
                        {{"t", 1}}),
               "t", &shape);
    EXPECT_EQ(shape, (std::vector<int64_t>{cols, rows}));
    std::vector<double> want(a.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) want[j * rows + i] = a[i * cols + j];
    ExpectExact(got, want);
  }
}

TEST_F(V1Ops, Matmul) {
  for (auto [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {37, 61, 29}, {1, 1, 1}, {5, 1, 7}, {1, 100, 1}, {64, 128, 3}, {33, 17, 40}}) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    std::vector<float> a = Random(m * k), b = Random(k * n);
    std::vector<int64_t> shape;
    std::vector<float> got = RunOne(GraphDoc({InputNode(0, {m, k}, a),
                                              InputNode(1, {k, n}, b),
                                              {{"id", 2}, {"op", "matmul"}, {"a", 0}, {"b", 1}}},
                                             {{"c", 2}}),
                                    "c", &shape);
    EXPECT_EQ(shape, (std::vector<int64_t>{m, n}));
    std::vector<double> want(m * n, 0.0), scale(m * n, 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t q = 0; q < k; ++q) {
          double t = static_cast<double>(a[i * k + q]) * b[q * n + j];
          want[i * n + j] += t;
          scale[i * n + j] += std::fabs(t);
        }
    ExpectClose(got, want, scale);
  }
}

TEST_F(V1Ops, Sum) {
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{1}, {255}, {257}, {17, 19}, {100003}, {3, 5, 7, 11}}) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<float> a = Random(n);
    std::vector<int64_t> out_shape;
    std::vector<float> got =
        RunOne(GraphDoc({InputNode(0, shape, a), {{"id", 1}, {"op", "sum"}, {"a", 0}}}, {{"s", 1}}),
               "s", &out_shape);
    EXPECT_TRUE(out_shape.empty());
    double want = 0, scale = 0;
    for (float x : a) {
      want += x;
      scale += std::fabs(x);
    }
    ExpectClose(got, {want}, {scale});
  }
}

// A chain mixing both binary forms: every op rounds to f32 on its own (no contraction), so the
// fused kernel must equal the step-by-step rounding exactly.
TEST_F(V1Ops, FusedChainRoundsEveryStep) {
  std::vector<float> a = Random(4099), b = Random(4099), c = Random(4099);
  float s = RandomScalar();
  Json doc = GraphDoc({InputNode(0, {4099}, a),
                       InputNode(1, {4099}, b),
                       InputNode(2, {4099}, c),
                       {{"id", 3}, {"op", "mul"}, {"a", 0}, {"b", 1}},
                       {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 2}},
                       {{"id", 5}, {"op", "mul"}, {"a", 4}, {"scalar", s}},
                       {{"id", 6}, {"op", "sub"}, {"a", 5}, {"b", 0}},
                       {{"id", 7}, {"op", "relu"}, {"a", 6}}},
                      {{"y", 7}});
  std::vector<double> want(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    float t = static_cast<float>(static_cast<double>(a[i]) * b[i]);
    t = static_cast<float>(static_cast<double>(t) + c[i]);
    t = static_cast<float>(static_cast<double>(t) * s);
    t = static_cast<float>(static_cast<double>(t) - a[i]);
    want[i] = t < 0 ? 0.0 : t;  // relu as torch.relu: -0 stays -0
  }
  ExpectExact(RunOne(doc, "y"), want);
}

// ---- life: hand-worked generations on a torus ----

using Cells = std::set<std::pair<int, int>>;

std::vector<float> Grid(const Cells& cells, int rows, int cols) {
  std::vector<float> g(static_cast<size_t>(rows * cols), 0.0f);
  for (auto [r, c] : cells) g[((r % rows + rows) % rows) * cols + (c % cols + cols) % cols] = 1.0f;
  return g;
}

Cells Shift(const Cells& cells, int dr, int dc, int rows, int cols) {
  Cells out;
  for (auto [r, c] : cells)
    out.insert({((r + dr) % rows + rows) % rows, ((c + dc) % cols + cols) % cols});
  return out;
}

// Runs `generations` chained life steps and returns the grid after each.
std::vector<std::vector<float>> Generations(const Cells& start, int rows, int cols,
                                            int generations) {
  std::vector<Json> nodes = {InputNode(0, {rows, cols}, Grid(start, rows, cols))};
  std::vector<std::pair<std::string, int>> outputs;
  for (int g = 1; g <= generations; ++g) {
    nodes.push_back({{"id", g}, {"op", "life"}, {"a", g - 1}});
    outputs.push_back({"gen" + std::to_string(g), g});
  }
  runtime::RunResult r = CompileAndRun(GraphDoc(nodes, outputs).dump());
  std::vector<std::vector<float>> out;
  for (int g = 1; g <= generations; ++g) {
    const runtime::HostTensor* t = FindOutput(r, "gen" + std::to_string(g));
    out.push_back(t ? t->ToFloats() : std::vector<float>{});
  }
  return out;
}

void ExpectGrid(const std::vector<float>& got, const Cells& want, int rows, int cols, int gen) {
  std::vector<float> w = Grid(want, rows, cols);
  ASSERT_EQ(got.size(), w.size());
  std::string g_art, w_art;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      g_art += got[r * cols + c] == 1.0f ? 'X' : got[r * cols + c] == 0.0f ? '.' : '?';
      w_art += w[r * cols + c] == 1.0f ? 'X' : '.';
    }
    g_art += '\n';
    w_art += '\n';
  }
  EXPECT_EQ(g_art, w_art) << "generation " << gen;
}

TEST(V1Life, BlinkerInTheMiddle) {
  // .....      .....
  // .....      ..X..
  // .XXX.  ->  ..X..  -> back
  // .....      ..X..
  // .....      .....
  Cells horizontal = {{2, 1}, {2, 2}, {2, 3}}, vertical = {{1, 2}, {2, 2}, {3, 2}};
  auto gens = Generations(horizontal, 5, 5, 4);
  for (int g = 0; g < 4; ++g) ExpectGrid(gens[g], g % 2 == 0 ? vertical : horizontal, 5, 5, g + 1);
}

TEST(V1Life, BlinkerAcrossTheCorner) {
  // A horizontal blinker on row 0 spanning the left/right edge (columns 5, 0, 1 of a 6x5 grid
  // with 6 columns): its vertical phase spans the top/bottom edge (rows 4, 0, 1 of column 0).
  const int rows = 5, cols = 6;
  Cells horizontal = {{0, 5}, {0, 0}, {0, 1}}, vertical = {{4, 0}, {0, 0}, {1, 0}};
  auto gens = Generations(horizontal, rows, cols, 4);
  for (int g = 0; g < 4; ++g)
    ExpectGrid(gens[g], g % 2 == 0 ? vertical : horizontal, rows, cols, g + 1);
}

TEST(V1Life, GliderWrapsAroundTheTorus) {
  // The four phases of a glider heading down and right; after four generations it is the first
  // phase moved one cell down and one right.
  //   .X.    ...    ...    ...
  //   ..X    X.X    ..X    .X.
  //   XXX    .XX    X.X    ..XX
  //          .X.    .XX    .XX.
  const Cells phases[4] = {{{0, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}},
                           {{1, 0}, {1, 2}, {2, 1}, {2, 2}, {3, 1}},
                           {{1, 2}, {2, 0}, {2, 2}, {3, 1}, {3, 2}},
                           {{1, 1}, {2, 2}, {2, 3}, {3, 1}, {3, 2}}};
  // Start near the bottom-right corner of a 6x7 torus so it crosses both edges; 28 generations
  // = 7 moves along each axis: back home on the 7-wide axis, one row further on the 6-high one.
  const int rows = 6, cols = 7, start_r = 4, start_c = 5, total = 28;
  auto gens = Generations(Shift(phases[0], start_r, start_c, rows, cols), rows, cols, total);
  for (int g = 1; g <= total; ++g) {
    int moved = g / 4;
    ExpectGrid(gens[g - 1], Shift(phases[g % 4], start_r + moved, start_c + moved, rows, cols),
               rows, cols, g);
  }
  ExpectGrid(gens[total - 1], Shift(phases[0], start_r + 1, start_c, rows, cols), rows, cols,
             total);
}

// ---- the samples from the product brief ----

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(V1Samples, SeedMulRelu) {
  // relu([-2, 3, 4] * [10, 20, 30]) = relu([-20, 60, 120]).
  runtime::RunResult r = CompileAndRun(ReadExample("seed_mul_relu.json"));
  const runtime::HostTensor* t = FindOutput(r, "values");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ToFloats(), (std::vector<float>{0, 60, 120}));
  EXPECT_EQ(t->type.sizes(), (std::vector<int64_t>{3}));
}

// The documented counter-based initializer, written out again here: value i of stream `seed` is
// low + (high - low) * u, u = (SplitMix64-style hash of (seed, i)) >> 40, scaled by 2^-24.
double InitializerValue(uint64_t seed, uint64_t i, double low, double high) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  z = (z + 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
  z ^= z >> 29;
  double u = static_cast<double>(z >> 40) / 16777216.0;
  return static_cast<float>(low + static_cast<float>(high - low) * static_cast<float>(u));
}

TEST(V1Samples, CenterColumns) {
  runtime::RunResult r = CompileAndRun(ReadExample("center_columns.json"));
  const int N = 4, D = 3, K = 2;
  double x[N][D], mean[D] = {0, 0, 0}, xc[N][D], w[D][K];
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < D; ++j) x[i][j] = 1 + i * D + j;  // data 1..12, row-major
  for (int j = 0; j < D; ++j) {
    for (int i = 0; i < N; ++i) mean[j] += x[i][j];
    mean[j] /= N;
  }
  std::vector<double> centered, y, scale;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < D; ++j) centered.push_back(xc[i][j] = x[i][j] - mean[j]);
  for (int d = 0; d < D; ++d)
    for (int k = 0; k < K; ++k) w[d][k] = InitializerValue(7, d * K + k, -1, 1);
  for (int i = 0; i < N; ++i)
    for (int k = 0; k < K; ++k) {
      double acc = 0, mag = 0;
      for (int d = 0; d < D; ++d) {
        acc += xc[i][d] * w[d][k];
        mag += std::fabs(xc[i][d] * w[d][k]);
      }
      y.push_back(acc);
      scale.push_back(mag);
    }
  // The weights are really random: distinct, inside (-1, 1), not all of one sign.
  std::set<double> distinct;
  int negative = 0;
  for (int d = 0; d < D; ++d)
    for (int k = 0; k < K; ++k) {
      distinct.insert(w[d][k]);
      negative += w[d][k] < 0;
      EXPECT_GE(w[d][k], -1.0);
      EXPECT_LT(w[d][k], 1.0);
    }
  EXPECT_EQ(distinct.size(), 6u);
  EXPECT_GT(negative, 0);
  EXPECT_LT(negative, 6);

  const runtime::HostTensor* c = FindOutput(r, "centered");
  const runtime::HostTensor* p = FindOutput(r, "y");
  ASSERT_TRUE(c && p);
  EXPECT_EQ(c->type.sizes(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(p->type.sizes(), (std::vector<int64_t>{4, 2}));
  ExpectExact(c->ToFloats(), centered);  // column means of 1..12 are exact in f32: 5.5, 6.5, 7.5
  ExpectClose(p->ToFloats(), y, scale);
}

// The matmul_chain example worked by hand: relu(0.5 * (A B) C^T - 1) and its sum; every value is
// a small multiple of 0.5, so every f32 result is exact.
TEST(V1Samples, MatmulChain) {
  Json doc = Json::parse(ReadExample("matmul_chain.json"));
  auto data = [&](int id) { return doc["nodes"][id]["data"].get<std::vector<double>>(); };
  std::vector<double> A = data(0), B = data(1), C = data(2);  // [4,5], [5,3], [4,3]
  double AB[4][3] = {}, P[4][4] = {};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 5; ++k) AB[i][j] += A[i * 5 + k] * B[k * 3 + j];
  std::vector<double> product;
  double total = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 3; ++k) P[i][j] += AB[i][k] * C[j * 3 + k];
      double v = 0.5 * P[i][j] - 1;
      product.push_back(v > 0 ? v : 0);
      total += product.back();
    }
  runtime::RunResult r = CompileAndRun(doc.dump());
  ASSERT_TRUE(FindOutput(r, "product") && FindOutput(r, "total"));
  ExpectExact(FindOutput(r, "product")->ToFloats(), product);
  ExpectExact(FindOutput(r, "total")->ToFloats(), {total});
}

}  // namespace
}  // namespace scellis::testing
