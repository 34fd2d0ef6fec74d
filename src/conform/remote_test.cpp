// Conformance of a device reached through the caller: the cases go out as device programs, the
// outputs come back, and the engine judges them. The "device" here is the CPU reference run on
// each case's plan (the test needs a device whose outputs are known to be right, and then breaks
// them on purpose); the WGSL a real tab runs is checked against the native emitter's.
#include <gtest/gtest.h>

#include <cstring>

#include "conform/runner.h"
#include "runtime/backends/cpu/executor.h"

namespace scellis::conform {
namespace {

constexpr uint64_t kSeed = 20261201;

// The answers a correct device gives: the reference's output for every case of `group`.
std::map<std::string, RemoteAnswer> CorrectAnswers(const std::string& group, policy::Tier tier,
                                                   const RemoteDevice& device, bool rerun) {
  std::map<std::string, RemoteAnswer> answers;
  const kernel::ref::Parallel parallel(1);
  for (const Case& c : CasesFor(group)) {
    auto plan = CompileCase(c, tier, device.limits);
    if (!plan.ok()) continue;
    auto out = runtime::cpu::RunPlan<float>(*plan, MakeFeeds(c, kSeed), parallel);
    EXPECT_TRUE(out.ok()) << c.id();
    if (!out.ok()) continue;
    RemoteAnswer a;
    a.out = out->at(0);
    if (rerun) a.rerun = a.out;
    answers[c.id()] = std::move(a);
  }
  return answers;
}

// The first case whose output has elements (the edge sizes include empty tensors).
std::string FirstNonEmpty(const std::map<std::string, RemoteAnswer>& answers) {
  for (const auto& [id, a] : answers)
    if (!a.out.empty()) return id;
  ADD_FAILURE() << "every case's output is empty";
  return "";
}

TEST(RemoteConformance, CasesAreProgramsWithTheirFeeds) {
  RemoteDevice device;
  device.limits.backend = "webgpu";
  auto cases = RemoteCases("add", policy::Tier::kProd, kSeed, device);
  ASSERT_TRUE(cases.ok());
  ASSERT_EQ(cases->size(), CasesFor("add").size());
  for (const RemoteCase& rc : *cases) {
    ASSERT_TRUE(rc.error.empty()) << rc.id << ": " << rc.error;
    ASSERT_TRUE(rc.program.has_value()) << rc.id;
    EXPECT_FALSE(rc.program->pipelines.empty()) << rc.id;
    EXPECT_NE(rc.program->pipelines.front().wgsl.find("@compute"), std::string::npos);
    // Every input the program must be fed is in the feeds, with its byte count.
    for (const runtime::ProgramInput& in : rc.program->inputs) {
      if (!in.fed) continue;
      auto f = rc.feeds.find(in.name);
      ASSERT_NE(f, rc.feeds.end()) << rc.id << " " << in.name;
      EXPECT_EQ(static_cast<int64_t>(f->second.bytes.size()), in.bytes);
    }
  }
  // The same seed gives the same feeds: the judge regenerates them rather than trust the caller.
  auto again = RemoteCases("add", policy::Tier::kProd, kSeed, device);
  ASSERT_TRUE(again.ok());
  for (size_t i = 0; i < cases->size(); ++i)
    for (const auto& [name, t] : (*cases)[i].feeds)
      EXPECT_EQ(t.bytes, (*again)[i].feeds.at(name).bytes) << (*cases)[i].id << " " << name;
}

TEST(RemoteConformance, CorrectOutputsPassWithTheNativeSourceHash) {
  RemoteDevice device;
  device.limits.backend = "webgpu";
  for (const char* group : {"add", "sum", "matmul"}) {
    auto g = JudgeRemote(group, policy::Tier::kProd, kSeed, device,
                         CorrectAnswers(group, policy::Tier::kProd, device, false));
    ASSERT_TRUE(g.ok()) << group;
    EXPECT_TRUE(g->passed()) << group;
    EXPECT_EQ(g->cases.size(), CasesFor(group).size());
    EXPECT_GT(g->elements, 0);
    auto hash = SourceHash(group, policy::Tier::kProd);
    ASSERT_TRUE(hash.ok());
    EXPECT_EQ(g->source_hash, *hash)
        << group << ": a receipt must name the WGSL the engine generates";
  }
}

TEST(RemoteConformance, WrongMissingOrUnwrittenOutputsFail) {
  RemoteDevice device;
  device.limits.backend = "webgpu";
  const auto correct = CorrectAnswers("mul", policy::Tier::kProd, device, false);
  const std::string first = FirstNonEmpty(correct);
  ASSERT_FALSE(first.empty());

  auto wrong = correct;
  wrong[first].out.back() += 1.0f;
  auto g = JudgeRemote("mul", policy::Tier::kProd, kSeed, device, wrong);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->passed());

  auto unwritten = correct;
  uint32_t poison = runtime::kPoisonBits;
  std::memcpy(&unwritten[first].out.front(), &poison, 4);
  g = JudgeRemote("mul", policy::Tier::kProd, kSeed, device, unwritten);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->passed());
  bool said = false;
  for (const CaseResult& c : g->cases) said |= c.comparison.unwritten == 1;
  EXPECT_TRUE(said) << "the poisoned element is reported as unwritten";

  auto missing = correct;
  missing.erase(first);
  g = JudgeRemote("mul", policy::Tier::kProd, kSeed, device, missing);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->passed());
  for (const CaseResult& c : g->cases) {
    if (c.id != first) continue;
    EXPECT_NE(c.error.find("no answer"), std::string::npos) << c.error;
  }

  auto failed = correct;
  failed[first].error = "device lost";
  g = JudgeRemote("mul", policy::Tier::kProd, kSeed, device, failed);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->passed());

  // Another seed's data does not pass for this seed's.
  g = JudgeRemote("mul", policy::Tier::kProd, kSeed + 1, device, correct);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->passed());
}

TEST(RemoteConformance, DebugTierNeedsIdenticalReruns) {
  RemoteDevice device;
  device.limits.backend = "webgpu";
  auto without = CorrectAnswers("relu", policy::Tier::kDebug, device, false);
  auto g = JudgeRemote("relu", policy::Tier::kDebug, kSeed, device, without);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->passed());

  auto with = CorrectAnswers("relu", policy::Tier::kDebug, device, true);
  g = JudgeRemote("relu", policy::Tier::kDebug, kSeed, device, with);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->passed());

  auto differ = with;
  const std::string first = FirstNonEmpty(with);
  ASSERT_FALSE(first.empty());
  auto& r = *differ[first].rerun;
  uint32_t bits;
  std::memcpy(&bits, &r.front(), 4);
  bits ^= 1;  // one ulp: within tolerance, but not the same bits
  std::memcpy(&r.front(), &bits, 4);
  g = JudgeRemote("relu", policy::Tier::kDebug, kSeed, device, differ);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->passed());
}

TEST(RemoteConformance, UnknownGroupIsRefused) {
  auto cases = RemoteCases("nosuchop", policy::Tier::kProd, kSeed, {});
  ASSERT_FALSE(cases.ok());
  EXPECT_EQ(cases.errors().front().code, "unknown-op");
}

}  // namespace
}  // namespace scellis::conform
