#include "api/browser_jobs.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

namespace scellis::api {
namespace {

std::string NewJobId() {
  std::random_device rd;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return buf;
}

Diagnostic NotFound(const std::string& message, const std::string& help = "") {
  return UserError("not-found", "", message, help);
}

std::vector<float> Floats(const std::vector<std::byte>& b) {
  std::vector<float> f(b.size() / 4);
  std::memcpy(f.data(), b.data(), f.size() * 4);
  return f;
}

}  // namespace

Result<BrowserJobs::Started> BrowserJobs::Start(const std::string& op, const std::string& tier,
                                                uint64_t seed, const BrowserAdapter& adapter) {
  SCELLIS_ASSIGN_OR_RETURN(std::vector<conform::RemoteCase> cases,
                           BrowserCases(op, tier, seed, adapter));
  Started started;
  started.runs = tier == "debug" ? 2 : 1;
  Job job;
  job.tier = tier;
  job.op = op;
  job.seed = seed;
  job.adapter = adapter;
  int64_t total = 0;
  for (const conform::RemoteCase& rc : cases) {
    const int64_t bytes = rc.program ? rc.program->outputs.at(0).bytes : 0;
    job.case_ids.push_back(rc.program ? rc.id : "");
    job.output_bytes.push_back(bytes);
    total += bytes * started.runs;
  }
  if (total > kMaxBrowserAnswerBytes)
    return UserError("request-too-large", "/op",
                     "the answers of \"" + op + "\" would be " + std::to_string(total) +
                         " bytes, over the server's " + std::to_string(kMaxBrowserAnswerBytes));
  for (auto& runs : job.runs) runs.resize(job.case_ids.size());
  job.errors.resize(job.case_ids.size());
  started.job = NewJobId();
  started.cases = std::move(cases);
  std::lock_guard<std::mutex> lock(lock_);
  while (order_.size() >= kMaxBrowserJobs) {
    jobs_.erase(order_.front());
    order_.erase(order_.begin());
  }
  jobs_[started.job] = std::move(job);
  order_.push_back(started.job);
  return started;
}

Result<BrowserJobs::Job*> BrowserJobs::Find(const std::string& job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end())
    return NotFound("there is no browser conformance job by that id",
                    "jobs are what POST /api/conform/browser returns; the server keeps the " +
                        std::to_string(kMaxBrowserJobs) + " newest");
  return &it->second;
}

Result<size_t> BrowserJobs::RunnableCase(const Job& job, int64_t index) const {
  if (index < 0 || index >= static_cast<int64_t>(job.case_ids.size()) ||
      job.case_ids[static_cast<size_t>(index)].empty())
    return NotFound("there is no runnable case " + std::to_string(index) + " in this job");
  return static_cast<size_t>(index);
}

Result<BrowserJobs::Received> BrowserJobs::Append(const std::string& id, int64_t index,
                                                  int64_t run, int64_t offset,
                                                  std::string_view bytes) {
  std::lock_guard<std::mutex> lock(lock_);
  SCELLIS_ASSIGN_OR_RETURN(Job * job, Find(id));
  SCELLIS_ASSIGN_OR_RETURN(size_t i, RunnableCase(*job, index));
  const int runs = job->tier == "debug" ? 2 : 1;
  if (run < 0 || run >= runs)
    return NotFound("there is no run " + std::to_string(run) + " of this case (the tier runs each case " +
                    std::to_string(runs) + " time" + (runs > 1 ? "s" : "") + ")");
  std::vector<std::byte>& have = job->runs[run][i];
  if (offset != static_cast<int64_t>(have.size()))
    return UserError("bad-offset", "",
                     "this chunk starts at byte " + std::to_string(offset) +
                         "; the answer so far has " + std::to_string(have.size()),
                     "send the chunks in order");
  if (static_cast<int64_t>(have.size() + bytes.size()) > job->output_bytes[i])
    return UserError("answer-too-long", "",
                     "the output of " + job->case_ids[i] + " has " +
                         std::to_string(job->output_bytes[i]) + " bytes; this chunk goes past it");
  const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
  have.insert(have.end(), p, p + bytes.size());
  return Received{job->case_ids[i], static_cast<int64_t>(have.size()), job->output_bytes[i]};
}

Result<std::string> BrowserJobs::Fail(const std::string& id, int64_t index,
                                      const std::string& error) {
  std::lock_guard<std::mutex> lock(lock_);
  SCELLIS_ASSIGN_OR_RETURN(Job * job, Find(id));
  SCELLIS_ASSIGN_OR_RETURN(size_t i, RunnableCase(*job, index));
  job->errors[i] = error.substr(0, 1000);
  return job->case_ids[i];
}

Result<BrowserJobs::Answers> BrowserJobs::Take(const std::string& id) {
  Job job;
  {
    std::lock_guard<std::mutex> lock(lock_);
    SCELLIS_ASSIGN_OR_RETURN(Job * found, Find(id));
    job = std::move(*found);
    jobs_.erase(id);
    order_.erase(std::remove(order_.begin(), order_.end(), id), order_.end());
  }
  Answers a;
  a.op = job.op;
  a.tier = job.tier;
  a.seed = job.seed;
  a.adapter = job.adapter;
  const bool debug = job.tier == "debug";
  for (size_t i = 0; i < job.case_ids.size(); ++i) {
    if (job.case_ids[i].empty()) continue;
    conform::RemoteAnswer answer;
    if (!job.errors[i].empty()) {
      answer.error = job.errors[i];
    } else {
      auto complete = [&](int run) {
        return static_cast<int64_t>(job.runs[run][i].size()) == job.output_bytes[i];
      };
      if (!complete(0) || (debug && !complete(1))) continue;  // judged as "no answer"
      answer.out = Floats(job.runs[0][i]);
      if (debug) answer.rerun = Floats(job.runs[1][i]);
    }
    a.answers[job.case_ids[i]] = std::move(answer);
  }
  return a;
}

}  // namespace scellis::api
