// What a WebGPU run costs, counted: identical kernels share one pipeline, and a run makes one
// submission and one staging map however many outputs it reads back. On SwiftShader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "pipeline/compile.h"
#include "runtime/backends/webgpu/executor.h"

namespace scellis::runtime::webgpu {
namespace {

// A fresh device each time: its pipeline cache starts empty.
std::unique_ptr<WebGpuExecutor> FreshGpu() {
  if (!std::getenv("VK_ICD_FILENAMES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  auto d = Device::Open({.allow_software_adapter = true});
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.errors().front().message);
  return d.ok() ? std::make_unique<WebGpuExecutor>(std::move(d.value())) : nullptr;
}

execplan::Plan PlanFor(const Json& doc, const Executor& exec) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kProd;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits = exec.limits();
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.errors().front().Format());
  return *c->plan;
}

TEST(WebGpuRunStats, SixtyFourUnrolledLifeStepsCompileOnePipeline) {
  auto gpu = FreshGpu();
  ASSERT_NE(gpu, nullptr);
  // A glider on a 16 x 16 torus: it moves one cell diagonally every 4 generations, so after 64 it
  // is back where it started.
  const int n = 16;
  std::vector<float> grid(n * n, 0.0f);
  for (auto [r, c] : {std::pair{0, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}}) grid[r * n + c] = 1.0f;
  Json nodes = Json::array();
  nodes.push_back(
      {{"id", 0}, {"op", "input"}, {"name", "grid"}, {"shape", {n, n}}, {"data", grid}});
  for (int g = 1; g <= 64; ++g) nodes.push_back({{"id", g}, {"op", "life"}, {"a", g - 1}});
  Json doc = {{"version", 1}, {"nodes", nodes}, {"outputs", {{{"name", "gen64"}, {"id", 64}}}}};
  execplan::Plan plan = PlanFor(doc, *gpu);
  ASSERT_EQ(plan.module().kernels.size(), 64u);

  auto r = gpu->Run(plan, {});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  // The 64 kernels have one source, so the device program lists one pipeline for them and the
  // device is asked for it once.
  EXPECT_EQ(r->stats["pipelines_compiled"].get<int>(), 1);
  EXPECT_EQ(r->stats["pipeline_cache_hits"].get<int>(), 0);
  EXPECT_EQ(r->stats["dispatches"].get<int>(), 64);
  EXPECT_EQ(r->outputs.at(0).second.ToFloats(), grid);
  // A second run of the plan compiles nothing: the device's cache has the pipeline.
  auto again = gpu->Run(plan, {});
  ASSERT_TRUE(again.ok()) << again.errors().front().Format();
  EXPECT_EQ(again->stats["pipelines_compiled"].get<int>(), 0);
  EXPECT_EQ(again->stats["pipeline_cache_hits"].get<int>(), 1);
  EXPECT_EQ(again->outputs.at(0).second.ToFloats(), grid);
}

TEST(WebGpuRunStats, ThreeOutputsOneSubmissionOneMap) {
  auto gpu = FreshGpu();
  ASSERT_NE(gpu, nullptr);
  Json doc = {
      {"version", 2},
      {"nodes",
       {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {5}}, {"data", {1, -2, 3, -4, 5}}},
        {{"id", 1},
         {"op", "input"},
         {"name", "y"},
         {"shape", {7, 3}},
         {"data", std::vector<float>(21, 0.5f)}},
        {{"id", 2}, {"op", "relu"}, {"a", 0}},
        {{"id", 3}, {"op", "neg"}, {"a", 1}},
        {{"id", 4}, {"op", "sum"}, {"a", 1}}}},
      {"outputs",
       {{{"name", "r"}, {"id", 2}}, {{"name", "n"}, {"id", 3}}, {{"name", "s"}, {"id", 4}}}}};
  execplan::Plan plan = PlanFor(doc, *gpu);
  auto r = gpu->Run(plan, {});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(r->stats["submissions"].get<int>(), 1);
  EXPECT_EQ(r->stats["maps"].get<int>(), 1);
  EXPECT_EQ(r->stats["readback_bytes"].get<int>(), (5 + 21 + 1) * 4);
  ASSERT_EQ(r->outputs.size(), 3u);
  EXPECT_EQ(r->outputs[0].second.ToFloats(), (std::vector<float>{1, 0, 3, 0, 5}));
  EXPECT_EQ(r->outputs[1].second.ToFloats(), std::vector<float>(21, -0.5f));
  EXPECT_EQ(r->outputs[2].second.ToFloats(), std::vector<float>{10.5f});

  // A prepared session of several steps sends them in chunks of 1, 1, 2, ... steps as they are
  // recorded (here 1, 1, 2 and 1), and reads every step's history back with one map.
  auto p = gpu->Prepare(plan);
  ASSERT_TRUE(p.ok());
  auto steps = p.value()->RunSteps(std::vector<Feeds>(5), {"r", "n", "s"});
  ASSERT_TRUE(steps.ok()) << steps.errors().front().Format();
  EXPECT_EQ(steps->stats["submissions"].get<int>(), 4);
  EXPECT_EQ(steps->stats["maps"].get<int>(), 1);
  // Each value's kernel writes it into its own slot of the history (the next test), so each slot
  // starts where the adapter can bind it.
  const auto& limits = gpu->device().info().limits;
  const uint64_t align = std::max(
      {limits.min_storage_buffer_offset_alignment, limits.min_uniform_buffer_offset_alignment, 4u});
  const auto slot = [&](uint64_t bytes) { return (bytes + align - 1) / align * align; };
  EXPECT_EQ(steps->stats["readback_bytes"].get<uint64_t>(),
            5 * (slot(5 * 4) + slot(21 * 4) + slot(4)));
  EXPECT_EQ(steps->watched[2].second[4].ToFloats(), std::vector<float>{10.5f});
  // A run started behind another finds the GPU busy with it: its steps go in chunks of 8 from the
  // first, so its 5 steps are one submission (the run before it: 1, 1, 2, 1).
  ASSERT_TRUE(p.value()->StartSteps(std::vector<Feeds>(5), {"r"}).ok());
  ASSERT_TRUE(p.value()->StartSteps(std::vector<Feeds>(5), {"r"}).ok());
  auto first = p.value()->FinishSteps();
  auto behind = p.value()->FinishSteps();
  ASSERT_TRUE(first.ok() && behind.ok());
  EXPECT_EQ(first->stats["submissions"].get<int>(), 4);
  EXPECT_EQ(behind->stats["submissions"].get<int>(), 1);
  EXPECT_EQ(behind->stats["overlapped_runs"].get<int>(), 1);
  EXPECT_EQ(behind->watched[0].second[4].ToFloats(), (std::vector<float>{1, 0, 3, 0, 5}));
  // A run that watches nothing still returns only once the GPU has run it: it waits for the
  // queue (there is no read-back to wait for), so timing a run times the GPU's work.
  const uint64_t waits_before = gpu->device().stats().waits;
  auto unwatched = p.value()->RunSteps(std::vector<Feeds>(3), {});
  ASSERT_TRUE(unwatched.ok()) << unwatched.errors().front().Format();
  EXPECT_EQ(gpu->device().stats().waits, waits_before + 1);
  // The host's part of the run, split: setup, sending chunks, writing feeds, recording. Each is a
  // time of its own, and together they are the whole.
  double parts = 0;
  for (const char* key : {"host_setup_ms", "host_send_ms", "host_feed_ms", "host_encode_ms"}) {
    ASSERT_TRUE(steps->stats.contains(key)) << key;
    EXPECT_GE(steps->stats[key].get<double>(), 0.0) << key;
    parts += steps->stats[key].get<double>();
  }
  const double whole = steps->stats["host_record_ms"].get<double>();
  EXPECT_NEAR(parts, whole, 1e-6 + 1e-9 * whole);
  EXPECT_LE(whole, steps->stats["wall_ms"].get<double>());
}

// A watched value that its kernel computes into a buffer of its own is written straight into its
// slot of the run's history in every step but the last: no copy between the step's dispatches.
// The last step's value stays in its buffer, where a download after the run reads it. A carried
// value (its buffer swaps with its input's after each step) is still copied, every step.
TEST(WebGpuRunStats, WatchedValuesAreWrittenIntoTheirHistorySlots) {
  auto gpu = FreshGpu();
  ASSERT_NE(gpu, nullptr);
  Json doc = {{"version", 1},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {3}}},
                {{"id", 1},
                 {"op", "input"},
                 {"name", "acc"},
                 {"shape", {3}},
                 {"data", {0, 0, 0}},
                 {"carry", "total"}},
                {{"id", 2}, {"op", "add"}, {"a", 1}, {"b", 0}},
                {{"id", 3}, {"op", "mul"}, {"a", 2}, {"b", 2}},
                {{"id", 4}, {"op", "sum"}, {"a", 2}},
                {{"id", 5}, {"op", "sum"}, {"a", 3}}}},
              {"outputs",
               {{{"name", "total"}, {"id", 2}},
                {{"name", "square"}, {"id", 3}},
                {{"name", "s"}, {"id", 4}},
                {{"name", "q"}, {"id", 5}}}}};
  execplan::Plan plan = PlanFor(doc, *gpu);
  auto p = gpu->Prepare(plan);
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  // Small whole numbers, so every sum and square is exact in f32.
  std::mt19937 rng(20261205);
  std::uniform_int_distribution<int> draw(-9, 9);
  const int steps = 5;
  std::vector<Feeds> feeds(steps);
  std::vector<std::vector<float>> xs(steps, std::vector<float>(3));
  for (int k = 0; k < steps; ++k) {
    for (float& v : xs[k]) v = static_cast<float>(draw(rng));
    feeds[k]["x"] = HostTensor::FromFloats(MakeType({3}), xs[k]);
  }
  // The accumulator carries over from run to run: each step's total, for the steps fed xs[first..).
  std::vector<double> acc(3, 0.0);
  const auto totals_of = [&](int first, int count) {
    std::vector<std::vector<double>> total(count, std::vector<double>(3));
    for (int k = 0; k < count; ++k)
      for (int i = 0; i < 3; ++i) total[k][i] = acc[i] += xs[first + k][i];
    return total;
  };
  std::vector<std::vector<double>> total = totals_of(0, steps);
  auto r = p.value()->RunSteps(feeds, {"total", "square", "s"});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  for (int k = 0; k < steps; ++k) {
    std::vector<float> want_total, want_square;
    double want_sum = 0;
    for (double t : total[k]) {
      want_total.push_back(static_cast<float>(t));
      want_square.push_back(static_cast<float>(t * t));
      want_sum += t;
    }
    EXPECT_EQ(r->watched[0].second[k].ToFloats(), want_total) << "step " << k;
    EXPECT_EQ(r->watched[1].second[k].ToFloats(), want_square) << "step " << k;
    EXPECT_EQ(r->watched[2].second[k].ToFloats(), std::vector<float>{float(want_sum)}) << k;
  }
  // The carried total is copied in each of the 5 steps; the square and the sum in the last only.
  EXPECT_EQ(r->stats["copies"].get<int>(), steps + 2);
  auto square = p.value()->Download("square");
  ASSERT_TRUE(square.ok()) << square.errors().front().Format();
  EXPECT_EQ(square->ToFloats(), r->watched[1].second[steps - 1].ToFloats());
  // A run of one step copies each watched value, as before.
  auto one = p.value()->RunSteps({feeds[0]}, {"square", "s"});
  ASSERT_TRUE(one.ok()) << one.errors().front().Format();
  EXPECT_EQ(one->stats["copies"].get<int>(), 2);
  totals_of(0, 1);
  // The dispatch that writes q reads the square: a dispatch may not bind the history both as
  // read-only and as writable, so q is copied in every step.
  auto both = p.value()->RunSteps(feeds, {"square", "q"});
  ASSERT_TRUE(both.ok()) << both.errors().front().Format();
  total = totals_of(0, steps);
  for (int k = 0; k < steps; ++k) {
    double want = 0;
    for (double t : total[k]) want += t * t;
    EXPECT_EQ(both->watched[1].second[k].ToFloats(), std::vector<float>{float(want)}) << k;
  }
  EXPECT_EQ(both->stats["copies"].get<int>(), 1 + steps);
}

// Profiling by leaving dispatches out (RunOptions::leave_out_dispatches): the run records every
// step without them, says so in its stats, and what the left-out kernel writes is not written.
TEST(WebGpuRunStats, DispatchesLeftOutAreNotRecorded) {
  auto gpu = FreshGpu();
  ASSERT_NE(gpu, nullptr);
  // Two kernels: y = x + 1 (elementwise), then s = sum(y).
  Json doc = {{"version", 1},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {4}}},
                {{"id", 1}, {"op", "full"}, {"shape", {4}}, {"value", 1}},
                {{"id", 2}, {"op", "add"}, {"a", 0}, {"b", 1}},
                {{"id", 3}, {"op", "sum"}, {"a", 2}}}},
              {"outputs", {{{"name", "y"}, {"id", 2}}, {{"name", "s"}, {"id", 3}}}}};
  execplan::Plan plan = PlanFor(doc, *gpu);
  std::mt19937 rng(20261206);
  std::uniform_int_distribution<int> draw(-9, 9);
  const int steps = 3;
  std::vector<Feeds> feeds(steps);
  std::vector<std::vector<float>> xs(steps, std::vector<float>(4));
  for (int k = 0; k < steps; ++k) {
    for (float& v : xs[k]) v = static_cast<float>(draw(rng));
    // Every step's sum differs from the others' and is above 0, which the never-written sum
    // (a fresh buffer, cleared) reads.
    xs[k][0] = static_cast<float>(40 + k);
    feeds[k]["x"] = HostTensor::FromFloats(MakeType({4}), xs[k]);
  }
  auto whole = gpu->Prepare(plan);
  ASSERT_TRUE(whole.ok()) << whole.errors().front().Format();
  auto all = whole.value()->RunSteps(feeds, {"y", "s"});
  ASSERT_TRUE(all.ok()) << all.errors().front().Format();
  const int dispatches = all->stats["dispatches"].get<int>() / steps;
  ASSERT_EQ(dispatches, 2);
  EXPECT_FALSE(all->stats.contains("left_out_dispatches"));

  // The sum (dispatch 1) left out: y is each step's x + 1, s is never written, so it reads the
  // same in every step and is no step's sum.
  auto without_sum = gpu->Prepare(plan, {}, {.leave_out_dispatches = {1}});
  ASSERT_TRUE(without_sum.ok()) << without_sum.errors().front().Format();
  auto r = without_sum.value()->RunSteps(feeds, {"y", "s"});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(r->stats["dispatches"].get<int>(), steps);
  EXPECT_EQ(r->stats["left_out_dispatches"], Json::array({1}));
  for (int k = 0; k < steps; ++k) {
    std::vector<float> y;
    double sum = 0;
    for (float v : xs[k]) {
      y.push_back(v + 1);
      sum += v + 1;
    }
    EXPECT_EQ(r->watched[0].second[k].ToFloats(), y) << "step " << k;
    EXPECT_EQ(all->watched[1].second[k].ToFloats(), std::vector<float>{float(sum)}) << k;
    EXPECT_NE(r->watched[1].second[k].ToFloats(), std::vector<float>{float(sum)}) << k;
    EXPECT_EQ(r->watched[1].second[k].bytes, r->watched[1].second[0].bytes) << k;
  }
  // An index past the program's dispatches is refused when the plan is prepared.
  auto past = gpu->Prepare(plan, {}, {.leave_out_dispatches = {2}});
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.errors().front().message.find("dispatch 2 is left out"), std::string::npos);
}

// A run's small fed inputs share one record per step, written once per chunk of steps (a write is
// a copy the GPU runs behind a barrier of its own); a large one is written step by step. Each
// step still reads its own feeds.
TEST(WebGpuRunStats, SmallFedInputsAreWrittenOnceAChunk) {
  auto gpu = FreshGpu();
  ASSERT_NE(gpu, nullptr);
  const int wide = 1100;  // 4 400 bytes: over the record's 4 096
  Json doc = {{"version", 1},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {3}}},
                {{"id", 1}, {"op", "input"}, {"name", "t"}, {"shape", Json::array()}},
                {{"id", 2}, {"op", "input"}, {"name", "z"}, {"shape", {wide}}},
                {{"id", 3}, {"op", "mul"}, {"a", 0}, {"b", 1}},
                {{"id", 4}, {"op", "sum"}, {"a", 2}}}},
              {"outputs", {{{"name", "u"}, {"id", 3}}, {{"name", "s"}, {"id", 4}}}}};
  execplan::Plan plan = PlanFor(doc, *gpu);
  auto p = gpu->Prepare(plan);
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  // Small whole numbers: every product and sum is exact in f32.
  std::mt19937 rng(20261206);
  std::uniform_int_distribution<int> draw(-9, 9);
  const int steps = 8;
  std::vector<Feeds> feeds(steps);
  std::vector<std::vector<float>> xs(steps, std::vector<float>(3)),
      zs(steps, std::vector<float>(wide));
  std::vector<float> ts(steps);
  for (int k = 0; k < steps; ++k) {
    for (float& v : xs[k]) v = static_cast<float>(draw(rng));
    for (float& v : zs[k]) v = static_cast<float>(draw(rng));
    ts[k] = static_cast<float>(draw(rng));
    feeds[k]["x"] = HostTensor::FromFloats(MakeType({3}), xs[k]);
    feeds[k]["t"] = HostTensor::FromFloats(MakeType({}), {&ts[k], 1});
    feeds[k]["z"] = HostTensor::FromFloats(MakeType({wide}), zs[k]);
  }
  auto r = p.value()->RunSteps(feeds, {"u", "s"});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  for (int k = 0; k < steps; ++k) {
    std::vector<float> u;
    for (float v : xs[k]) u.push_back(static_cast<float>(double{v} * ts[k]));
    double s = 0;
    for (float v : zs[k]) s += v;
    EXPECT_EQ(r->watched[0].second[k].ToFloats(), u) << "step " << k;
    EXPECT_EQ(r->watched[1].second[k].ToFloats(), std::vector<float>{float(s)}) << "step " << k;
  }
  // A run alone sends its steps in chunks of 1, 1, 2 and 4: x's and t's records once a chunk,
  // z once a step (24 writes when each input took a write a step).
  EXPECT_EQ(r->stats["writes"].get<int>(), 4 + steps);
}

TEST(WebGpuRunStats, ASecondProcessOfTheSameRunReadsTheKernelCache) {
  // Two devices over one store stand for two processes: the second compiles from the cache.
  std::random_device rd;
  const std::filesystem::path store =
      std::filesystem::temp_directory_path() / ("scellis-run-stats-cache-" + std::to_string(rd()));
  std::mt19937 rng(rd());
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> x(37);
  for (float& v : x) v = dist(rng);
  Json doc = {{"version", 2},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {37}}, {"data", x}},
                {{"id", 1}, {"op", "relu"}, {"a", 0}}}},
              {"outputs", {{{"name", "r"}, {"id", 1}}}}};
  std::vector<float> want;
  for (float v : x) want.push_back(v > 0 ? v : 0.0f);
  Json cache[2];
  for (Json& c : cache) {
    if (!std::getenv("VK_ICD_FILENAMES"))
      setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
    auto d = Device::Open({.allow_software_adapter = true, .kernel_cache_store = store.string()});
    ASSERT_TRUE(d.ok()) << d.errors().front().message;
    WebGpuExecutor gpu(std::move(d.value()));
    auto r = gpu.Run(PlanFor(doc, gpu), {});
    ASSERT_TRUE(r.ok()) << r.errors().front().Format();
    EXPECT_EQ(r->outputs.at(0).second.ToFloats(), want);
    EXPECT_GE(r->stats["pipeline_compile_ms"].get<double>(), 0.0);
    c = r->stats["kernel_cache"];
  }
  std::filesystem::remove_all(store);
  ASSERT_TRUE(cache[0]["enabled"].get<bool>()) << cache[0].dump();
  EXPECT_EQ(cache[0]["hits"].get<int>(), 0);
  EXPECT_GT(cache[0]["stores"].get<int>(), 0);
  EXPECT_EQ(cache[1]["hits"].get<int>(), cache[0]["stores"].get<int>()) << cache[1].dump();
  EXPECT_EQ(cache[1]["stores"].get<int>(), 0);
  EXPECT_EQ(cache[1]["refused"], Json::array());
}

}  // namespace
}  // namespace scellis::runtime::webgpu
