// block-butterfly-stages: the sorts of seed 002 (a bitonic sort, its top k, a stable compaction
// as a key-value sort) over 2^10 keys in tiles of 128 (8 workgroups), tiers debug and prod, on the
// CPU reference and on WebGPU (SwiftShader): the blocked plan's bits are the unblocked plan's and
// the answers are std::sort's and std::stable_partition's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "kernel/passes/passes.h"
#include "runtime/backends/backends_test.h"
#include "support/graph.h"

namespace scellis::kernel {
namespace {

constexpr int64_t kKeys = 1024;
constexpr int64_t kTile = 128;
constexpr int64_t kTop = 100;

// A document under construction, as bench/pipelines/workloads.py builds the sorts.
struct Doc {
  Json nodes = Json::array();
  int Add(Json node) {
    const int id = static_cast<int>(nodes.size());
    node["id"] = id;
    nodes.push_back(std::move(node));
    return id;
  }
};

// Batcher's network over `keys`: for k = 2, 4, ..., n and j = k/2, ..., 1, element i keeps the
// smaller of itself and i ^ j where (i & j == 0) == (i & k == 0), else the larger; a payload
// follows its key. Returns the keys and the payload.
std::pair<int, int> Bitonic(Doc& d, int keys, int payload) {
  const int index = d.Add({{"op", "arange"}, {"shape", Json::array({kKeys})}});
  auto bit_clear = [&](int64_t bit) {
    const int masked = d.Add({{"op", "bitwise_and"}, {"a", index}, {"scalar", bit}});
    return d.Add({{"op", "eq"}, {"a", masked}, {"scalar", 0}});
  };
  for (int64_t k = 2; k <= kKeys; k *= 2) {
    for (int64_t j = k / 2; j >= 1; j /= 2) {
      const int partner = d.Add({{"op", "butterfly"}, {"a", keys}, {"mask", j}});
      const int smaller = d.Add({{"op", "eq"}, {"a", bit_clear(j)}, {"b", bit_clear(k)}});
      const int lo = d.Add({{"op", "minimum"}, {"a", keys}, {"b", partner}});
      const int hi = d.Add({{"op", "maximum"}, {"a", keys}, {"b", partner}});
      const int moved = d.Add({{"op", "where"}, {"cond", smaller}, {"a", lo}, {"b", hi}});
      if (payload >= 0) {
        const int swapped = d.Add({{"op", "ne"}, {"a", moved}, {"b", keys}});
        const int theirs = d.Add({{"op", "butterfly"}, {"a", payload}, {"mask", j}});
        payload = d.Add({{"op", "where"}, {"cond", swapped}, {"a", theirs}, {"b", payload}});
      }
      keys = moved;
    }
  }
  return {keys, payload};
}

std::vector<float> RandomKeys(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> x(kKeys);
  for (float& v : x) v = u(rng);
  return x;
}

Json Document(const std::string& name, const std::vector<float>& x) {
  Doc d;
  const int in = d.Add(scellis::testing::InputNode(0, {kKeys}, x));
  std::vector<std::pair<std::string, int>> outputs;
  if (name == "compaction") {
    const int kept = d.Add({{"op", "gt"}, {"a", in}, {"scalar", 0.5}});
    const int index = d.Add({{"op", "arange"}, {"shape", Json::array({kKeys})}, {"dtype", "f32"}});
    const int later = d.Add({{"op", "add"}, {"a", index}, {"scalar", double(kKeys)}});
    const int keys = d.Add({{"op", "where"}, {"cond", kept}, {"a", index}, {"b", later}});
    outputs.push_back({"kept", Bitonic(d, keys, in).second});
    const int mask = d.Add({{"op", "gt"}, {"a", in}, {"scalar", 0.5}});
    const int as_f32 = d.Add({{"op", "cast"}, {"a", mask}, {"dtype", "f32"}});
    outputs.push_back({"count", d.Add({{"op", "sum"}, {"a", as_f32}})});
  } else {
    const int sorted = Bitonic(d, in, -1).first;
    outputs.push_back(
        {"out",
         name == "top_k"
             ? d.Add({{"op", "slice"}, {"a", sorted}, {"starts", Json::array({kKeys - kTop})}})
             : sorted});
  }
  return scellis::testing::GraphDoc(d.nodes, outputs, 6);
}

// The answer computed apart from the engine: std::sort, its last kTop, a stable partition.
std::vector<float> Expected(const std::string& name, std::vector<float> x) {
  if (name == "compaction") {
    std::stable_partition(x.begin(), x.end(), [](float v) { return v > 0.5f; });
    return x;
  }
  std::sort(x.begin(), x.end());
  return name == "top_k" ? std::vector<float>(x.end() - kTop, x.end()) : x;
}

Result<pipeline::Compiled> Compile(const Json& doc, const runtime::Executor& exec,
                                   policy::Tier tier, bool blocked) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.lower.tier = tier;
  o.plan.limits = exec.limits();
  o.stage_tile = kTile;
  if (!blocked) o.disabled_passes = {"block-butterfly-stages"};
  return pipeline::Compile(doc.dump(), o);
}

int TiledKernels(const Module& m) {
  return static_cast<int>(std::count_if(m.kernels.begin(), m.kernels.end(), [](const Kernel& k) {
    return k.kind == KernelKind::kTiledStages;
  }));
}

TEST(BlockButterflyStages, SortsInFewerKernelsWithTheTileShown) {
  auto exec = runtime::testing::Open("cpu");
  ASSERT_NE(exec, nullptr);
  const std::vector<float> x = RandomKeys(11);
  // 55 stages of 2^10 keys. Partners below 128 stay in a tile: the stages of k <= 128 are one
  // run; each k = 256 ... 1024 has its stages of j = 512 ... 256 alone (a partner outside the
  // tile of the stage before), then the stage of j = 128 (its reads from buffers, at any
  // partner) and the seven below it in one run: 1 + (0 + 1) + (1 + 1) + (2 + 1) = 7.
  auto sort = Compile(Document("bitonic_sort", x), *exec, policy::Tier::kProd, true);
  auto plain = Compile(Document("bitonic_sort", x), *exec, policy::Tier::kProd, false);
  ASSERT_TRUE(sort.ok()) << sort.errors().front().Format();
  ASSERT_TRUE(plain.ok()) << plain.errors().front().Format();
  EXPECT_EQ(plain->module->kernels.size(), 55u);
  EXPECT_EQ(sort->module->kernels.size(), 7u) << Print(*sort->module);
  EXPECT_EQ(TiledKernels(*sort->module), 4);
  const Kernel& first = sort->module->kernels.front();
  ASSERT_EQ(first.kind, KernelKind::kTiledStages);
  EXPECT_EQ(first.stages.size(), 28u);  // k = 2 ... 128: 7 * 8 / 2
  EXPECT_EQ(first.stage_tile, kTile);
  EXPECT_EQ(first.workgroups, (std::array<uint32_t, 3>{kKeys / kTile, 1, 1}));
  EXPECT_NE(Print(*sort->module)
                .find("butterfly blocking: 28 stages per dispatch, tiles of 128 "
                      "elements, 512 B of workgroup memory"),
            std::string::npos)
      << Print(*sort->module);
  EXPECT_TRUE(Verify(*sort->module).ok());

  // The key-value sort carries three values per stage (the keys before and after it, the
  // payload): 1.5 KiB at 128 elements, the same runs, two kernels (keys, payload) for each stage
  // alone; the mask as f32 joins the last run and its sum follows.
  auto kv = Compile(Document("compaction", x), *exec, policy::Tier::kProd, true);
  ASSERT_TRUE(kv.ok()) << kv.errors().front().Format();
  EXPECT_EQ(TiledKernels(*kv->module), 4) << Print(*kv->module);
  EXPECT_EQ(kv->module->kernels.size(), 4u + 2 * 3 + 1) << Print(*kv->module);
  EXPECT_EQ(kv->module->kernels.front().stage_workgroup_bytes, 3 * kTile * 4);
}

// The blocked and unblocked plans of each sort on one backend and tier: the same bits, and the
// independent answer.
void ExpectSortsExact(const std::string& backend, policy::Tier tier) {
  auto exec = runtime::testing::Open(backend);
  ASSERT_NE(exec, nullptr);
  uint32_t seed = 100;
  for (const std::string name : {"bitonic_sort", "top_k", "compaction"}) {
    const std::vector<float> x = RandomKeys(seed++);
    const Json doc = Document(name, x);
    auto blocked = Compile(doc, *exec, tier, true);
    auto plain = Compile(doc, *exec, tier, false);
    ASSERT_TRUE(blocked.ok()) << blocked.errors().front().Format();
    ASSERT_TRUE(plain.ok()) << plain.errors().front().Format();
    ASSERT_GT(TiledKernels(*blocked->module), 0) << name;
    auto a = exec->Run(*blocked->plan, {}, {.poison_outputs = true});
    auto b = exec->Run(*plain->plan, {}, {.poison_outputs = true});
    ASSERT_TRUE(a.ok()) << a.errors().front().Format();
    ASSERT_TRUE(b.ok()) << b.errors().front().Format();
    ASSERT_EQ(a->outputs.size(), b->outputs.size());
    for (size_t i = 0; i < a->outputs.size(); ++i) {
      const auto& [out, got] = a->outputs[i];
      const auto& want = b->outputs[i].second;
      ASSERT_EQ(got.bytes.size(), want.bytes.size()) << name << " " << out;
      EXPECT_EQ(std::memcmp(got.bytes.data(), want.bytes.data(), got.bytes.size()), 0)
          << backend << " " << name << ": " << out << " differs blocked";
    }
    EXPECT_EQ(a->outputs[0].second.ToFloats(), Expected(name, x)) << backend << " " << name;
    if (name == "compaction") {
      const auto kept = std::count_if(x.begin(), x.end(), [](float v) { return v > 0.5f; });
      EXPECT_EQ(a->outputs[1].second.ToFloats(), std::vector<float>{float(kept)});
    }
  }
}

TEST(BlockButterflyStages, SameBitsAsUnblockedOnTheCpuReference) {
  ExpectSortsExact("cpu", policy::Tier::kDebug);
  ExpectSortsExact("cpu", policy::Tier::kProd);
}

TEST(BlockButterflyStages, SameBitsAsUnblockedOnWebGpu) {
  ExpectSortsExact("webgpu", policy::Tier::kDebug);
  ExpectSortsExact("webgpu", policy::Tier::kProd);
}

}  // namespace
}  // namespace scellis::kernel
