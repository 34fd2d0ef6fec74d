// Plans with tensors over the storage-binding cap: the scratch tiles hand partial results on in is
// a buffer of the memory plan (class working) that the verifier checks, and the over-cap
// documents of bench/tiling/over_cap_doc.py plan without a refusal under an H200's cap.
#include <gtest/gtest.h>

#include "execplan/plan.h"
#include "pipeline/compile.h"

namespace scellis::execplan {
namespace {

Result<Plan> PlanOf(const Json& doc, const DeviceLimits& limits) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kDebug;
  o.plan.budget_bytes = int64_t{200} << 30;
  o.plan.limits = limits;
  auto c = pipeline::Compile(doc.dump(), o);
  if (!c.ok()) return c.status();
  return std::move(*c->plan);
}

DeviceLimits Cap(int64_t binding_bytes) {
  DeviceLimits l;
  l.backend = "webgpu";
  l.device = "test-device";
  l.max_binding_bytes = binding_bytes;
  l.host_memory_bytes = int64_t{1} << 40;
  l.host_memory_source = "stated by the test";
  l.buffers_in_host_memory = false;
  return l;
}

// sum of x [5000] (20000 B), fed.
Json WholeSumDoc() {
  return {{"version", 2},
          {"nodes",
           {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {5000}}},
            {{"id", 1}, {"op", "sum"}, {"a", 0}}}},
          {"outputs", {{{"name", "y"}, {"id", 1}}}}};
}

const Buffer* TileScratch(const Plan& p) {
  for (const Buffer& b : p.buffers)
    if (b.tile_scratch) return &b;
  return nullptr;
}

// Under a 4 KiB cap the sum runs in tiles that carry the tree's 256 f32 lanes: 1 KiB of working
// memory beside x (20000 B, an input) and y (4 B), live through the run.
TEST(TilePlan, AWholeSumsLaneScratchIsAWorkingBufferOfThePlan) {
  auto p = PlanOf(WholeSumDoc(), Cap(4096));
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  EXPECT_EQ(p->verdict, Verdict::kYellow);
  const Buffer* scratch = TileScratch(*p);
  ASSERT_NE(scratch, nullptr) << Print(*p);
  EXPECT_EQ(scratch->bytes, 256 * 4);
  EXPECT_EQ(scratch->cls, MemClass::kWorking);
  EXPECT_TRUE(scratch->pinned);
  EXPECT_TRUE(scratch->values.empty());
  EXPECT_EQ(p->memory.by_class[static_cast<int>(MemClass::kInputs)], 20000);
  EXPECT_EQ(p->memory.by_class[static_cast<int>(MemClass::kWorking)], 4 + 1024);
  EXPECT_EQ(p->memory.allocated, 20000 + 4 + 1024);
  EXPECT_EQ(p->memory.peak_live, 20000 + 4 + 1024);
  EXPECT_EQ(p->memory.at_peak[static_cast<int>(MemClass::kWorking)], 4 + 1024);
  EXPECT_NE(Print(*p).find("(tile scratch)"), std::string::npos);
  EXPECT_EQ(ToJson(*p)["buffers"][scratch->id]["tile_scratch"], true);
  EXPECT_TRUE(Verify(*p).ok());

  // Without tiles (the cap over x) there is no scratch.
  auto whole = PlanOf(WholeSumDoc(), Cap(1 << 20));
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(TileScratch(*whole), nullptr);
  EXPECT_EQ(whole->memory.allocated, 20000 + 4);
}

// An axis sum carries its partial sums in its own output: no scratch.
TEST(TilePlan, AnAxisSumNeedsNoScratch) {
  Json doc = WholeSumDoc();
  doc["nodes"][0]["shape"] = {50, 100};
  doc["nodes"][1]["axis"] = 0;
  auto p = PlanOf(doc, Cap(4096));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->verdict, Verdict::kYellow);
  EXPECT_EQ(TileScratch(*p), nullptr);
}

TEST(TilePlan, TheVerifierCatchesAMissingOrMisusedScratch) {
  auto p = PlanOf(WholeSumDoc(), Cap(4096));
  ASSERT_TRUE(p.ok());
  ASSERT_NE(TileScratch(*p), nullptr);
  const int scratch = TileScratch(*p)->id;

  Plan missing = p.value();
  missing.buffers[scratch].tile_scratch = false;
  Status s = Verify(missing);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.first().message.find("partial results"), std::string::npos) << s.first().message;

  Plan small = p.value();
  small.buffers[scratch].bytes = 512;
  EXPECT_FALSE(Verify(small).ok());

  Plan bound = p.value();
  bound.steps[0].write = scratch;  // the sum's output over the lanes
  s = Verify(bound);
  ASSERT_FALSE(s.ok());
}

// ---- the over-cap documents of bench/tiling/over_cap_doc.py (SCALE 1) ----

Json Uniform(int id, std::vector<int64_t> shape, int seed) {
  return Json::array(
      {{{"id", id}, {"op", "uniform"}, {"shape", shape}, {"seed", seed}, {"step", 0}},
       {{"id", id + 1}, {"op", "sub"}, {"a", id}, {"scalar", 0.5}}});
}

Json OverCapDoc(const std::string& c) {
  Json nodes = {
      {{"id", 0}, {"op", "input"}, {"name", "step"}, {"shape", Json::array()}, {"data", {0.0}}}};
  auto add = [&](const Json& more) {
    for (const Json& n : more) nodes.push_back(n);
  };
  if (c == "matmul_k") {
    add(Uniform(1, {16, 36864}, 1));
    add(Uniform(3, {36864, 32768}, 2));
    nodes.push_back({{"id", 5}, {"op", "matmul"}, {"a", 2}, {"b", 4}});
  } else if (c == "matmul_n") {
    add(Uniform(1, {16, 4096}, 1));
    add(Uniform(3, {300000, 4096}, 2));
    nodes.push_back({{"id", 5}, {"op", "transpose"}, {"a", 4}});
    nodes.push_back({{"id", 6}, {"op", "matmul"}, {"a", 2}, {"b", 5}});
  } else if (c == "sum") {
    add(Uniform(1, {1300000000}, 1));
    nodes.push_back({{"id", 3}, {"op", "sum"}, {"a", 2}});
  } else if (c == "matmul_batch") {
    add(Uniform(1, {64, 4, 4096}, 1));
    add(Uniform(3, {64, 4096, 4096}, 2));
    nodes.push_back({{"id", 5}, {"op", "matmul"}, {"a", 2}, {"b", 4}});
  } else if (c == "cumsum") {
    add(Uniform(1, {40000, 32768}, 1));
    nodes.push_back({{"id", 3}, {"op", "cumsum"}, {"a", 2}, {"axis", 0}});
    nodes.push_back({{"id", 4}, {"op", "sum"}, {"a", 3}, {"axis", 1}});
  } else if (c == "cross_entropy") {
    add(Uniform(1, {40000, 32768}, 1));
    std::vector<float> labels(40000);
    for (size_t r = 0; r < labels.size(); ++r) labels[r] = static_cast<float>(r % 32768);
    nodes.push_back({{"id", 3}, {"op", "input"}, {"shape", {40000}}, {"data", labels}});
    nodes.push_back({{"id", 4}, {"op", "cross_entropy"}, {"a", 2}, {"target", 3}});
  } else if (c == "cross_entropy_grad") {
    add(Uniform(1, {40000, 32768}, 1));
    std::vector<float> labels(40000);
    for (size_t r = 0; r < labels.size(); ++r) labels[r] = static_cast<float>(r % 32768);
    nodes.push_back({{"id", 3}, {"op", "input"}, {"shape", {40000}}, {"data", labels}});
    nodes.push_back({{"id", 4}, {"op", "cross_entropy"}, {"a", 2}, {"target", 3}});
    nodes.push_back({{"id", 5}, {"op", "input"}, {"shape", Json::array()}, {"data", {40000.0}}});
    nodes.push_back({{"id", 6}, {"op", "cross_entropy_grad"}, {"a", 2}, {"target", 3}, {"b", 5}});
    nodes.push_back({{"id", 7}, {"op", "sum"}, {"a", 6}, {"axis", 1}});
  } else if (c == "sum_axis") {
    add(Uniform(1, {40000, 32768}, 1));
    nodes.push_back({{"id", 3}, {"op", "sum"}, {"a", 2}, {"axis", 0}});
  } else {
    add(Uniform(1, {40000, 32768}, 1));
    nodes.push_back({{"id", 3}, {"op", "softmax"}, {"a", 2}});
    nodes.push_back({{"id", 4}, {"op", "sum"}, {"a", 3}, {"axis", 1}});
  }
  Json outputs = {{{"name", "y"}, {"id", nodes.back()["id"]}}};
  if (c == "cross_entropy_grad") outputs.push_back({{"name", "loss"}, {"id", 4}});
  return {{"version", c == "cumsum" ? 5 : 3},
          {"name", "over_cap_" + c},
          {"nodes", nodes},
          {"outputs", outputs}};
}

// Every kernel of each document — the uniform generators included — binds its over-cap tensors
// in tiles under an H200's cap (4 GiB - 1): the plan is yellow, its findings all `tiled-binding`,
// and each generator among them.
TEST(TilePlan, TheOverCapBenchDocumentsPlanUnderAnH200sCap) {
  DeviceLimits h200 = Cap((int64_t{1} << 32) - 1);
  h200.device = "NVIDIA H200";
  h200.device_memory_bytes = int64_t{140} << 30;
  h200.device_memory_source = "stated by the test";
  for (const char* c : {"matmul_k", "matmul_n", "sum", "sum_axis", "softmax", "matmul_batch",
                        "cumsum", "cross_entropy", "cross_entropy_grad"}) {
    SCOPED_TRACE(c);
    auto p = PlanOf(OverCapDoc(c), h200);
    ASSERT_TRUE(p.ok()) << p.errors().front().Format();
    EXPECT_EQ(p->verdict, Verdict::kYellow) << Print(*p);
    bool uniform_tiled = false;
    for (const Diagnostic& d : p->findings) {
      EXPECT_EQ(d.code, "tiled-binding") << d.Format();
      uniform_tiled |= d.message.find("uniform") != std::string::npos;
    }
    EXPECT_TRUE(uniform_tiled) << Print(*p);
    EXPECT_TRUE(Verify(*p).ok());
    const std::string name = c;
    EXPECT_EQ(TileScratch(*p) != nullptr,
              name == "sum" || name == "cross_entropy" || name == "cross_entropy_grad")
        << Print(*p);
    // The loss and its gradient in one kernel, cut into two tiles of 32512 rows (each 256 rows of
    // logits and of the gradient 32 MiB, 127 of them under 4 GiB - 1 less the alignment).
    if (name == "cross_entropy_grad")
      EXPECT_NE(Print(*p).find("2 tiles of 32512 rows, the 256 lanes' partial sums of row losses "
                               "carried from tile to tile, each tile writing its rows of the "
                               "gradient"),
                std::string::npos)
          << Print(*p);
  }
}

}  // namespace
}  // namespace scellis::execplan
