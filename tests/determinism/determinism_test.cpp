// The CPU reference is deterministic: the same plan gives the same bits with any number of threads
// and on every run. The graph is large enough that every kernel splits into many chunks, so a
// thread-count-dependent partition or reduction order would show.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "support/cli.h"
#include "support/graph.h"

namespace scellis::testing {
namespace {

struct Sizes {
  int64_t m = 300, k = 200, n = 150;  // matmul 300x200 @ 200x150: 19 row chunks of 16
  int64_t big = 1000;                 // 1000x1000 = 1e6 elements: 62 elementwise chunks
};

Json BigGraph(const Sizes& s) {
  auto input = [](int id, std::vector<int64_t> shape) {
    return Json{{"id", id}, {"op", "input"}, {"shape", shape}};  // fed at run time
  };
  std::vector<Json> nodes = {
      input(0, {s.m, s.k}),
      input(1, {s.k, s.n}),
      input(2, {s.m, s.n}),
      input(3, {s.big, s.big}),
      input(4, {s.big, s.big}),
      {{"id", 5}, {"op", "matmul"}, {"a", 0}, {"b", 1}},
      {{"id", 6}, {"op", "mul"}, {"a", 5}, {"scalar", 0.37}},
      {{"id", 7}, {"op", "sub"}, {"a", 6}, {"b", 2}},
      {{"id", 8}, {"op", "relu"}, {"a", 7}},  // fused: mul, sub, relu
      {{"id", 9}, {"op", "sum"}, {"a", 8}},
      {{"id", 10}, {"op", "mul"}, {"a", 3}, {"b", 4}},
      {{"id", 11}, {"op", "add"}, {"a", 10}, {"b", 3}},
      {{"id", 12}, {"op", "sum"}, {"a", 11}},               // whole-tensor sum of 1e6
      {{"id", 13}, {"op", "sum"}, {"a", 11}, {"axis", 0}},  // axis sums, both ways
      {{"id", 14}, {"op", "mean"}, {"a", 11}, {"axis", 1}},
      {{"id", 15}, {"op", "transpose"}, {"a", 11}},
      {{"id", 16}, {"op", "positive"}, {"a", 4}},
      {{"id", 17}, {"op", "life"}, {"a", 16}},  // 16 row chunks of 64
  };
  return GraphDoc(nodes,
                  {{"product", 8},
                   {"product_sum", 9},
                   {"total", 12},
                   {"col_sums", 13},
                   {"row_means", 14},
                   {"transposed", 15},
                   {"life", 17}},
                  /*version=*/2);
}

runtime::Feeds RandomFeeds(const Sizes& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> v(-2.0f, 2.0f);
  auto tensor = [&](std::vector<int64_t> shape) {
    HostTensor t = HostTensor::Zeros(MakeType(shape));
    for (float& x : t.view<float>()) x = v(rng);
    return t;
  };
  runtime::Feeds f;
  f["0"] = tensor({s.m, s.k});
  f["1"] = tensor({s.k, s.n});
  f["2"] = tensor({s.m, s.n});
  f["3"] = tensor({s.big, s.big});
  f["4"] = tensor({s.big, s.big});
  return f;
}

std::vector<std::vector<uint32_t>> Bits(const runtime::RunResult& r) {
  std::vector<std::vector<uint32_t>> out;
  for (const auto& [name, t] : r.outputs) {
    std::span<const uint32_t> words = t.view<uint32_t>();
    std::vector<uint32_t> b(words.begin(), words.end());
    out.push_back(std::move(b));
  }
  return out;
}

TEST(Determinism, SameBitsForEveryThreadCountAndEveryRun) {
  Sizes s;
  auto c = pipeline::Compile(BigGraph(s).dump(), ProdOptions());
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  const execplan::Plan& plan = *c->plan;
  // The shapes really do make many chunks.
  ASSERT_GT(s.big * s.big / kernel::ref::kChunk, 50);
  ASSERT_GT(s.m / 16, 10);

  uint32_t seed = std::random_device{}();
  SCOPED_TRACE("feed seed " + std::to_string(seed));
  runtime::Feeds feeds = RandomFeeds(s, seed);

  std::vector<std::vector<uint32_t>> reference;
  for (int threads : {1, 2, 3, 8}) {
    runtime::cpu::CpuExecutor exec({.threads = threads});
    ASSERT_EQ(exec.threads(), threads);
    for (int run = 0; run < 2; ++run) {
      auto r = exec.Run(plan, feeds);
      ASSERT_TRUE(r.ok()) << r.errors().front().Format();
      ASSERT_EQ(r->outputs.size(), 7u);
      std::vector<std::vector<uint32_t>> bits = Bits(r.value());
      if (reference.empty()) {
        reference = bits;
        continue;
      }
      for (size_t o = 0; o < bits.size(); ++o)
        EXPECT_TRUE(bits[o] == reference[o]) << "output " << r->outputs[o].first << " differs with "
                                             << threads << " threads, run " << run + 1;
    }
  }
  // Not a vacuous comparison: the outputs carry data.
  EXPECT_EQ(reference[2].size(), 1u);
  EXPECT_NE(reference[2][0], 0u);
  EXPECT_EQ(reference[0].size(), static_cast<size_t>(s.m * s.n));
}

// Compiling twice gives the same plan text and the same kernels, so a rerun is the same program.
TEST(Determinism, CompilingTwiceGivesTheSamePlan) {
  std::string text = BigGraph(Sizes{}).dump();
  auto a = pipeline::Compile(text, ProdOptions());
  auto b = pipeline::Compile(text, ProdOptions());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(execplan::Print(*a->plan), execplan::Print(*b->plan));
  EXPECT_EQ(kernel::PrintWgsl(*a->module), kernel::PrintWgsl(*b->module));
  EXPECT_EQ(a->doc.content_id, b->doc.content_id);
}

// The command line: `--threads` changes nothing in the written result but the thread count.
TEST(Determinism, CliResultDoesNotDependOnThreads) {
  std::filesystem::path dir = MakeTempDir("scellis-determinism");
  std::string example = std::string(SCELLIS_SOURCE_DIR) + "/examples/matmul_chain.json";
  Json results[2];
  int i = 0;
  for (const char* threads : {"1", "8"}) {
    std::string out = (dir / (std::string("out") + threads + ".json")).string();
    CliRun r = RunScellis(
        {"run", example, "--tier=prod", "--backend=cpu", "--threads", threads, "--out", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    results[i] = Json::parse(ReadWholeFile(out));
    // More threads than the machine has are capped at its count, and the run says so.
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    EXPECT_EQ(results[i]["stats"]["threads"], std::min(std::stoi(threads), hardware));
    results[i]["stats"].erase("threads");
    results[i]["stats"].erase("wall_ms");
    // Each run's record is its own (it names when the run happened).
    EXPECT_TRUE(results[i]["run_id"].is_string());
    results[i].erase("run_id");
    ++i;
  }
  EXPECT_EQ(results[0].dump(), results[1].dump());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace scellis::testing
