#include "api/session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "runtime/backends/webgpu/executor.h"

namespace scellis::api {
namespace {

using pipeline::Compile;
using pipeline::CompileOptions;
using pipeline::PrintRung;
using pipeline::Rung;

// state' = state * 0.5 + feed (carried), total = sum(state').
std::string StepGraph(int n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-2, 2);
  Json state = Json::array();
  for (int i = 0; i < n; ++i) state.push_back(u(rng));
  Json g = {{"version", 2},
            {"nodes",
             {{{"id", 0},
               {"op", "input"},
               {"name", "state"},
               {"shape", {n}},
               {"data", state},
               {"carry", "next"}},
              {{"id", 1}, {"op", "input"}, {"name", "feed"}, {"shape", {n}}},
              {{"id", 2}, {"op", "mul"}, {"a", 0}, {"scalar", 0.5}},
              {{"id", 3}, {"op", "add"}, {"a", 2}, {"b", 1}},
              {{"id", 4}, {"op", "sum"}, {"a", 3}}}},
            {"outputs", {{{"name", "next"}, {"id", 3}}, {{"name", "total"}, {"id", 4}}}}};
  return g.dump();
}

std::vector<runtime::Feeds> RandomFeeds(int n, int steps, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<runtime::Feeds> feeds(steps);
  for (auto& f : feeds) {
    std::vector<float> values;
    for (int i = 0; i < n; ++i) values.push_back(u(rng));
    HostTensor t = HostTensor::FromFloats(MakeType({n}), values);
    f["feed"] = t;
  }
  return feeds;
}

CompileOptions Options() {
  CompileOptions o;
  o.lower.tier = policy::Tier::kDebug;
  return o;
}

runtime::Selection Select(const std::string& backend_name) {
  if (backend_name == "webgpu" && !std::getenv("VK_ICD_FILENAMES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  auto s = runtime::SelectBackend({.requested = backend_name, .allow_software_adapter = true});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.errors().front().message);
  return std::move(s.value());
}

class SessionOnBackend : public ::testing::TestWithParam<std::string> {};

TEST_P(SessionOnBackend, FiveStepsInOneRunEqualFiveChainedRunsBitForBit) {
  const int n = 1000;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::string text = StepGraph(n, rng);
  std::vector<runtime::Feeds> feeds = RandomFeeds(n, 5, rng);

  auto batched = Session::Prepare(text, Options(), Select(GetParam()));
  ASSERT_TRUE(batched.ok()) << batched.errors().front().message;
  auto r5 = batched.value()->Run(feeds, {"total"});
  ASSERT_TRUE(r5.ok()) << r5.errors().front().message;
  auto state5 = batched.value()->Download("next");
  ASSERT_TRUE(state5.ok());

  auto chained = Session::Prepare(text, Options(), Select(GetParam()));
  ASSERT_TRUE(chained.ok());
  std::vector<float> totals;
  for (int k = 0; k < 5; ++k) {
    auto r1 = chained.value()->Run({feeds[k]}, {"total"});
    ASSERT_TRUE(r1.ok()) << r1.errors().front().message;
    totals.push_back(r1->watched[0].second[0].view<float>()[0]);
  }
  auto state1 = chained.value()->Download("next");
  ASSERT_TRUE(state1.ok());

  ASSERT_EQ(r5->watched[0].second.size(), 5u);
  for (int k = 0; k < 5; ++k)
    EXPECT_EQ(std::memcmp(&r5->watched[0].second[k].view<float>()[0], &totals[k], 4), 0)
        << "step " << k;
  EXPECT_EQ(std::memcmp(state5->bytes.data(), state1->bytes.data(), 4 * n), 0);

  // And against an independent float64 recomputation of the recurrence.
  std::mt19937 rng2(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<double> s(n);
  for (int i = 0; i < n; ++i) s[i] = u(rng2);
  for (int k = 0; k < 5; ++k)
    for (int i = 0; i < n; ++i) s[i] = s[i] * 0.5 + feeds[k].at("feed").view<float>()[i];
  for (int i = 0; i < n; ++i) EXPECT_NEAR(state5->view<float>()[i], s[i], 1e-5) << i;
}

// Two runs in flight (Start, Finish) give what the same runs one at a time give, bit for bit, in
// the order they were started; the calls that would break that order are refused, and refusing
// them poisons nothing.
TEST_P(SessionOnBackend, RunsInFlightGiveTheSequentialRunsBitsInOrder) {
  const int n = 1000, runs = 6, per_run = 3;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::string text = StepGraph(n, rng);
  std::vector<std::vector<runtime::Feeds>> feeds;
  for (int r = 0; r < runs; ++r) feeds.push_back(RandomFeeds(n, per_run, rng));

  auto one_at_a_time = Session::Prepare(text, Options(), Select(GetParam()));
  ASSERT_TRUE(one_at_a_time.ok()) << one_at_a_time.errors().front().message;
  std::vector<float> totals;
  for (const auto& run : feeds) {
    auto r = one_at_a_time.value()->Run(run, {"total"});
    ASSERT_TRUE(r.ok()) << r.errors().front().message;
    for (const HostTensor& t : r->watched[0].second) totals.push_back(t.view<float>()[0]);
  }
  auto state_sequential = one_at_a_time.value()->Download("next");
  ASSERT_TRUE(state_sequential.ok());

  auto s = Session::Prepare(text, Options(), Select(GetParam()));
  ASSERT_TRUE(s.ok());
  Session& pipelined = *s.value();
  std::vector<float> in_flight_totals;
  int overlapped = 0;
  auto finish = [&] {
    auto r = pipelined.Finish();
    ASSERT_TRUE(r.ok()) << r.errors().front().message;
    ASSERT_EQ(r->watched[0].second.size(), size_t{per_run});
    for (const HostTensor& t : r->watched[0].second) in_flight_totals.push_back(t.view<float>()[0]);
    overlapped += r->stats.value("overlapped_runs", 0);
  };
  for (int r = 0; r < runs; ++r) {
    ASSERT_TRUE(pipelined.Start(feeds[r], {"total"}).ok());
    if (pipelined.runs_in_flight() < runtime::kMaxRunsInFlight) continue;
    // Two in flight: a third, a download or a run of its own waits for them.
    Status third = pipelined.Start(feeds[r], {"total"});
    ASSERT_FALSE(third.ok());
    EXPECT_EQ(third.first().code, "too-many-runs-in-flight");
    EXPECT_EQ(third.first().kind, ErrorKind::kState);
    EXPECT_EQ(pipelined.Download("next").errors().front().code, "runs-in-flight");
    EXPECT_EQ(pipelined.Run(feeds[r], {"total"}).errors().front().code, "runs-in-flight");
    finish();
  }
  while (pipelined.runs_in_flight() > 0) finish();
  auto none = pipelined.Finish();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.errors().front().code, "no-run-in-flight");
  EXPECT_FALSE(pipelined.poisoned());
  auto state_pipelined = pipelined.Download("next");
  ASSERT_TRUE(state_pipelined.ok());

  ASSERT_EQ(in_flight_totals.size(), totals.size());
  for (size_t k = 0; k < totals.size(); ++k)
    EXPECT_EQ(std::memcmp(&in_flight_totals[k], &totals[k], 4), 0) << "step " << k;
  EXPECT_EQ(std::memcmp(state_pipelined->bytes.data(), state_sequential->bytes.data(), 4 * n), 0);
  // The GPU's runs after the first each started behind another; the reference runs each whole.
  if (GetParam() == "webgpu") EXPECT_EQ(overlapped, runs - 1);

  // And against an independent float64 recomputation of the recurrence.
  std::mt19937 rng2(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<double> state(n);
  for (int i = 0; i < n; ++i) state[i] = u(rng2);
  for (const auto& run : feeds)
    for (const runtime::Feeds& f : run)
      for (int i = 0; i < n; ++i) state[i] = state[i] * 0.5 + f.at("feed").view<float>()[i];
  for (int i = 0; i < n; ++i) EXPECT_NEAR(state_pipelined->view<float>()[i], state[i], 1e-5) << i;

  // Disposing with a run in flight waits for it and drops it.
  ASSERT_TRUE(pipelined.Start(feeds[0], {"total"}).ok());
  pipelined.Dispose();
  EXPECT_EQ(pipelined.runs_in_flight(), 0u);
}

TEST_P(SessionOnBackend, NonFiniteReadbackPoisons) {
  std::mt19937 rng(7);
  auto s = Session::Prepare(StepGraph(16, rng), Options(), Select(GetParam()));
  ASSERT_TRUE(s.ok());
  std::vector<runtime::Feeds> feeds = RandomFeeds(16, 1, rng);
  feeds[0]["feed"].view<float>()[3] = std::numeric_limits<float>::infinity();
  auto r = s.value()->Run(feeds, {"total"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().code, "non-finite-readback");
  auto again = s.value()->Run(RandomFeeds(16, 1, rng), {"total"});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.errors().front().code, "session-poisoned");
  EXPECT_NE(again.errors().front().message.find("non-finite-readback"), std::string::npos);
  auto down = s.value()->Download("next");
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.errors().front().code, "session-poisoned");
}

// Without carried state a NaN or infinity is a value: NaN in, NaN out, as PyTorch gives it.
TEST_P(SessionOnBackend, AStatelessSessionReturnsNonFiniteValues) {
  Json g = {{"version", 1},
            {"nodes",
             {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {3}}},
              {{"id", 1}, {"op", "mul"}, {"a", 0}, {"scalar", 2.0}}}},
            {"outputs", {{{"name", "y"}, {"id", 1}}}}};
  auto s = Session::Prepare(g.dump(), Options(), Select(GetParam()));
  ASSERT_TRUE(s.ok()) << s.errors().front().Format();
  runtime::Feeds feeds;
  const float x[3] = {std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::infinity(), 1.5f};
  feeds["x"] = HostTensor::FromFloats(MakeType({3}), x);
  for (int run = 0; run < 2; ++run) {
    auto r = s.value()->Run({feeds}, {"y"});
    ASSERT_TRUE(r.ok()) << r.errors().front().Format();
    auto y = r->watched[0].second[0].view<float>();
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_EQ(y[1], std::numeric_limits<float>::infinity());
    EXPECT_EQ(y[2], 3.0f);
  }
  EXPECT_FALSE(s.value()->poisoned());
}

TEST_P(SessionOnBackend, BadFeedIsRefusedWithoutPoisoning) {
  std::mt19937 rng(8);
  auto s = Session::Prepare(StepGraph(16, rng), Options(), Select(GetParam()));
  ASSERT_TRUE(s.ok());
  auto r = s.value()->Run({runtime::Feeds{}}, {"total"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().code, "missing-input-data");
  EXPECT_TRUE(s.value()->Run(RandomFeeds(16, 1, rng), {"total"}).ok());
}

// Fed indices are checked before any kernel reads them: an in-range step gathers the rows (worked
// by hand), an index outside the axis poisons the session with a cause naming the feed and the
// position, and a negative index counts as outside.
TEST_P(SessionOnBackend, AFedIndexOutOfRangePoisonsNamingThePosition) {
  Json g = {{"version", 4},
            {"nodes",
             {{{"id", 0},
               {"op", "input"},
               {"name", "table"},
               {"shape", {3, 2}},
               {"data", {10, 11, 20, 21, 30, 31}}},
              {{"id", 1}, {"op", "input"}, {"name", "ids"}, {"shape", {4}}, {"dtype", "i32"}},
              {{"id", 2}, {"op", "index_select"}, {"a", 0}, {"index", 1}, {"axis", 0}}}},
            {"outputs", {{{"name", "rows"}, {"id", 2}}}}};
  auto s = Session::Prepare(g.dump(), Options(), Select(GetParam()));
  ASSERT_TRUE(s.ok()) << s.errors().front().Format();
  auto ids = [](std::vector<int32_t> v) {
    HostTensor t = HostTensor::Zeros(MakeType({4}, DType::kI32));
    std::copy(v.begin(), v.end(), t.view<int32_t>().begin());
    return runtime::Feeds{{"ids", t}};
  };
  auto r = s.value()->Run({ids({2, 0, 2, 1})}, {"rows"});
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  auto rows = r->watched[0].second[0].view<float>();
  EXPECT_EQ(std::vector<float>(rows.begin(), rows.end()),
            (std::vector<float>{30, 31, 10, 11, 30, 31, 20, 21}));

  auto bad = s.value()->Run({ids({0, 1, 3, 0})}, {"rows"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors().front().code, "index-out-of-range");
  EXPECT_NE(bad.errors().front().message.find("the feed \"ids\" holds 3 at position [2]"),
            std::string::npos)
      << bad.errors().front().message;
  EXPECT_EQ(bad.errors().front().pointer, "/nodes/2");
  auto again = s.value()->Run({ids({0, 0, 0, 0})}, {"rows"});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.errors().front().code, "session-poisoned");
  EXPECT_NE(again.errors().front().message.find("index-out-of-range"), std::string::npos);

  auto fresh = Session::Prepare(g.dump(), Options(), Select(GetParam()));
  ASSERT_TRUE(fresh.ok());
  auto negative = fresh.value()->Run({ids({0, -1, 0, 0})}, {"rows"});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.errors().front().message.find("holds -1 at position [1]"), std::string::npos);
  EXPECT_TRUE(fresh.value()->poisoned());
}

// A session prepared beside another shares its backend and device: state copied from one to the
// other is the source's, bit for bit, and the copy's next step computes from it. On WebGPU the
// copy is a buffer copy on the device: nothing is read back or written from the host.
TEST_P(SessionOnBackend, StateCopiedToASessionBesideIsTheSourcesBitForBit) {
  const int n = 300;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto source = Session::Prepare(StepGraph(n, rng), Options(), Select(GetParam()));
  ASSERT_TRUE(source.ok()) << source.errors().front().Format();
  ASSERT_TRUE(source.value()->Run(RandomFeeds(n, 3, rng), {}).ok());
  auto copy = Session::PrepareBeside(StepGraph(n, rng), Options(), *source.value());
  ASSERT_TRUE(copy.ok()) << copy.errors().front().Format();
  EXPECT_EQ(copy.value()->selection().backend, GetParam());

  auto* gpu =
      dynamic_cast<runtime::webgpu::WebGpuExecutor*>(source.value()->selection().executor.get());
  const uint64_t read_before = gpu ? gpu->device().stats().bytes_read : 0;
  const uint64_t written_before = gpu ? gpu->device().stats().bytes_uploaded : 0;
  ASSERT_TRUE(copy.value()->CopyFrom(*source.value(), {"state"}).ok());
  if (gpu) {
    EXPECT_EQ(gpu->device().stats().bytes_read, read_before);
    EXPECT_EQ(gpu->device().stats().bytes_uploaded, written_before);
  }
  auto want = source.value()->Download("state");
  auto got = copy.value()->Download("state");
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(want->bytes, got->bytes);

  const std::vector<runtime::Feeds> next = RandomFeeds(n, 1, rng);
  auto a = source.value()->Run(next, {"total"});
  auto b = copy.value()->Run(next, {"total"});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->watched[0].second[0].bytes, b->watched[0].second[0].bytes);

  auto unknown = copy.value()->CopyFrom(*source.value(), {"nothing"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.first().code, "bad-upload");
  auto other = Session::PrepareBeside(StepGraph(n + 1, rng), Options(), *source.value());
  ASSERT_TRUE(other.ok());
  auto shape = other.value()->CopyFrom(*source.value(), {"state"});
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.first().code, "bad-upload");
  EXPECT_FALSE(other.value()->poisoned());
}

INSTANTIATE_TEST_SUITE_P(Backends, SessionOnBackend, ::testing::Values("cpu", "webgpu"));

// Device faults after work began poison the session; each cause is named in the STATE error.
class SessionFault : public ::testing::TestWithParam<runtime::webgpu::Fault> {};

TEST_P(SessionFault, PoisonsWithTheCause) {
  std::mt19937 rng(9);
  auto s = Session::Prepare(StepGraph(64, rng), Options(), Select("webgpu"));
  ASSERT_TRUE(s.ok());
  auto* gpu = dynamic_cast<runtime::webgpu::WebGpuExecutor*>(s.value()->selection().executor.get());
  ASSERT_NE(gpu, nullptr);
  ASSERT_TRUE(s.value()->Run(RandomFeeds(64, 2, rng), {"total"}).ok());
  gpu->device().InjectFault(GetParam());
  auto r = s.value()->Run(RandomFeeds(64, 2, rng), {"total"});
  ASSERT_FALSE(r.ok());
  std::string cause = r.errors().front().code;
  EXPECT_EQ(r.errors().front().kind, ErrorKind::kRuntime) << cause;
  for (int i = 0; i < 2; ++i) {
    auto again = s.value()->Run(RandomFeeds(64, 1, rng), {"total"});
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.errors().front().code, "session-poisoned");
    EXPECT_NE(again.errors().front().message.find(cause), std::string::npos);
  }
  EXPECT_EQ(s.value()->Download("next").errors().front().code, "session-poisoned");
  s.value()->Dispose();
  EXPECT_EQ(s.value()->Run(RandomFeeds(64, 1, rng), {"total"}).errors().front().code,
            "session-disposed");
}

// A fault in the older of two runs in flight: its Finish names the cause; the younger one's is
// waited for and refused as poisoned, so finishing until none is in flight ends.
TEST(SessionFaultInFlight, TheOlderRunsFaultPoisonsTheYounger) {
  std::mt19937 rng(11);
  auto s = Session::Prepare(StepGraph(64, rng), Options(), Select("webgpu"));
  ASSERT_TRUE(s.ok());
  auto* gpu = dynamic_cast<runtime::webgpu::WebGpuExecutor*>(s.value()->selection().executor.get());
  ASSERT_NE(gpu, nullptr);
  gpu->device().InjectFault(runtime::webgpu::Fault::kFailNextMap);
  ASSERT_TRUE(s.value()->Start(RandomFeeds(64, 2, rng), {"total"}).ok());
  ASSERT_TRUE(s.value()->Start(RandomFeeds(64, 2, rng), {"total"}).ok());
  auto older = s.value()->Finish();
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.errors().front().code, "map-failed");
  auto younger = s.value()->Finish();
  ASSERT_FALSE(younger.ok());
  EXPECT_EQ(younger.errors().front().code, "session-poisoned");
  EXPECT_NE(younger.errors().front().message.find("map-failed"), std::string::npos);
  EXPECT_EQ(s.value()->runs_in_flight(), 0u);
  s.value()->Dispose();
  EXPECT_EQ(s.value()->Start(RandomFeeds(64, 1, rng), {"total"}).first().code, "session-disposed");
}

INSTANTIATE_TEST_SUITE_P(Faults, SessionFault,
                         ::testing::Values(runtime::webgpu::Fault::kFailNextSubmit,
                                           runtime::webgpu::Fault::kFailNextMap,
                                           runtime::webgpu::Fault::kLoseDevice,
                                           runtime::webgpu::Fault::kFailNextAllocation));

// What a caller holds beside the plan (a trainer's gathered batches) counts against the host's
// memory: 2^62 bytes exceed any machine, so the session is refused before anything is allocated.
// A run that stages more steps or watches more outputs than the session's plan counted is
// counted again before it starts (execplan::JudgeRun): on a budget that holds exactly its staged
// feeds and history it runs; one byte short it is refused by name before anything is sent, the
// state unchanged, and the session still runs what its plan counted (SwiftShader).
TEST(Session, ARunBeyondItsPlanIsJudgedBeforeAnythingIsSent) {
  std::mt19937 rng(11);
  const std::string graph = StepGraph(4096, rng);
  const std::vector<runtime::Feeds> feeds = RandomFeeds(4096, 8, rng);
  CompileOptions demand = Options();
  demand.plan.staged_steps = 8;
  demand.plan.watched = {"next"};
  demand.plan.watched_steps_kept = 8;
  auto planned = Session::Prepare(graph, demand, Select("webgpu"));
  ASSERT_TRUE(planned.ok()) << planned.errors().front().Format();
  const int64_t needs = planned.value()->plan().memory.allocated;
  planned.value()->Dispose();

  CompileOptions fits = Options();
  fits.plan.budget_bytes = needs;
  auto s = Session::Prepare(graph, fits, Select("webgpu"));
  ASSERT_TRUE(s.ok()) << s.errors().front().Format();
  EXPECT_LT(s.value()->plan().memory.allocated, needs);  // planned with nothing staged or watched
  EXPECT_TRUE(s.value()->Run(feeds, {"next"}).ok());

  CompileOptions short_one = Options();
  short_one.plan.budget_bytes = needs - 1;
  auto t = Session::Prepare(graph, short_one, Select("webgpu"));
  ASSERT_TRUE(t.ok()) << t.errors().front().Format();
  auto before = t.value()->Download("state");
  ASSERT_TRUE(before.ok());
  auto refused = t.value()->Run(feeds, {"next"});
  ASSERT_FALSE(refused.ok());
  const Diagnostic& why = refused.errors().front();
  EXPECT_EQ(why.code, "memory-over-budget") << why.Format();
  EXPECT_NE(why.help.find("this run has 8 steps in flight and watches \"next\"; the session was "
                          "planned for 0 staged steps watching nothing"),
            std::string::npos)
      << why.help;
  EXPECT_FALSE(t.value()->poisoned());
  auto after = t.value()->Download("state");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->bytes, before->bytes);  // nothing ran
  auto one = t.value()->Run({feeds[0]}, {"total"});
  EXPECT_TRUE(one.ok()) << one.errors().front().Format();
}

TEST(Session, CallerHostBytesBeyondTheMachineAreRefusedInPlanning) {
  std::mt19937 rng(7);
  CompileOptions o = Options();
  o.plan.caller_host_bytes = int64_t{1} << 62;
  o.plan.caller_host_what = "the caller's gathered batches";
  auto s = Session::Prepare(StepGraph(16, rng), o, Select("cpu"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.errors().front().code, "memory-over-host") << s.errors().front().Format();
  EXPECT_NE(s.errors().front().message.find("the caller's gathered batches"), std::string::npos)
      << s.errors().front().message;
}

}  // namespace
}  // namespace scellis::api
