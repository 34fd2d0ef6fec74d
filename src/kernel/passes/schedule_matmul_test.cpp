// schedule-matmul: the schedule each shape gets, and every schedule computing the reference's
// bits on WebGPU (SwiftShader in CI) for ragged edges, folded transposes and broadcast batches.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "kernel/emit/wgsl/codegen.h"
#include "kernel/passes/passes.h"
#include "runtime/backends/select.h"
#include "support/graph.h"

namespace scellis::kernel {
namespace {

MatmulShape Shape(int64_t m, int64_t k, int64_t n, int64_t batches = 1, bool ta = false,
                  bool tb = false) {
  MatmulShape s;
  s.m = m;
  s.k = k;
  s.n = n;
  s.batches = batches;
  s.trans_a = ta;
  s.trans_b = tb;
  return s;
}

// y = a b for inputs a [m, k] and b [k, n], without data (compiled, not run).
Json ProductDoc(int64_t m, int64_t k, int64_t n) {
  return {{"version", 2},
          {"nodes",
           {{{"id", 0}, {"op", "input"}, {"name", "a"}, {"shape", {m, k}}},
            {{"id", 1}, {"op", "input"}, {"name", "b"}, {"shape", {k, n}}},
            {{"id", 2}, {"op", "matmul"}, {"a", 0}, {"b", 1}}}},
          {"outputs", {{{"name", "y"}, {"id", 2}}}}};
}

TEST(ScheduleMatmulPass, ChoosesByWhatFillsTheDevice) {
  // 4096^3: 32 x 32 = 1024 workgroups of 128 x 128 outputs, far more than 132.
  EXPECT_EQ(ChooseMatmulSchedule(Shape(4096, 4096, 4096)).Name(), "128x128x16/8x8/vec4/pf");
  // 2048^2 outputs: 16 x 16 = 256 large tiles, still enough.
  EXPECT_EQ(ChooseMatmulSchedule(Shape(2048, 2048, 2048)).Name(), "128x128x16/8x8/vec4/pf");
  // 1024^2 outputs: 64 large tiles leave part of the device idle; 256 medium ones fill it, with
  // 8 x 8 outputs per invocation where both operands load as vec4, else 4 x 4.
  EXPECT_EQ(ChooseMatmulSchedule(Shape(1024, 1024, 1024)).Name(), "64x64x16/8x8/vec4/pf");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(1024, 1023, 1024)).Name(), "64x64x16/4x4/vec4b");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(1024, 1024, 1023)).Name(), "64x64x16/4x4/vec4a");
  // The MLP's first layer, 64 x 784 x 256: 4 medium tiles; the 16 x 16 kernel gives 64, and with
  // K = 784 it stages K 64 deep.
  // 16 x 16 tiles give the first layer of a batch of 64 only 64 workgroups; 8 x 8 ones give 256.
  EXPECT_EQ(ChooseMatmulSchedule(Shape(64, 784, 256)).Name(), "8x8x64/1x1");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(64, 20, 256)).Name(), "8x8x16/1x1");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(64, 5, 256)).Name(), "8x8x8/1x1");
  // Where neither fills the GPU (4 against 16 workgroups), or 16 x 16 tiles already do.
  EXPECT_EQ(ChooseMatmulSchedule(Shape(64, 256, 10)).Name(), "16x16x64/1x1");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(784, 64, 256)).Name(), "16x16x64/1x1");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(8192, 784, 4096)).Name(), "128x128x16/8x8/vec4/pf");
  // A batch counts: 9 batches of 512^2 outputs are 144 large tiles, 8 batches only 128.
  EXPECT_EQ(ChooseMatmulSchedule(Shape(512, 512, 512, 9)).Name(), "128x128x16/8x8/vec4/pf");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(512, 512, 512, 8)).Name(), "64x64x16/8x8/vec4/pf");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(1, 1, 1)).Name(), "16x16x16/1x1");
}

TEST(ScheduleMatmulPass, TheOneOutputKernelStagesKByItsLength) {
  // Shape(m, k, n): K steps of 16 below 32, of 32 below 64, of 64 from there on.
  EXPECT_EQ(ChooseMatmulSchedule(Shape(64, 31, 10)).Name(), "16x16x16/1x1");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(64, 32, 10)).Name(), "16x16x32/1x1");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(64, 63, 10)).Name(), "16x16x32/1x1");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(64, 64, 10)).Name(), "16x16x64/1x1");
  // Every depth fits WebGPU's guaranteed 16 KiB of workgroup memory (64 x 16 x 2 x 4 = 8 KiB).
  EXPECT_TRUE(MatmulScheduleFits(ChooseMatmulSchedule(Shape(64, 4096, 10)), Shape(64, 4096, 10)));
}

TEST(ScheduleMatmulPass, Vec4LoadsOnlyAlongARowOfMultiplesOf4) {
  // A is read along K, B along N; transposed, A^T along M and B^T along K.
  EXPECT_EQ(ChooseMatmulSchedule(Shape(4096, 4095, 4096)).Name(), "128x128x16/8x8/vec4b/pf");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(4096, 4096, 4095)).Name(), "128x128x16/8x8/vec4a/pf");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(4095, 4096, 4096, 1, true, false)).Name(),
            "128x128x16/8x8/vec4b/pf");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(4096, 4095, 4096, 1, false, true)).Name(),
            "128x128x16/8x8/pf");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(4096, 4096, 4095, 1, true, true)).Name(),
            "128x128x16/8x8/vec4/pf");
}

TEST(ScheduleMatmulPass, PerElementOnlyWhenNoTileFits) {
  EXPECT_EQ(ChooseMatmulSchedule(Shape(3, 0, 4)).Name(), "16x16x16/1x1");  // K = 0 still tiles
  EXPECT_EQ(ChooseMatmulSchedule(Shape(2, 3, 0)).Name(), "per-element");   // nothing to write
  EXPECT_EQ(ChooseMatmulSchedule(Shape(2, 3, 4, 0)).Name(), "per-element");
  // 2^21 rows are 131072 tiles of 16 rows, past 65535 workgroups, but 16384 of 128 rows; 2^24
  // rows are too many even for those.
  EXPECT_EQ(ChooseMatmulSchedule(Shape(int64_t{1} << 24, 4, 4)).Name(), "per-element");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(int64_t{1} << 21, 4, 256)).Name(), "128x128x16/8x8/vec4/pf");
  EXPECT_EQ(ChooseMatmulSchedule(Shape(2, 2, 2, 70000)).Name(), "per-element");
}

TEST(ScheduleMatmulPass, EverySchedulesWorkgroupMemoryFitsWebGpusMinimum) {
  for (const MatmulSchedule* s : {&LargeMatmulSchedule(), &MediumMatmulSchedule(),
                                  &MediumVec4MatmulSchedule(), &SmallMatmulSchedule()}) {
    EXPECT_LE(s->WorkgroupBytes(), 16384) << s->Name();
    EXPECT_LE(s->Invocations(), 256) << s->Name();
    EXPECT_TRUE(
        wgsl::CheckMatmulSchedule(WithVec4Loads(*s, Shape(256, 256, 256)), Shape(256, 256, 256))
            .ok())
        << s->Name();
  }
}

TEST(ScheduleMatmulPass, TheEmitterRefusesAScheduleItCannotRun) {
  MatmulSchedule s = LargeMatmulSchedule();
  s.vec4_a = true;
  EXPECT_FALSE(wgsl::CheckMatmulSchedule(s, Shape(8, 7, 8)).ok());  // rows of 7
  s = LargeMatmulSchedule();
  s.tile_k = 32;  // 32 KiB of tiles
  EXPECT_FALSE(wgsl::CheckMatmulSchedule(s, Shape(8, 8, 8)).ok());
  s = SmallMatmulSchedule();
  s.prefetch = true;  // one output per invocation: no registers to prefetch into
  EXPECT_FALSE(wgsl::CheckMatmulSchedule(s, Shape(8, 8, 8)).ok());
  s = MediumMatmulSchedule();
  s.block_m = 2;  // 2 rows per invocation: not a whole vec4
  EXPECT_FALSE(wgsl::CheckMatmulSchedule(s, Shape(8, 8, 8)).ok());
  s = LargeMatmulSchedule();
  s.tile_m = s.tile_n = 8;  // one invocation: no second half to load B
  const Status one = wgsl::CheckMatmulSchedule(s, Shape(8, 8, 8));
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.errors().front().message.find("one invocation"), std::string::npos);
}

// The schedule is in the plan and its printouts, and the emitted kernel follows it.
TEST(ScheduleMatmulPass, PrintedAndFollowed) {
  const Json doc = ProductDoc(768, 64, 1024);
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  auto c = pipeline::Compile(doc.dump(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  const Kernel& k = c->module->kernels[0];
  ASSERT_TRUE(k.matmul_schedule);
  EXPECT_EQ(k.matmul_schedule->Name(), "64x64x16/8x8/vec4/pf");  // 96 large tiles, 192 medium
  EXPECT_EQ(k.workgroups, (std::array<uint32_t, 3>{16, 12, 1}));
  EXPECT_NE(k.Wgsl().source.find("// matmul 64x64x16/8x8/vec4/pf"), std::string::npos);
  EXPECT_NE(k.Wgsl().source.find("@workgroup_size(8, 8)"), std::string::npos);
  EXPECT_NE(Print(*c->module).find("schedule 64x64x16/8x8/vec4/pf"), std::string::npos);
  EXPECT_EQ(ToJson(*c->module)["kernels"][0]["matmul_schedule"]["tile"], Json({64, 64, 16}));
  EXPECT_NE(execplan::Print(*c->plan).find("schedule 64x64x16/8x8/vec4/pf"), std::string::npos);
  EXPECT_EQ(execplan::ToJson(*c->plan)["steps"][0]["matmul_schedule"], "64x64x16/8x8/vec4/pf");

  o.matmul_schedule = LargeMatmulSchedule();
  o.matmul_schedule->vec4_a = o.matmul_schedule->vec4_b = true;
  c = pipeline::Compile(doc.dump(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  EXPECT_EQ(c->module->kernels[0].matmul_schedule->Name(), "128x128x16/8x8/vec4/pf");
  EXPECT_EQ(c->module->kernels[0].workgroups, (std::array<uint32_t, 3>{8, 6, 1}));
  EXPECT_EQ(ToJson(*c->module)["kernels"][0]["matmul_schedule"]["prefetch"], true);
}

// A register-blocked product of whole tiles (M and N multiples of the tile's, K of its depth) loads
// and stores without bounds; one with a ragged edge along any dimension keeps them. Which bits it
// computes is checked below (EveryMatmulSchedule: 256^3 is whole, the other shapes ragged).
TEST(ScheduleMatmulPass, WholeTilesLoadAndStoreWithoutBounds) {
  auto source = [](int64_t m, int64_t k, int64_t n) {
    pipeline::CompileOptions o = scellis::testing::ProdOptions();
    o.matmul_schedule = LargeMatmulSchedule();
    o.matmul_schedule->vec4_a = o.matmul_schedule->vec4_b = true;
    auto c = pipeline::Compile(ProductDoc(m, k, n).dump(), o);
    EXPECT_TRUE(c.ok()) << c.errors().front().Format();
    EXPECT_EQ(c->module->kernels[0].matmul_schedule->Name(), "128x128x16/8x8/vec4/pf");
    return c->module->kernels[0].Wgsl().source;
  };
  const std::string whole = source(128, 32, 256);
  EXPECT_EQ(whole.find("select("), std::string::npos);
  EXPECT_EQ(whole.find("if (r < "), std::string::npos);
  EXPECT_NE(whole.find("pf_0 = in0["), std::string::npos);
  for (const auto& [m, k, n] :
       {std::array<int64_t, 3>{130, 32, 256}, {128, 36, 256}, {128, 32, 260}}) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    const std::string ragged = source(m, k, n);
    // Each operand's loads are bounded where its own tile is ragged: A's along M or K, B's along
    // K or N.
    EXPECT_EQ(ragged.find("select(vec4<f32>(0.0), in0[") != std::string::npos,
              m % 128 != 0 || k % 16 != 0);
    EXPECT_EQ(ragged.find("select(vec4<f32>(0.0), in1[") != std::string::npos,
              k % 16 != 0 || n % 128 != 0);
    EXPECT_EQ(ragged.find("if (r < ") != std::string::npos, m % 128 != 0 || n % 128 != 0);
  }
}

// With prefetch the first step's tiles are loaded and stored before the loop; each step loads the
// next step's (where there is one) into registers before its multiply-adds, and stores them after
// the barrier that ends its multiply-adds. A's tile is loaded by the first half of the invocations,
// B's by the second, into the same registers. Where no load needs a bound each invocation's load
// coordinates and first source index are computed once, before the loop, and each load adds
// constants and the step's k to them. Which bits it computes: EveryMatmulSchedule.
TEST(ScheduleMatmulPass, PrefetchLoadsTheNextStepBeforeTheMultiplyAdds) {
  const Json doc = ProductDoc(256, 64, 256);
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.matmul_schedule = LargeMatmulSchedule();
  o.matmul_schedule->vec4_a = o.matmul_schedule->vec4_b = true;
  auto c = pipeline::Compile(doc.dump(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  const std::string src = c->module->kernels[0].Wgsl().source;
  const std::string store_b1 = "tile_b[(tile_b_kq + 4u) * 32u + tile_b_qq] = pf_1;";
  const std::string more = "if (t + 16u < 64u) {";
  const size_t declared = src.find("var pf_1 = vec4<f32>(0.0);");
  const size_t hoisted = src.find("let tile_b_src = ");
  const size_t first_fetch = src.find("pf_1 = in1[(tile_b_src + 1024u) / 4u];");
  const size_t first_store = src.find(store_b1);
  const size_t first_barrier = src.find("workgroupBarrier();", first_store);
  const size_t loop = src.find("for (var t = 0u; t < 64u; t = t + 16u)");
  const size_t next = src.find(more, loop);
  const size_t fetched = src.find("pf_1 = in1[(tile_b_src + ((t + 16u) + 4u) * 256u) / 4u];", next);
  const size_t multiply = src.find("acc_0_0 = acc_0_0 + ", fetched);
  const size_t barrier = src.find("workgroupBarrier();", multiply);
  const size_t next_store = src.find(more, barrier);
  const size_t stored = src.find(store_b1, next_store);
  const size_t last_barrier = src.find("workgroupBarrier();", stored);
  const size_t epilogue = src.find("out[", last_barrier);
  for (size_t at : {declared, hoisted, first_fetch, first_store, first_barrier, loop, next, fetched,
                    multiply, barrier, next_store, stored, last_barrier, epilogue})
    ASSERT_NE(at, std::string::npos) << src;
  EXPECT_LT(declared, hoisted);
  EXPECT_LT(hoisted, first_fetch);
  EXPECT_LT(first_fetch, first_store);
  EXPECT_LT(first_barrier, loop);
  // Nothing but the multiply-adds between the step's loads and its barrier.
  EXPECT_EQ(src.find("workgroupBarrier();", loop), barrier);
  EXPECT_LT(barrier, src.find("] = pf_", loop));
  EXPECT_LT(stored, last_barrier);
  // 128 x 16 of A is 128 blocks of 4 x 4, one for each of the first 128 invocations (four rows);
  // 16 x 128 of B is 512 quads, four for each of the other 128: four registers each.
  const size_t a_half = src.find("    if (tid < 128u) {\n");
  ASSERT_NE(a_half, std::string::npos);
  EXPECT_LT(a_half, src.find("    } else {\n", a_half));
  EXPECT_EQ(src.find("tid >= "), std::string::npos);
  EXPECT_NE(src.find("let tile_b_kq = (tid - 128u) / 32u;"), std::string::npos);
  EXPECT_NE(src.find("tile_b[(tile_b_kq + 12u) * 32u + tile_b_qq] = pf_3;"), std::string::npos);
  EXPECT_NE(src.find("var pf_3 = vec4<f32>(0.0);"), std::string::npos);
  EXPECT_EQ(src.find("var pf_4"), std::string::npos);
  // A block's row r is r rows of A (64 floats) on from its first; the first step's loads add
  // constants only.
  EXPECT_NE(src.find("let tile_a_src = off_a + (row0 + tile_a_qb * 4u) * 64u + tile_a_kb;"),
            std::string::npos);
  EXPECT_NE(src.find("pf_1 = in0[(tile_a_src + 64u + (t + 16u)) / 4u];"), std::string::npos);
  EXPECT_NE(src.find("pf_3 = in1[(tile_b_src + 3072u) / 4u];"), std::string::npos);
  EXPECT_EQ(src.find("let e = "), std::string::npos);

  // A product ragged in one operand bounds that operand's loads, each computed from its unit's
  // number in the step, and hoists neither operand's; each step stores the registers, waits, then
  // loads the next step (hoisting without loads first, or loads first without hoisting, measured
  // slower).
  c = pipeline::Compile(ProductDoc(200, 64, 256).dump(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  const std::string ragged = c->module->kernels[0].Wgsl().source;
  EXPECT_EQ(ragged.find("_src"), std::string::npos);
  EXPECT_NE(ragged.find("let e = (tid - 128u) + 384u;"), std::string::npos);
  const size_t ragged_loop = ragged.find("for (var t = 0u;");
  const size_t ragged_store = ragged.find("] = pf_", ragged_loop);
  const size_t ragged_barrier = ragged.find("workgroupBarrier();", ragged_loop);
  const size_t ragged_fetch = ragged.find("pf_0 = ", ragged_loop);
  ASSERT_NE(ragged_fetch, std::string::npos) << ragged;
  EXPECT_LT(ragged_store, ragged_barrier);
  EXPECT_LT(ragged_barrier, ragged_fetch);
  EXPECT_LT(ragged_fetch, ragged.find("acc_0_0 = acc_0_0 + ", ragged_loop));

  o.matmul_schedule->prefetch = false;
  c = pipeline::Compile(doc.dump(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  EXPECT_EQ(c->module->kernels[0].Wgsl().source.find("pf_"), std::string::npos);
}

// ---- every schedule against the CPU reference, on WebGPU ----

struct Case {
  std::string name;
  std::vector<int64_t> a, b;  // the operands as stored (a transposed one before its transpose)
  bool ta = false, tb = false;
};

std::vector<float> Random(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

Json CaseDoc(const Case& c, std::mt19937& rng) {
  auto count = [](const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  };
  Json nodes = {{{"id", 0},
                 {"op", "input"},
                 {"name", "a"},
                 {"shape", c.a},
                 {"data", Random(count(c.a), rng)}},
                {{"id", 1},
                 {"op", "input"},
                 {"name", "b"},
                 {"shape", c.b},
                 {"data", Random(count(c.b), rng)}}};
  int a = 0, b = 1, id = 2;
  if (c.ta) {
    nodes.push_back({{"id", id}, {"op", "transpose"}, {"a", a}});
    a = id++;
  }
  if (c.tb) {
    nodes.push_back({{"id", id}, {"op", "transpose"}, {"a", b}});
    b = id++;
  }
  nodes.push_back({{"id", id}, {"op", "matmul"}, {"a", a}, {"b", b}});
  return {{"version", 2}, {"nodes", nodes}, {"outputs", {{{"name", "y"}, {"id", id}}}}};
}

// Every case of one schedule compiles its own pipeline, and SwiftShader compiles the register-
// blocked schedules slowly (about a second each). So those see each shape read one way, the four
// ways (plain, A transposed, B transposed, both) spread over the four shapes; the cheap schedules
// see every shape every way.
std::vector<Case> Cases(bool every_way) {
  std::vector<Case> cases;
  // 256^3 (whole tiles of every schedule) plainly only, as SwiftShader takes long over it.
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {129, 65, 33}, {33, 20, 68}};
  for (int i = 0; i < 4; ++i) {
    const int64_t M = shapes[i][0], K = shapes[i][1], N = shapes[i][2];
    const std::string mkn = std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N);
    const Case ways[] = {{mkn, {M, K}, {K, N}},
                         {"at_" + mkn, {K, M}, {K, N}, true, false},
                         {"bt_" + mkn, {M, K}, {N, K}, false, true},
                         {"at_bt_" + mkn, {K, M}, {N, K}, true, true}};
    for (int way = 0; way < 4; ++way)
      if (every_way || way == i) cases.push_back(ways[way]);
  }
  cases.push_back({"256x256x256", {256, 256}, {256, 256}});
  // Whole tiles of the large schedules with both operands transposed: their hoisted loads step
  // along M for A^T and along K for B^T.
  cases.push_back({"at_bt_128x32x128", {32, 128}, {128, 32}, true, true});
  cases.push_back({"batched_3x20x36x12", {3, 20, 36}, {3, 36, 12}});
  cases.push_back({"bcast_b_4x9x7x5", {4, 9, 7}, {7, 5}});
  cases.push_back({"bcast_both_3x1_1x4_17x8x12", {3, 1, 17, 8}, {1, 4, 8, 12}});
  return cases;
}

std::vector<MatmulSchedule> ForcedSchedules() {
  MatmulSchedule per_element;
  per_element.kind = MatmulSchedule::Kind::kPerElement;
  MatmulSchedule large_vec4 = LargeMatmulSchedule(), medium_vec4 = MediumMatmulSchedule();
  large_vec4.vec4_a = large_vec4.vec4_b = medium_vec4.vec4_a = medium_vec4.vec4_b = true;
  // 8 x 8 blocks loaded at once, without prefetch (the large schedule before 2026-12-06).
  MatmulSchedule at_once = large_vec4;
  at_once.tile_m = 64;
  at_once.prefetch = false;
  MatmulSchedule medium_8x8 = MediumVec4MatmulSchedule();
  medium_8x8.vec4_a = medium_8x8.vec4_b = true;
  return {SmallMatmulSchedule(),
          MediumMatmulSchedule(),
          medium_vec4,
          medium_8x8,
          LargeMatmulSchedule(),
          large_vec4,
          at_once,
          per_element};
}

class EveryMatmulSchedule : public ::testing::TestWithParam<int> {};

TEST_P(EveryMatmulSchedule, ComputesTheReferencesBitsOnWebGpu) {
  if (!std::getenv("VK_ICD_FILENAMES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  auto gpu = runtime::SelectBackend({.requested = "webgpu", .allow_software_adapter = true});
  ASSERT_TRUE(gpu.ok()) << gpu.errors().front().Format();
  runtime::cpu::CpuExecutor cpu({.threads = 1});
  const MatmulSchedule forced = ForcedSchedules()[GetParam()];
  std::mt19937 rng(13 + GetParam());
  const bool register_blocked =
      forced.kind != MatmulSchedule::Kind::kPerElement && forced.block_m * forced.block_n > 1;
  int checked = 0;  // cases run under the schedule (none skipped past it)
  for (const Case& c : Cases(/*every_way=*/!register_blocked)) {
    SCOPED_TRACE(c.name + " under " + forced.Name());
    pipeline::CompileOptions o = scellis::testing::ProdOptions();
    o.lower.tier = policy::Tier::kDebug;
    o.matmul_schedule = forced;
    auto compiled = pipeline::Compile(CaseDoc(c, rng).dump(), o);
    ASSERT_TRUE(compiled.ok()) << compiled.errors().front().Format();
    const MatmulSchedule& used = *compiled->module->kernels.back().matmul_schedule;
    // The 8 x 8 medium tiles run only where both operands load as vec4 (ChooseMatmulSchedule):
    // with scalar loads a software adapter's compiler takes minutes and gigabytes over them.
    if (used.tile_m == 64 && used.tile_n == 64 && used.block_m == 8 &&
        !(used.vec4_a && used.vec4_b))
      continue;
    // Forced as asked, vec4 loads dropped where a row's length rules them out.
    EXPECT_EQ(used.tile_m, forced.tile_m);
    EXPECT_EQ(used.block_m, forced.block_m);
    EXPECT_EQ(used.kind, forced.kind);
    EXPECT_EQ(used.prefetch, forced.prefetch);
    auto want = cpu.Run(*compiled->plan, {});
    ASSERT_TRUE(want.ok()) << want.errors().front().Format();
    auto got = gpu->executor->Run(*compiled->plan, {});
    ASSERT_TRUE(got.ok()) << got.errors().front().Format();
    const runtime::HostTensor& w = want->outputs.front().second;
    const runtime::HostTensor& g = got->outputs.front().second;
    ASSERT_EQ(w.bytes.size(), g.bytes.size());
    const std::vector<float> wf = w.ToFloats(), gf = g.ToFloats();
    int64_t differ = 0, first = -1;
    for (size_t i = 0; i < wf.size(); ++i)
      if (std::memcmp(&wf[i], &gf[i], sizeof(float)) != 0 && differ++ == 0) first = i;
    EXPECT_EQ(differ, 0) << "first at " << first << ": " << (first >= 0 ? wf[first] : 0.f)
                         << " want, " << (first >= 0 ? gf[first] : 0.f) << " got";
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

// A forced schedule may take more than WebGPU's guaranteed 16 KiB of workgroup memory only on a
// device that offers it: refused (the plan's own choice kept) under 16 KiB, followed on the
// selected adapter when its limit allows, with the reference's bits.
TEST(ScheduleMatmulPass, WorkgroupMemoryPastSixteenKibOnlyWhereTheDeviceHasIt) {
  MatmulSchedule wide = LargeMatmulSchedule();
  wide.tile_k = 32;  // 128x32 + 32x128 floats: 32 KiB
  wide.vec4_a = wide.vec4_b = true;
  ASSERT_EQ(wide.WorkgroupBytes(), 32768);
  EXPECT_FALSE(wgsl::CheckMatmulSchedule(wide, Shape(256, 256, 256)).ok());
  EXPECT_TRUE(wgsl::CheckMatmulSchedule(wide, Shape(256, 256, 256), 32768).ok());

  std::mt19937 rng(29);
  const Case c{"130x72x260", {130, 72}, {72, 260}};
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.lower.tier = policy::Tier::kDebug;
  o.matmul_schedule = wide;
  const Json doc = CaseDoc(c, rng);
  auto guaranteed = pipeline::Compile(doc.dump(), o);
  ASSERT_TRUE(guaranteed.ok()) << guaranteed.errors().front().Format();
  EXPECT_NE(guaranteed->module->kernels.back().matmul_schedule->tile_k, 32);

  if (!std::getenv("VK_ICD_FILENAMES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  auto gpu = runtime::SelectBackend({.requested = "webgpu", .allow_software_adapter = true});
  ASSERT_TRUE(gpu.ok()) << gpu.errors().front().Format();
  if (gpu->limits.max_workgroup_storage_bytes < 32768)
    GTEST_SKIP() << "the adapter offers " << gpu->limits.max_workgroup_storage_bytes
                 << " bytes of workgroup memory";
  o.plan.limits = gpu->limits;
  auto compiled = pipeline::Compile(doc.dump(), o);
  ASSERT_TRUE(compiled.ok()) << compiled.errors().front().Format();
  EXPECT_EQ(compiled->module->kernels.back().matmul_schedule->Name(), "128x128x32/8x8/vec4/pf");
  runtime::cpu::CpuExecutor cpu({.threads = 1});
  auto want = cpu.Run(*compiled->plan, {});
  ASSERT_TRUE(want.ok()) << want.errors().front().Format();
  auto got = gpu->executor->Run(*compiled->plan, {});
  ASSERT_TRUE(got.ok()) << got.errors().front().Format();
  EXPECT_EQ(want->outputs.front().second.bytes, got->outputs.front().second.bytes);
}

INSTANTIATE_TEST_SUITE_P(Schedules, EveryMatmulSchedule, ::testing::Range(0, 7),
                         [](const ::testing::TestParamInfo<int>& p) {
                           std::string n = ForcedSchedules()[p.param].Name();
                           for (char& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace scellis::kernel
