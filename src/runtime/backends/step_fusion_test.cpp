// The training step of examples/fashion_mlp.json with the step's fusions (fuse-matmul-epilogue,
// merge-optimizer-outputs, merge-loss-gradient, merge-bias-gradient, fold-constant-inputs,
// write-state-in-place, merge-optimizer-kernels, fuse-optimizer-into-gradient) and without them,
// tier debug: the same bits in every output (loss, logits, new parameters, new moments), on the CPU
// reference and on WebGPU (SwiftShader), and fewer kernels with them; and a session's steps with
// the optimizer's state written in place and merged, and without, in debug and prod.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <set>

#include "kernel/passes/passes.h"
#include "runtime/backends/backends_test.h"
#include "support/examples.h"

namespace scellis::runtime {
namespace {

using scellis::testing::FashionMlp;

Result<pipeline::Compiled> Step(const Executor& exec, std::set<std::string> disabled,
                                const std::optional<kernel::MatmulSchedule>& schedule,
                                policy::Tier tier = policy::Tier::kDebug,
                                const Json& optimizer = Json()) {
  pipeline::CompileOptions o;
  o.matmul_schedule = schedule;
  o.lower.tier = tier;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits = exec.limits();
  o.disabled_passes = std::move(disabled);
  if (optimizer.is_null()) return pipeline::Compile(FashionMlp(), o);
  Json doc = Json::parse(FashionMlp());
  doc["train"]["optimizer"] = optimizer;
  return pipeline::Compile(doc.dump(), o);
}

// Fresh data for every input the step needs fed: images in [0, 1), labels in [0, 10), the step.
Feeds RandomFeeds(const webir::Graph& g, uint32_t seed, double step = 3) {
  std::mt19937 rng(seed);
  Feeds feeds;
  for (const webir::Node& n : g.nodes) {
    if (n.role != webir::Role::kInput || n.data || n.init) continue;
    const TensorType& t = n.type;
    std::vector<double> values(static_cast<size_t>(t.elements()));
    const bool labels = t.rank() == 1;
    for (double& v : values) {
      if (t.rank() == 0)
        v = step;
      else if (labels)
        v = std::uniform_int_distribution<int>(0, 9)(rng);
      else
        v = std::uniform_real_distribution<double>(0, 1)(rng);
    }
    feeds[FeedName(n)] = HostTensor::FromValues(t, values);
  }
  return feeds;
}

const std::set<std::string> kStepFusions = {
    "fuse-matmul-epilogue",    "merge-optimizer-outputs",      "merge-loss-gradient",
    "merge-bias-gradient",     "fold-constant-inputs",         "write-state-in-place",
    "merge-optimizer-kernels", "fuse-optimizer-into-gradient", "fuse-gradient-product-into-loss"};

// The product fuse-gradient-product-into-loss takes into the loss's dispatch: the gradient's back
// through w2, within 8 bindings with or without the seed a binding of its own.
size_t ProductsIntoLoss(const std::set<std::string>& kept_off) {
  return kept_off.count("merge-loss-gradient") || kept_off.count("fuse-gradient-product-into-loss")
             ? 0
             : 1;
}

// `kept_off`: fusions left out of the fused plan too (so that each merge is compared alone);
// `schedule`: every matmul's, in both plans.
void ExpectSameBits(const std::string& backend, const std::set<std::string>& kept_off = {},
                    const std::optional<kernel::MatmulSchedule>& schedule = std::nullopt) {
  auto exec = testing::Open(backend);
  ASSERT_NE(exec, nullptr);
  auto fused = Step(*exec, kept_off, schedule);
  auto unfused = Step(*exec, kStepFusions, schedule);
  ASSERT_TRUE(fused.ok()) << fused.errors().front().Format();
  ASSERT_TRUE(unfused.ok()) << unfused.errors().front().Format();
  // 25 kernels unfused: the two forward matmuls' bias + relu and bias, and the backward's relu
  // gradient, become epilogues (-3), Adam's three kernels per parameter one (-8), the loss's
  // gradient joins the loss (-1), the two bias gradients join the kernels that write or read
  // what they sum (-2), the gradient's seed is a literal (-1) and the four Adam kernels, in
  // place, two parameters each (-2), which then run inside the matmuls computing their weight's
  // and bias's gradients (-2); the gradient's product back through w2 runs in the loss's dispatch
  // (-1).
  EXPECT_EQ(unfused->module->kernels.size(), 25u) << kernel::Print(*unfused->module);
  const bool updates_in_matmul = !kept_off.count("merge-bias-gradient") &&
                                 !kept_off.count("merge-optimizer-kernels") &&
                                 !kept_off.count("fuse-optimizer-into-gradient");
  const size_t saved = 3 + 8 + (kept_off.count("merge-loss-gradient") ? 0 : 1) +
                       (kept_off.count("merge-bias-gradient") ? 0 : 2) +
                       (kept_off.count("fold-constant-inputs") ? 0 : 1) +
                       (kept_off.count("merge-optimizer-kernels") ? 0 : 2) +
                       (updates_in_matmul ? 2 : 0) + ProductsIntoLoss(kept_off);
  EXPECT_EQ(fused->module->kernels.size(), 25u - saved) << kernel::Print(*fused->module);

  // A forced schedule reaches the matmuls that sum B's columns too.
  for (const kernel::Kernel& k : fused->module->kernels)
    if (schedule && k.op == "matmul" && !k.extra_outputs.empty())
      EXPECT_EQ(k.matmul_schedule->Name(),
                kernel::WithVec4Loads(*schedule, kernel::MatmulShapeOf(*fused->module, k)).Name())
          << k.name;

  const Feeds feeds = RandomFeeds(fused->plan->graph(), 7);
  auto a = exec->Run(*fused->plan, feeds);
  auto b = exec->Run(*unfused->plan, feeds);
  ASSERT_TRUE(a.ok()) << a.errors().front().Format();
  ASSERT_TRUE(b.ok()) << b.errors().front().Format();
  ASSERT_EQ(a->outputs.size(), b->outputs.size());
  ASSERT_GE(a->outputs.size(), 2u + 3 * 4);  // loss, logits, 4 params and their 2 moments
  for (size_t i = 0; i < a->outputs.size(); ++i) {
    const auto& [name, x] = a->outputs[i];
    const auto& [name_b, y] = b->outputs[i];
    EXPECT_EQ(name, name_b);
    ASSERT_EQ(x.bytes.size(), y.bytes.size()) << name;
    EXPECT_EQ(std::memcmp(x.bytes.data(), y.bytes.data(), x.bytes.size()), 0)
        << backend << ": " << name << " differs with the step's fusions";
  }
  // The step moved the parameters: not a comparison of two unwritten buffers.
  const std::vector<float> loss = a->outputs[0].second.ToFloats();
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_GT(loss[0], 0.5f);
  EXPECT_LT(loss[0], 10.0f);
}

TEST(StepFusion, MlpStepHasTheSameBitsOnTheCpuReference) {
  ExpectSameBits("cpu");
}

TEST(StepFusion, MlpStepHasTheSameBitsOnWebGpu) {
  ExpectSameBits("webgpu");
}

TEST(StepFusion, EachMergeAloneHasTheSameBits) {
  for (const char* backend : {"cpu", "webgpu"}) {
    ExpectSameBits(backend, {"merge-bias-gradient"});
    // Both bias gradients beside the matmuls reading what they sum.
    ExpectSameBits(backend, {"merge-loss-gradient"});
    ExpectSameBits(backend, {"merge-loss-gradient", "merge-bias-gradient"});
    ExpectSameBits(backend, {"fold-constant-inputs"});
    ExpectSameBits(backend, {"fuse-optimizer-into-gradient"});
    ExpectSameBits(backend, {"fuse-gradient-product-into-loss"});
  }
}

// The column sums beside a matmul, and the updates of the weight and the bias inside it, under each
// kind of schedule: register-blocked (B loaded as vec4 where it can be), one output per invocation,
// and (the default for these shapes) one output per invocation of a 16x16 tile.
TEST(StepFusion, BiasSumsBesideEveryMatmulScheduleHaveTheSameBits) {
  for (const char* backend : {"cpu", "webgpu"}) {
    kernel::MatmulSchedule blocked = kernel::MediumMatmulSchedule();
    blocked.vec4_a = blocked.vec4_b = true;
    ExpectSameBits(backend, {"merge-loss-gradient"}, blocked);
    kernel::MatmulSchedule per_element;
    per_element.kind = kernel::MatmulSchedule::Kind::kPerElement;
    ExpectSameBits(backend, {"merge-loss-gradient"}, per_element);
  }
}

// Two steps of a resident session, each with fresh images, labels and its step number: the
// parameters and moments carried from step to step, written in place by two merged kernels or
// into buffers of their own by four, have the same bits after every step.
// `optimizer`: the document's own (Adam) when null.
void ExpectSameBitsOverSteps(const std::string& backend, policy::Tier tier,
                             const Json& optimizer = Json()) {
  auto exec = testing::Open(backend);
  ASSERT_NE(exec, nullptr);
  auto merged = Step(*exec, {}, std::nullopt, tier, optimizer);
  auto apart = Step(
      *exec, {"write-state-in-place", "merge-optimizer-kernels", "fuse-gradient-product-into-loss"},
      std::nullopt, tier, optimizer);
  ASSERT_TRUE(merged.ok()) << merged.errors().front().Format();
  ASSERT_TRUE(apart.ok()) << apart.errors().front().Format();
  EXPECT_LE(merged->plan->steps.size(), 8u);
  if (optimizer.is_null()) EXPECT_EQ(apart->plan->steps.size(), 10u);
  const webir::Graph& g = merged->plan->graph();
  std::vector<Feeds> feeds;
  for (int k = 0; k < 2; ++k) feeds.push_back(RandomFeeds(g, 20 + k, k + 1));
  std::vector<std::string> watch;
  for (const webir::Output& o : g.outputs) watch.push_back(o.name);
  auto a = exec->Prepare(*merged->plan);
  auto b = exec->Prepare(*apart->plan);
  ASSERT_TRUE(a.ok()) << a.errors().front().Format();
  ASSERT_TRUE(b.ok()) << b.errors().front().Format();
  auto ra = (*a)->RunSteps(feeds, watch);
  auto rb = (*b)->RunSteps(feeds, watch);
  ASSERT_TRUE(ra.ok()) << ra.errors().front().Format();
  ASSERT_TRUE(rb.ok()) << rb.errors().front().Format();
  ASSERT_EQ(ra->watched.size(), watch.size());
  ASSERT_EQ(rb->watched.size(), watch.size());
  for (size_t i = 0; i < watch.size(); ++i) {
    ASSERT_EQ(ra->watched[i].second.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      const HostTensor &x = ra->watched[i].second[k], &y = rb->watched[i].second[k];
      ASSERT_EQ(x.bytes.size(), y.bytes.size()) << watch[i];
      EXPECT_EQ(std::memcmp(x.bytes.data(), y.bytes.data(), x.bytes.size()), 0)
          << backend << ": " << watch[i] << " differs after step " << k + 1;
    }
    // The state moved from step to step: not a comparison of values that stood still.
    if (watch[i] != "loss" && watch[i] != "logits") {
      EXPECT_NE(ra->watched[i].second[0].bytes, ra->watched[i].second[1].bytes) << watch[i];
    }
  }
  // What a checkpoint reads between steps: the carried inputs, from the buffers written in place.
  for (const char* name : {"w1", "b2"}) {
    auto x = (*a)->Download(name);
    auto y = (*b)->Download(name);
    ASSERT_TRUE(x.ok()) << x.errors().front().Format();
    ASSERT_TRUE(y.ok()) << y.errors().front().Format();
    EXPECT_EQ(x->bytes, y->bytes) << backend << ": " << name;
  }
}

TEST(StepFusion, SessionStepsWithStateInPlaceHaveTheSameBits) {
  for (const char* backend : {"cpu", "webgpu"})
    for (policy::Tier tier : {policy::Tier::kDebug, policy::Tier::kProd})
      ExpectSameBitsOverSteps(backend, tier);
}

// Updates that read the old parameter beside the new one (coupled weight decay: the CPU
// reference keeps the new parameter apart until the moments have read the old), AdamW (whose
// moments do not read the parameter), gradients negated, momentum with and without Nesterov and
// decay, and plain SGD: in place and merged, the same bits. On the CPU reference alone (each GPU
// invocation reads its element before writing it, whatever the op).
TEST(StepFusion, OptimizerVariantsInPlaceHaveTheSameBits) {
  const Json coupled = {{"kind", "adam"}, {"lr", 0.01}, {"weight_decay", 0.1}, {"maximize", true}};
  ExpectSameBitsOverSteps("cpu", policy::Tier::kDebug, coupled);
  const Json adamw = {{"kind", "adamw"}, {"lr", 0.01}, {"weight_decay", 0.1}};
  const Json nesterov = {
      {"kind", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.01}};
  const Json momentum = {{"kind", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}};
  const Json sgd = {{"kind", "sgd"}, {"lr", 0.1}};
  for (const Json* opt : {&adamw, &nesterov, &momentum, &sgd})
    ExpectSameBitsOverSteps("cpu", policy::Tier::kDebug, *opt);
}

// The MLP at odd sizes — batch 37, 20 inputs, 50 hidden, 7 classes — so that the product the
// loss's dispatch takes in (37x7x50) has blocks of 5 rows, the last of 2, and lanes without an
// element.
std::string OddMlp() {
  Json doc = Json::parse(FashionMlp());
  doc["dims"]["B"] = 37;
  for (Json& n : doc["nodes"]) {
    const std::string id = n["id"];
    if (id == "x") n["params"]["shape"] = {"B", 20};
    if (id == "w1") n["params"]["shape"] = {20, 50};
    if (id == "b1") n["params"]["shape"] = {50}, n["params"]["init"]["fan_in"] = 20;
    if (id == "w2") n["params"]["shape"] = {50, 7};
    if (id == "b2") n["params"]["shape"] = {7}, n["params"]["init"]["fan_in"] = 50;
  }
  doc["train"]["optimizer"] = {{"kind", "adam"}, {"lr", 0.01}};
  return doc.dump();
}

TEST(StepFusion, TheGradientsProductInTheLossDispatchKeepsTheBitsOfOddShapes) {
  for (const char* backend : {"cpu", "webgpu"}) {
    auto exec = testing::Open(backend);
    ASSERT_NE(exec, nullptr);
    for (policy::Tier tier : {policy::Tier::kDebug, policy::Tier::kProd}) {
      pipeline::CompileOptions o;
      o.lower.tier = tier;
      o.plan.budget_bytes = int64_t{1} << 30;
      o.plan.limits = exec->limits();
      auto fused = pipeline::Compile(OddMlp(), o);
      o.disabled_passes = {"fuse-gradient-product-into-loss"};
      auto apart = pipeline::Compile(OddMlp(), o);
      ASSERT_TRUE(fused.ok()) << fused.errors().front().Format();
      ASSERT_TRUE(apart.ok()) << apart.errors().front().Format();
      ASSERT_EQ(fused->module->kernels.size() + 1, apart->module->kernels.size())
          << kernel::Print(*fused->module);
      const kernel::Kernel& staged = fused->module->kernels[2];
      ASSERT_EQ(staged.kind, kernel::KernelKind::kRowStages) << kernel::Print(*fused->module);
      EXPECT_EQ(staged.stages.size(), 3u);
      EXPECT_EQ(staged.stage_tile, 5);

      // Then with the last row's label out of range: its loss, its gradient's row and its row of
      // the product back through w2 are NaN, in the last block of rows, as in the unfused plan.
      for (bool bad_label : {false, true}) {
        std::mt19937 rng(91);
        Feeds feeds;
        for (const webir::Node& n : fused->plan->graph().nodes) {
          if (n.role != webir::Role::kInput || n.data || n.init) continue;
          std::vector<double> values(static_cast<size_t>(n.type.elements()));
          for (double& v : values)
            v = n.type.rank() == 0   ? 2.0
                : n.type.rank() == 1 ? std::uniform_int_distribution<int>(0, 6)(rng)
                                     : std::uniform_real_distribution<double>(-1, 1)(rng);
          if (bad_label && n.type.rank() == 1) values.back() = 7;
          feeds[FeedName(n)] = HostTensor::FromValues(n.type, values);
        }
        auto a = exec->Run(*fused->plan, feeds);
        auto b = exec->Run(*apart->plan, feeds);
        ASSERT_TRUE(a.ok()) << a.errors().front().Format();
        ASSERT_TRUE(b.ok()) << b.errors().front().Format();
        ASSERT_EQ(a->outputs.size(), b->outputs.size());
        for (size_t i = 0; i < a->outputs.size(); ++i) {
          const auto& [name, x] = a->outputs[i];
          EXPECT_EQ(name, b->outputs[i].first);
          EXPECT_EQ(x.bytes, b->outputs[i].second.bytes)
              << backend << " " << policy::TierName(tier) << (bad_label ? " bad label" : "") << ": "
              << name;
        }
        const std::vector<float> loss = a->outputs[0].second.ToFloats();
        ASSERT_EQ(loss.size(), 1u);
        if (bad_label) {
          EXPECT_TRUE(std::isnan(loss[0]));
        } else {
          EXPECT_GT(loss[0], 0.5f);  // a real loss over 7 classes, not an unwritten buffer
          EXPECT_LT(loss[0], 10.0f);
        }
      }
    }
  }
}

}  // namespace
}  // namespace scellis::runtime
