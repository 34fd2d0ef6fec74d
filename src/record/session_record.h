// Records of prepared sessions (command "session"): what api::Session::Prepare was given — the
// document, the compile and backend settings, the initial values — and every run after it: each
// step's feeds and the watched outputs after each step. A replay (record/replay.h) prepares the
// session again on the recorded backend, runs the same steps with the same feeds and compares
// every watched output as a run's outputs are compared.
//
// A session records only when its caller asks (SessionRecorder beside it): digesting every fed
// batch costs far more than a small step on a GPU (a session's whole point). Feeds and outputs
// of at most kKeptTensorBytes are kept as blobs; a larger feed leaves a record that lists and
// verifies but whose replay is refused by name (`record-tensor-not-kept`).
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "api/session.h"
#include "record/run_record.h"

namespace scellis::record {

class SessionRecorder {
 public:
  // Digests (and keeps) `initial` in `store` and remembers what the session was prepared from.
  static Result<SessionRecorder> Start(const store::Store& store, std::string document,
                                       const pipeline::CompileOptions& compile,
                                       const runtime::SelectOptions& select,
                                       const runtime::Feeds& initial);

  // One run of the session: its steps' feeds and the watched outputs it returned.
  Status Add(const std::vector<runtime::Feeds>& steps, const std::vector<std::string>& watch,
             const runtime::StepsResult& result);

  // A run started and not yet finished (api::Session::Start): its feeds are kept until
  // FinishStarted takes the oldest one's result, as runs finish in the order they started.
  void AddStarted(std::vector<runtime::Feeds> steps, std::vector<std::string> watch);
  // The oldest started run finished: digested with `result` as Add does, or dropped when it
  // failed (null).
  Status FinishStarted(const runtime::StepsResult* result);

  // Stores the record of `session`'s runs so far; returns its run id.
  Result<std::string> Finish(const api::Session& session) const;

  int64_t runs() const { return static_cast<int64_t>(runs_.size()); }

  // The name a watched output of one step has among a session record's outputs.
  static std::string OutputName(size_t run, size_t step, const std::string& watched);

 private:
  SessionRecorder(const store::Store& store) : store_(store) {}

  struct Started {
    std::vector<runtime::Feeds> steps;
    std::vector<std::string> watch;
  };

  store::Store store_;
  std::string document_;
  std::deque<Started> started_;
  Json settings_, initial_ = Json::object(), runs_ = Json::array(), outputs_ = Json::object();
};

}  // namespace scellis::record
