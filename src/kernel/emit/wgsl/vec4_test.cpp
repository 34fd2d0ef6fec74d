// The wide (vec4) kernels on Dawn over SwiftShader, in the debug tier.
// Fused elementwise kernels: over ragged sizes (4k vectorised; 4k+1..4k+3 stay scalar), broadcast
// inputs and every 32-bit dtype, their outputs equal the CPU reference's bit for bit where the ops
// are exact in IEEE arithmetic (any NaN matching any NaN: WGSL leaves its sign open), and equal the
// scalar kernel's (the schedule-elementwise pass disabled) bit for bit for every op, NaNs
// included. Whole-tensor sums loading vec4: the reference's bits (its fixed 256-lane order).
// Inputs are fresh random values each run, special values (NaN, infinities, signed zeros;
// subnormals, which a GPU may flush, against the scalar kernel only) among them; the seed is
// printed on failure.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"
#include "runtime/backends/webgpu/executor.h"

namespace scellis::kernel::wgsl {
namespace {

using runtime::Feeds;
using runtime::HostTensor;
using runtime::webgpu::WebGpuExecutor;

std::unique_ptr<WebGpuExecutor> OpenGpu(uint64_t max_binding_bytes = 0) {
  if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  auto d = runtime::webgpu::Device::Open(
      {.allow_software_adapter = true, .max_binding_bytes = max_binding_bytes});
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.errors().front().message);
  return d.ok() ? std::make_unique<WebGpuExecutor>(std::move(d.value())) : nullptr;
}

WebGpuExecutor* Gpu() {
  static std::unique_ptr<WebGpuExecutor> gpu = OpenGpu();
  return gpu.get();
}

Json Node(int id, const std::string& op, Json fields) {
  fields["id"] = id;
  fields["op"] = op;
  return fields;
}

Json Doc(const Json& nodes, const std::vector<int>& outputs) {
  Json outs = Json::array();
  for (int id : outputs) outs.push_back({{"name", "o" + std::to_string(id)}, {"id", id}});
  return {{"version", 3}, {"nodes", nodes}, {"outputs", outs}};
}

Result<pipeline::Compiled> Compile(const Json& doc, const WebGpuExecutor& gpu, bool wide) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kDebug;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits = gpu.limits();
  if (!wide) o.disabled_passes.insert("schedule-elementwise");
  return pipeline::Compile(doc.dump(), o);
}

// The schedule width of the kernel writing the output of document node `node` ("o<node>").
int WidthOf(const pipeline::Compiled& c, int node) {
  for (const webir::Output& o : c.module->graph().outputs) {
    if (o.name != "o" + std::to_string(node)) continue;
    for (const Kernel& k : c.module->kernels)
      if (k.output == o.node && k.elementwise_schedule) return k.elementwise_schedule->width;
  }
  return 0;
}

// f32 values in [-4, 4] with about one in eight a special value: NaN, infinities, signed zeros,
// and subnormals when `subnormals` (a GPU may flush those to zero, the reference does not: they
// are compared with the scalar kernel alone).
std::vector<double> RandomFloats(int64_t n, std::mt19937& rng, bool subnormals = false) {
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            0.0f,
                            -0.0f,
                            1.0f,
                            std::numeric_limits<float>::denorm_min(),
                            -1e-40f};
  std::uniform_real_distribution<float> u(-4, 4);
  std::uniform_int_distribution<int> pick(0, 63);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) {
    const int p = pick(rng);
    x = p < (subnormals ? 8 : 6) ? specials[p] : u(rng);
  }
  return v;
}

std::vector<double> RandomInts(int64_t n, std::mt19937& rng, double lo, double hi) {
  std::uniform_int_distribution<int64_t> u(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = static_cast<double>(u(rng));
  return v;
}

HostTensor Tensor(const std::vector<int64_t>& shape, DType dtype, const std::vector<double>& v) {
  return HostTensor::FromValues(MakeType(shape, dtype), v);
}

// Bit for bit; with `any_nan`, two NaNs of any sign and payload count as equal (WGSL leaves a
// NaN's sign to the implementation, so only the scalar kernel on the same device pins it).
void ExpectSameBits(const HostTensor& got, const HostTensor& want, const std::string& what,
                    bool any_nan = false) {
  ASSERT_EQ(got.type.dtype, want.type.dtype) << what;
  ASSERT_EQ(got.bytes.size(), want.bytes.size()) << what;
  const auto g = got.view<uint32_t>(), w = want.view<uint32_t>();
  const bool floats = got.type.dtype == DType::kF32;
  for (size_t i = 0; i < w.size(); ++i) {
    if (any_nan && floats && std::isnan(got.ValueAt(i)) && std::isnan(want.ValueAt(i))) continue;
    ASSERT_EQ(g[i], w[i]) << what << " element " << i << ": " << got.ValueAt(i) << " vs "
                          << want.ValueAt(i);
  }
}

struct Runs {
  pipeline::Compiled wide;
  runtime::RunResult gpu_wide, gpu_scalar, reference;
};

// Runs `doc` on the GPU wide and scalar, and on the CPU reference.
Runs RunAll(const Json& doc, const Feeds& feeds) {
  Runs r;
  WebGpuExecutor* gpu = Gpu();
  EXPECT_NE(gpu, nullptr);
  if (!gpu) return r;
  auto wide = Compile(doc, *gpu, true);
  auto scalar = Compile(doc, *gpu, false);
  EXPECT_TRUE(wide.ok()) << (wide.ok() ? "" : wide.errors().front().Format());
  if (!wide.ok() || !scalar.ok()) return r;
  r.wide = *wide;
  auto a = gpu->Run(*wide->plan, feeds, {.poison_outputs = true});
  auto b = gpu->Run(*scalar->plan, feeds, {.poison_outputs = true});
  runtime::cpu::CpuExecutor cpu({.threads = 1});
  auto c = cpu.Run(*wide->plan, feeds);
  EXPECT_TRUE(a.ok()) << (a.ok() ? "" : a.errors().front().Format());
  EXPECT_TRUE(b.ok() && c.ok());
  if (a.ok() && b.ok() && c.ok()) {
    r.gpu_wide = std::move(*a);
    r.gpu_scalar = std::move(*b);
    r.reference = std::move(*c);
  }
  return r;
}

unsigned FreshSeed() {
  return std::random_device{}();
}

// A chain of ops exact in IEEE arithmetic (one rounding each, NaN and signed zeros as the
// reference treats them) over three inputs of n elements, and a chain of transcendental ops.
Json F32Chains(int64_t n) {
  return Doc({Node(0, "input", {{"name", "a"}, {"shape", {n}}}),
              Node(1, "input", {{"name", "b"}, {"shape", {n}}}),
              Node(2, "input", {{"name", "c"}, {"shape", {n}}}),
              // relu(a * b + c) * 0.5, the benchmark's chain
              Node(3, "mul", {{"a", 0}, {"b", 1}}), Node(4, "add", {{"a", 3}, {"b", 2}}),
              Node(5, "relu", {{"a", 4}}), Node(6, "mul", {{"a", 5}, {"scalar", 0.5}}),
              // where(a > c, max(a, b) / c, clamp(sqrt(b), 0.25, 1.5) - min(b, c))
              Node(7, "gt", {{"a", 0}, {"b", 2}}), Node(8, "maximum", {{"a", 0}, {"b", 1}}),
              Node(9, "div", {{"a", 8}, {"b", 2}}), Node(10, "sqrt", {{"a", 1}}),
              Node(11, "clamp", {{"a", 10}, {"min", 0.25}, {"max", 1.5}}),
              Node(12, "minimum", {{"a", 1}, {"b", 2}}), Node(13, "sub", {{"a", 11}, {"b", 12}}),
              Node(14, "where", {{"cond", 7}, {"a", 9}, {"b", 13}}),
              // gelu(a) * sigmoid(b) + tanh(exp(c) - log(b))
              Node(15, "gelu", {{"a", 0}}), Node(16, "sigmoid", {{"a", 1}}),
              Node(17, "mul", {{"a", 15}, {"b", 16}}), Node(18, "exp", {{"a", 2}}),
              Node(19, "log", {{"a", 1}}), Node(20, "sub", {{"a", 18}, {"b", 19}}),
              Node(21, "tanh", {{"a", 20}}), Node(22, "add", {{"a", 17}, {"b", 21}})},
             {6, 14, 22});
}

TEST(ElementwiseVec4, RaggedSizesMatchTheReferenceAndTheScalarKernelBitForBit) {
  const unsigned seed = FreshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // 4k elements with k over 1024 / 4 vectors: a 256-wide workgroup's invocations loop.
  const int64_t k = std::uniform_int_distribution<int64_t>(300, 600)(rng);
  for (int64_t n = 4 * k; n < 4 * k + 4; ++n) {
    for (bool subnormals : {false, true}) {
      SCOPED_TRACE("n " + std::to_string(n) + (subnormals ? " with subnormals" : ""));
      Feeds feeds;
      for (const char* name : {"a", "b", "c"})
        feeds[name] = Tensor({n}, DType::kF32, RandomFloats(n, rng, subnormals));
      Runs r = RunAll(F32Chains(n), feeds);
      ASSERT_EQ(r.reference.outputs.size(), 3u);
      for (int node : {6, 14, 22}) EXPECT_EQ(WidthOf(r.wide, node), n % 4 == 0 ? 4 : 1) << node;
      for (size_t o = 0; o < 3; ++o) {
        const std::string what = r.reference.outputs[o].first;
        ExpectSameBits(r.gpu_wide.outputs[o].second, r.gpu_scalar.outputs[o].second,
                       what + " wide vs scalar");
        if (o < 2 && !subnormals)
          ExpectSameBits(r.gpu_wide.outputs[o].second, r.reference.outputs[o].second,
                         what + " wide vs reference", true);
      }
    }
  }
}

// Every way a wide kernel covers its output: chunks of workgroup size x vectors per invocation,
// whole or the last one partial, and more chunks than one grid
// dimension holds (a workgroup of one invocation over 65 536 + vectors: workgroup 0 takes chunk
// 65 535 too). Each equals the reference's relu(a * b + c) * 0.5, which is exact in IEEE
// arithmetic, bit for bit.
TEST(ElementwiseVec4, EveryChunkingOfTheOutputGivesTheReferencesBits) {
  const unsigned seed = FreshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  WebGpuExecutor* gpu = Gpu();
  ASSERT_NE(gpu, nullptr);
  struct Forced {
    int workgroup_size, per_invocation;
    int64_t vectors;
  };
  const int64_t ragged = std::uniform_int_distribution<int64_t>(700, 900)(rng);
  for (const Forced& f : {Forced{64, 3, ragged}, Forced{32, 5, 32 * 5 * 4}, Forced{1, 1, 65537}}) {
    const int64_t n = 4 * f.vectors;
    SCOPED_TRACE(std::to_string(f.workgroup_size) + "x" + std::to_string(f.per_invocation) +
                 " over " + std::to_string(n));
    const Json doc =
        Doc({Node(0, "input", {{"name", "a"}, {"shape", {n}}}),
             Node(1, "input", {{"name", "b"}, {"shape", {n}}}),
             Node(2, "input", {{"name", "c"}, {"shape", {n}}}),
             Node(3, "mul", {{"a", 0}, {"b", 1}}), Node(4, "add", {{"a", 3}, {"b", 2}}),
             Node(5, "relu", {{"a", 4}}), Node(6, "mul", {{"a", 5}, {"scalar", 0.5}})},
            {6});
    Feeds feeds;
    for (const char* name : {"a", "b", "c"})
      feeds[name] = Tensor({n}, DType::kF32, RandomFloats(n, rng));
    pipeline::CompileOptions o;
    o.lower.tier = policy::Tier::kDebug;
    o.plan.budget_bytes = int64_t{1} << 30;
    o.plan.limits = gpu->limits();
    o.elementwise_schedule =
        ElementwiseSchedule{.workgroup_size = f.workgroup_size, .per_invocation = f.per_invocation};
    auto compiled = pipeline::Compile(doc.dump(), o);
    ASSERT_TRUE(compiled.ok()) << compiled.errors().front().Format();
    const ElementwiseSchedule& used = *compiled->module->kernels.back().elementwise_schedule;
    EXPECT_EQ(used.width, 4);
    EXPECT_EQ(used.workgroup_size, f.workgroup_size);
    EXPECT_EQ(used.per_invocation, f.per_invocation);
    auto got = gpu->Run(*compiled->plan, feeds, {.poison_outputs = true});
    ASSERT_TRUE(got.ok()) << got.errors().front().Format();
    runtime::cpu::CpuExecutor cpu({.threads = 1});
    auto want = cpu.Run(*compiled->plan, feeds);
    ASSERT_TRUE(want.ok());
    ExpectSameBits(got->outputs[0].second, want->outputs[0].second, "vs reference", true);
  }
}

// A matrix [rows, 12] with a row vector [12] (period 12: vectorised), a single element (loaded
// once), and a column [rows, 1] (no whole-vector period: scalar).
TEST(ElementwiseVec4, BroadcastInputsMatchTheReferenceBitForBit) {
  const unsigned seed = FreshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t rows = std::uniform_int_distribution<int64_t>(50, 90)(rng);
  Json doc = Doc({Node(0, "input", {{"name", "x"}, {"shape", {rows, 12}}}),
                  Node(1, "input", {{"name", "row"}, {"shape", {12}}}),
                  Node(2, "input", {{"name", "one"}, {"shape", {1}}}),
                  Node(3, "input", {{"name", "col"}, {"shape", {rows, 1}}}),
                  Node(4, "mul", {{"a", 0}, {"b", 1}}), Node(5, "add", {{"a", 4}, {"b", 2}}),
                  Node(6, "maximum", {{"a", 5}, {"b", 1}}), Node(7, "sub", {{"a", 0}, {"b", 3}})},
                 {6, 7});
  Feeds feeds = {{"x", Tensor({rows, 12}, DType::kF32, RandomFloats(rows * 12, rng))},
                 {"row", Tensor({12}, DType::kF32, RandomFloats(12, rng))},
                 {"one", Tensor({1}, DType::kF32, RandomFloats(1, rng))},
                 {"col", Tensor({rows, 1}, DType::kF32, RandomFloats(rows, rng))}};
  Runs r = RunAll(doc, feeds);
  ASSERT_EQ(r.reference.outputs.size(), 2u);
  EXPECT_EQ(WidthOf(r.wide, 6), 4);
  EXPECT_EQ(WidthOf(r.wide, 7), 1);
  for (size_t o = 0; o < 2; ++o) {
    ExpectSameBits(r.gpu_wide.outputs[o].second, r.reference.outputs[o].second, "vs reference",
                   true);
    ExpectSameBits(r.gpu_wide.outputs[o].second, r.gpu_scalar.outputs[o].second, "vs scalar");
  }
}

// i32 and u32 (wrapping arithmetic, comparisons to bool, casts), bool inputs and outputs.
TEST(ElementwiseVec4, IntegerAndBoolKernelsMatchTheReferenceBitForBit) {
  const unsigned seed = FreshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t n = 4 * std::uniform_int_distribution<int64_t>(200, 400)(rng);
  Json doc =
      Doc({Node(0, "input", {{"name", "i"}, {"shape", {n}}, {"dtype", "i32"}}),
           Node(1, "input", {{"name", "j"}, {"shape", {n}}, {"dtype", "i32"}}),
           Node(2, "input", {{"name", "u"}, {"shape", {n}}, {"dtype", "u32"}}),
           Node(3, "input", {{"name", "m"}, {"shape", {n}}, {"dtype", "bool"}}),
           Node(4, "input", {{"name", "f"}, {"shape", {n}}}),
           // i32: clamp(i * j + 7, -1000, 2^24) where m, else max(i, j)
           Node(5, "mul", {{"a", 0}, {"b", 1}}), Node(6, "add", {{"a", 5}, {"scalar", 7}}),
           Node(7, "clamp", {{"a", 6}, {"min", -1000}, {"max", 16777216}}),
           Node(8, "maximum", {{"a", 0}, {"b", 1}}),
           Node(9, "where", {{"cond", 3}, {"a", 7}, {"b", 8}}),
           // u32: u - cast(f), wrapping
           Node(10, "cast", {{"a", 4}, {"dtype", "u32"}}), Node(11, "sub", {{"a", 2}, {"b", 10}}),
           // bool: i < j, and f cast to bool; u32 masked by a bool
           Node(12, "lt", {{"a", 0}, {"b", 1}}),
           Node(13, "masked_fill", {{"a", 2}, {"mask", 3}, {"value", 4294967295u}}),
           Node(14, "cast", {{"a", 4}, {"dtype", "bool"}}),
           // i32 to f32 (exactly rounded) times f
           Node(15, "cast", {{"a", 0}, {"dtype", "f32"}}), Node(16, "mul", {{"a", 15}, {"b", 4}})},
          {9, 11, 12, 13, 14, 16});
  const double lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  std::vector<double> f = RandomFloats(n, rng);
  for (double& x : f) x *= 1e9;  // past u32's range too
  Feeds feeds = {{"i", Tensor({n}, DType::kI32, RandomInts(n, rng, lo, hi))},
                 {"j", Tensor({n}, DType::kI32, RandomInts(n, rng, lo, hi))},
                 {"u", Tensor({n}, DType::kU32, RandomInts(n, rng, 0, 4294967295.0))},
                 {"m", Tensor({n}, DType::kBool, RandomInts(n, rng, 0, 1))},
                 {"f", Tensor({n}, DType::kF32, f)}};
  Runs r = RunAll(doc, feeds);
  ASSERT_EQ(r.reference.outputs.size(), 6u);
  for (int node : {9, 11, 12, 13, 14, 16}) EXPECT_EQ(WidthOf(r.wide, node), 4) << node;
  for (size_t o = 0; o < 6; ++o) {
    const std::string what = r.reference.outputs[o].first;
    ExpectSameBits(r.gpu_wide.outputs[o].second, r.reference.outputs[o].second, what, true);
    ExpectSameBits(r.gpu_wide.outputs[o].second, r.gpu_scalar.outputs[o].second, what);
  }
}

// Over a 4 KiB binding cap the kernel runs in tiles of 1024 elements, each a window of x and the
// output; every tile is wide, and the row vector, bound whole, is indexed by the element's place
// in the whole output.
TEST(ElementwiseVec4, TilesOverTheBindingCapAreWideAndMatchTheReference) {
  auto gpu = OpenGpu(4096);
  ASSERT_NE(gpu, nullptr);
  const unsigned seed = FreshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  Json doc = Doc(
      {Node(0, "input", {{"name", "x"}, {"shape", {300, 36}}}),
       Node(1, "input", {{"name", "row"}, {"shape", {36}}}), Node(2, "mul", {{"a", 0}, {"b", 1}}),
       Node(3, "relu", {{"a", 2}}), Node(4, "add", {{"a", 3}, {"b", 0}})},
      {4});
  auto c = Compile(doc, *gpu, true);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  EXPECT_EQ(WidthOf(*c, 4), 4);
  ASSERT_FALSE(c->plan->findings.empty());
  EXPECT_EQ(c->plan->findings.front().code, "tiled-binding");
  Feeds feeds = {{"x", Tensor({300, 36}, DType::kF32, RandomFloats(300 * 36, rng))},
                 {"row", Tensor({36}, DType::kF32, RandomFloats(36, rng))}};
  auto got = gpu->Run(*c->plan, feeds, {.poison_outputs = true});
  ASSERT_TRUE(got.ok()) << got.errors().front().Format();
  runtime::cpu::CpuExecutor cpu({.threads = 1});
  auto want = cpu.Run(*c->plan, feeds);
  ASSERT_TRUE(want.ok());
  ExpectSameBits(got->outputs[0].second, want->outputs[0].second, "tiled", true);
}

// sum over sizes around the 4096 elements one pass of the unrolled loop takes (ragged sizes take
// the scalar tree), finite values of mixed signs and magnitudes so that the order of additions
// shows in the bits. mean divides that sum once, which WGSL rounds within 2.5 ulp (and a compiler
// may multiply by the reciprocal): it is held to 3 ulp.
TEST(SumVec4, WholeTensorSumsKeepTheReferencesBits) {
  const unsigned seed = FreshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  const int64_t k = std::uniform_int_distribution<int64_t>(3000, 6000)(rng);
  for (int64_t n :
       {int64_t{4}, int64_t{256}, int64_t{4096}, 4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3}) {
    SCOPED_TRACE("n " + std::to_string(n));
    std::vector<double> x(static_cast<size_t>(n));
    for (double& v : x) v = std::ldexp(u(rng), exponent(rng));
    Json doc = Doc({Node(0, "input", {{"name", "x"}, {"shape", {n}}}), Node(1, "sum", {{"a", 0}}),
                    Node(2, "mean", {{"a", 0}})},
                   {1, 2});
    Runs r = RunAll(doc, {{"x", Tensor({n}, DType::kF32, x)}});
    ASSERT_EQ(r.reference.outputs.size(), 2u);
    ExpectSameBits(r.gpu_wide.outputs[0].second, r.reference.outputs[0].second, "sum");
    const float got = r.gpu_wide.outputs[1].second.view<float>()[0];
    const float want = r.reference.outputs[1].second.view<float>()[0];
    EXPECT_LE(std::fabs(got - want),
              3 * (std::nextafter(std::fabs(want), INFINITY) - std::fabs(want)))
        << got << " vs " << want;
    if (n % 4 == 0)
      for (const Kernel& kernel : r.wide.module->kernels)
        EXPECT_NE(kernel.Wgsl().source.find("array<vec4<f32>>"), std::string::npos);
  }
}

}  // namespace
}  // namespace scellis::kernel::wgsl
