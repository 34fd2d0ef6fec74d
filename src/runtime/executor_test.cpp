// The seam's validation, exercised through the null backend: it computes nothing, so every
// diagnostic here comes from the one place that checks arguments for all backends.
#include "runtime/executor.h"

#include <gtest/gtest.h>

#include "pipeline/compile.h"
#include "runtime/backends/select.h"

namespace scellis::runtime {
namespace {

// x (fed, [2, 3]) and w (a param, [3]); y = x * w (carried into w as "w@next") and s = sum(y).
execplan::Plan PlanOf(const Json& doc) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kProd;
  o.plan.budget_bytes = int64_t{1} << 30;
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.errors().front().Format());
  return *c->plan;
}

Json Doc() {
  return Json{{"version", 2},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {2, 3}}},
                {{"id", 1}, {"op", "input"}, {"name", "k"}, {"shape", {3}}, {"data", {1, 2, 3}}},
                {{"id", 2}, {"op", "mul"}, {"a", 0}, {"b", 1}},
                {{"id", 3}, {"op", "sum"}, {"a", 2}}}},
              {"outputs", {{{"name", "y"}, {"id", 2}}, {{"name", "s"}, {"id", 3}}}}};
}

std::unique_ptr<Executor> Null() {
  auto s = SelectBackend({.requested = "null"});
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s->backend, "null");
  return std::move(s->executor);
}

Feeds GoodFeeds() {
  return {{"x", HostTensor::FromFloats(MakeType({2, 3}), std::vector<float>{1, 2, 3, 4, 5, 6})}};
}

std::string Code(const Status& s) {
  return s.ok() ? "ok" : s.first().code;
}

TEST(RuntimeSeam, NullBackendRunsAndReturnsZeros) {
  auto exec = Null();
  auto r = exec->Run(PlanOf(Doc()), GoodFeeds());
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(r->backend, "null");
  ASSERT_EQ(r->outputs.size(), 2u);
  EXPECT_EQ(r->outputs[0].second.type.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r->outputs[0].second.ToFloats(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(r->outputs[1].second.ToFloats(), std::vector<float>(1, 0.0f));
  EXPECT_EQ(exec->profile().key, "null");
}

TEST(RuntimeSeam, BadFeeds) {
  auto exec = Null();
  execplan::Plan plan = PlanOf(Doc());
  Feeds unknown = GoodFeeds();
  unknown["z"] = HostTensor::Zeros(MakeType({1}));
  EXPECT_EQ(Code(exec->Run(plan, unknown).status()), "bad-feed");
  Feeds shape = {{"x", HostTensor::Zeros(MakeType({3, 2}))}};
  EXPECT_EQ(Code(exec->Run(plan, shape).status()), "bad-feed");
  Feeds dtype = {{"x", HostTensor::Zeros(MakeType({2, 3}, DType::kI32))}};
  EXPECT_EQ(Code(exec->Run(plan, dtype).status()), "bad-feed");
  Feeds bytes = {{"x", HostTensor{MakeType({2, 3}), std::vector<std::byte>(20)}}};
  EXPECT_EQ(Code(exec->Run(plan, bytes).status()), "bad-feed");
  EXPECT_EQ(Code(exec->Run(plan, {}).status()), "missing-input-data");
  EXPECT_EQ(Code(exec->Prepare(plan, unknown).status()), "bad-feed");
}

TEST(RuntimeSeam, StepCountsWatchesDownloadsAndUploads) {
  auto exec = Null();
  auto p = exec->Prepare(PlanOf(Doc()));
  ASSERT_TRUE(p.ok());
  Prepared& s = *p.value();
  EXPECT_EQ(Code(s.RunSteps({}, {"y"}).status()), "bad-step-count");
  EXPECT_EQ(Code(s.RunSteps(std::vector<Feeds>(kMaxStepsPerRun + 1, GoodFeeds()), {"y"}).status()),
            "bad-step-count");
  EXPECT_EQ(Code(s.RunSteps({GoodFeeds()}, {"nope"}).status()), "unknown-output");
  EXPECT_EQ(Code(s.RunSteps({Feeds{}}, {"y"}).status()), "missing-input-data");
  auto ok = s.RunSteps(std::vector<Feeds>(kMaxStepsPerRun, GoodFeeds()), {"y", "s", "x"});
  ASSERT_TRUE(ok.ok()) << ok.errors().front().Format();
  EXPECT_EQ(ok->watched.size(), 3u);
  EXPECT_EQ(ok->watched[0].second.size(), kMaxStepsPerRun);

  EXPECT_EQ(Code(s.Download("nope").status()), "unknown-output");
  auto k = s.Download("k");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->type.sizes(), (std::vector<int64_t>{3}));

  EXPECT_EQ(Code(s.Upload("nope", HostTensor::Zeros(MakeType({3})))), "bad-upload");
  EXPECT_EQ(Code(s.Upload("y", HostTensor::Zeros(MakeType({2, 3})))), "bad-upload");  // an output
  EXPECT_EQ(Code(s.Upload("k", HostTensor::Zeros(MakeType({4})))), "bad-upload");
  EXPECT_EQ(Code(s.Upload("k", HostTensor::Zeros(MakeType({3}, DType::kU32)))), "bad-upload");
  EXPECT_EQ(Code(s.Upload("k", HostTensor::Zeros(MakeType({3})))), "ok");
}

TEST(RuntimeSeam, AutoNeverChoosesNull) {
  auto s = SelectBackend({.requested = "auto"});
  ASSERT_TRUE(s.ok());
  EXPECT_NE(s->backend, "null");
  for (const std::string& a : s->attempts) EXPECT_EQ(a.find("null"), std::string::npos) << a;
  EXPECT_EQ(Code(SelectBackend({.requested = "tpu"}).status()), "unknown-backend");
  EXPECT_EQ(BackendChoices(), "auto | webgpu | cpu | null");
}

TEST(RuntimeSeam, RegistryEntriesAnswerForThemselves) {
  ASSERT_NE(FindBackend("cpu"), nullptr);
  ASSERT_NE(FindBackend("null"), nullptr);
  EXPECT_FALSE(FindBackend("null")->automatic());
  EXPECT_TRUE(FindBackend("cpu")->Probe({}).ok());
  EXPECT_EQ(FindBackend("cpu")->ProfileKey({}).value(), "cpu;reference");
  execplan::Plan plan = PlanOf(Doc());
  for (const kernel::Kernel& k : plan.module().kernels) {
    EXPECT_TRUE(FindBackend("cpu")->SupportsKernel(plan.module(), k).ok()) << k.name;
    EXPECT_TRUE(FindBackend("webgpu")->SupportsKernel(plan.module(), k).ok()) << k.name;
  }
  kernel::Kernel made_up = plan.module().kernels.front();
  made_up.kind = kernel::KernelKind::kOp;
  made_up.op = "no_such_op";
  made_up.Wgsl().source.clear();
  EXPECT_EQ(Code(FindBackend("cpu")->SupportsKernel(plan.module(), made_up)), "unsupported-kernel");
  EXPECT_EQ(Code(FindBackend("webgpu")->SupportsKernel(plan.module(), made_up)),
            "unsupported-kernel");
}

}  // namespace
}  // namespace scellis::runtime
