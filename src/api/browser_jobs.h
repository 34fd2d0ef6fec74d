// Browser conformance in progress: the cases of one op handed to a browser tab (BrowserCases),
// and the outputs the tab sends back, chunk by chunk, until it asks for the judgement
// (JudgeBrowser). The jobs are bounded: at most kMaxBrowserJobs at a time (a new one drops the
// oldest), each for at most kMaxBrowserAnswerBytes of answers. Safe to call from many threads.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "api/conform.h"

namespace scellis::api {

inline constexpr size_t kMaxBrowserJobs = 4;
// The largest answer a job may hold: what a group's cases output, twice in the debug tier.
inline constexpr int64_t kMaxBrowserAnswerBytes = int64_t{256} << 20;

class BrowserJobs {
 public:
  struct Started {
    std::string job;
    std::vector<conform::RemoteCase> cases;
    int runs = 1;  // how many times the tab runs each case: twice in the debug tier
  };
  // The op's cases for the tab's adapter, and a job to collect their outputs in.
  // `request-too-large` when the answers would be over kMaxBrowserAnswerBytes.
  Result<Started> Start(const std::string& op, const std::string& tier, uint64_t seed,
                        const BrowserAdapter& adapter);

  struct Received {
    std::string case_id;
    int64_t received = 0, bytes = 0;  // the answer so far, and the whole output's size
  };
  // Appends a chunk of run `run` of case `index`'s output. Named refusals: `not-found` (no such
  // job, runnable case or run), `bad-offset` (the chunk does not start where the answer ends),
  // `answer-too-long` (past the output's size).
  Result<Received> Append(const std::string& job, int64_t index, int64_t run, int64_t offset,
                          std::string_view bytes);
  // The tab's run of case `index` failed with `error` (kept to 1000 bytes); its case id.
  Result<std::string> Fail(const std::string& job, int64_t index, const std::string& error);

  // Takes the job out and gathers its answers; a case whose output is incomplete has none (the
  // judgement fails it).
  struct Answers {
    std::string op, tier;
    uint64_t seed = 0;
    BrowserAdapter adapter;
    std::map<std::string, conform::RemoteAnswer> answers;
  };
  Result<Answers> Take(const std::string& job);

 private:
  struct Job {
    std::string tier, op;
    uint64_t seed = 0;
    BrowserAdapter adapter;
    std::vector<std::string> case_ids;  // in order; "" for a case that cannot run
    std::vector<int64_t> output_bytes;  // expected per case
    // Per case: the bytes of the first run and of the debug rerun, appended chunk by chunk.
    std::vector<std::vector<std::byte>> runs[2];
    std::vector<std::string> errors;  // per case: the tab's run failed
  };
  // The job and the runnable case `index` of it, or `not-found`; under lock_.
  Result<Job*> Find(const std::string& job);
  Result<size_t> RunnableCase(const Job& job, int64_t index) const;

  std::mutex lock_;
  std::map<std::string, Job> jobs_;
  std::vector<std::string> order_;  // oldest first
};

}  // namespace scellis::api
