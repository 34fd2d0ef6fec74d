// Browser conformance jobs without a browser: the answers a tab would send, chunk by chunk, and
// what the judgement is handed; the bounds (jobs kept, offsets, lengths, runs) refused by name.
#include "api/browser_jobs.h"

#include <gtest/gtest.h>

#include <cstring>

namespace scellis::api {
namespace {

BrowserAdapter SwiftShaderTab() {
  BrowserAdapter a;
  a.vendor = "google";
  a.architecture = "swiftshader";
  a.description = "SwiftShader device";
  a.is_software = true;
  return a;
}

std::string BytesOf(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// The runnable case of a job with the largest output, and its output's size.
std::pair<int64_t, int64_t> LargestRunnable(const BrowserJobs::Started& s) {
  std::pair<int64_t, int64_t> best = {-1, 0};
  for (size_t i = 0; i < s.cases.size(); ++i)
    if (s.cases[i].program && s.cases[i].program->outputs[0].bytes > best.second)
      best = {static_cast<int64_t>(i), s.cases[i].program->outputs[0].bytes};
  return best;
}

TEST(BrowserJobs, AnswersArriveInOrderAndOnlyCompleteOnesAreJudged) {
  BrowserJobs jobs;
  auto started = jobs.Start("relu", "prod", 7, SwiftShaderTab());
  ASSERT_TRUE(started.ok()) << started.errors().front().Format();
  EXPECT_EQ(started->runs, 1);
  const auto [index, bytes] = LargestRunnable(started.value());
  ASSERT_GE(index, 0);
  ASSERT_GE(bytes, 8);
  const int64_t n = bytes / 4;
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = 0.5f * static_cast<float>(i);
  const std::string whole = BytesOf(out);
  const std::string job = started->job;

  EXPECT_EQ(jobs.Append(job, index, 0, 4, whole.substr(0, 4)).errors().front().code, "bad-offset");
  EXPECT_EQ(jobs.Append(job, index, 1, 0, whole).errors().front().code, "not-found")
      << "the prod tier runs each case once";
  EXPECT_EQ(jobs.Append(job, 100000, 0, 0, whole).errors().front().code, "not-found");
  auto first = jobs.Append(job, index, 0, 0, whole.substr(0, 4));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->received, 4);
  EXPECT_EQ(first->bytes, bytes);
  EXPECT_EQ(jobs.Append(job, index, 0, 4, whole.substr(4) + "xxxx").errors().front().code,
            "answer-too-long");
  ASSERT_TRUE(jobs.Append(job, index, 0, 4, whole.substr(4)).ok());

  // A second runnable case sent half: no answer for it; a third failed in the tab.
  std::vector<int64_t> others;
  for (size_t i = 0; i < started->cases.size(); ++i)
    if (started->cases[i].program && static_cast<int64_t>(i) != index &&
        started->cases[i].program->outputs[0].bytes >= 8)
      others.push_back(static_cast<int64_t>(i));
  ASSERT_GE(others.size(), 2u);
  ASSERT_TRUE(jobs.Append(job, others[0], 0, 0, whole.substr(0, 4)).ok());
  auto failed = jobs.Fail(job, others[1], "device lost");
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed.value(), started->cases[others[1]].id);

  auto taken = jobs.Take(job);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(taken->op, "relu");
  EXPECT_EQ(taken->seed, 7u);
  const auto& answers = taken->answers;
  ASSERT_TRUE(answers.count(started->cases[index].id));
  EXPECT_EQ(answers.at(started->cases[index].id).out, out);
  EXPECT_FALSE(answers.count(started->cases[others[0]].id)) << "an incomplete output is no answer";
  EXPECT_EQ(answers.at(started->cases[others[1]].id).error, "device lost");
  EXPECT_EQ(jobs.Take(job).errors().front().code, "not-found") << "a job is judged once";
}

TEST(BrowserJobs, TheDebugTierCollectsTwoRunsAndANewJobDropsTheOldest) {
  BrowserJobs jobs;
  std::vector<std::string> ids;
  size_t empty_outputs = 0;  // of the last job: complete before anything is sent
  for (size_t i = 0; i <= kMaxBrowserJobs; ++i) {
    auto s = jobs.Start("relu", "debug", i, SwiftShaderTab());
    ASSERT_TRUE(s.ok()) << s.errors().front().Format();
    EXPECT_EQ(s->runs, 2);
    ids.push_back(s->job);
    empty_outputs = 0;
    for (const conform::RemoteCase& c : s->cases)
      empty_outputs += c.program && c.program->outputs[0].bytes == 0;
  }
  EXPECT_EQ(jobs.Take(ids.front()).errors().front().code, "not-found");
  auto kept = jobs.Take(ids.back());
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->answers.size(), empty_outputs) << "nothing was sent";
  EXPECT_EQ(jobs.Start("relux", "prod", 1, SwiftShaderTab()).errors().front().code, "unknown-op");
}

}  // namespace
}  // namespace scellis::api
