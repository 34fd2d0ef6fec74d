#include "runtime/executor.h"

#include <algorithm>
#include <cmath>

#include "webir/op_rules.h"

namespace scellis::runtime {
namespace {

std::string TypeText(const TensorType& t) {
  return t.ShapeStringWithSizes() + " " + DTypeName(t.dtype);
}

// Checks a host value against the type of the node it is meant for.
Status CheckValue(const char* code, const std::string& what, const webir::Node& n,
                  const HostTensor& v) {
  if (!v.type.SameShape(n.type) || v.type.dtype != n.type.dtype) {
    return UserError(code, n.origin,
                     what + " is " + TypeText(v.type) + ", the input \"" + FeedName(n) + "\" is " +
                         TypeText(n.type));
  }
  if (static_cast<int64_t>(v.bytes.size()) != n.type.bytes()) {
    return UserError(code, n.origin,
                     what + " holds " + std::to_string(v.bytes.size()) + " bytes, a " +
                         TypeText(n.type) + " tensor is " + std::to_string(n.type.bytes()));
  }
  return Status::Ok();
}

Result<int> WatchedNode(const webir::Graph& g, const std::string& name) {
  int node = FindNamedNode(g, name);
  if (node < 0) {
    std::string known;
    for (const webir::Output& o : g.outputs) known += (known.empty() ? "" : ", ") + o.name;
    return UserError("unknown-output", "", "no output or input is named \"" + name + "\"",
                     known.empty() ? "" : "outputs: " + known);
  }
  return node;
}

// Fed indices are checked before any kernel reads them (kernels trust their indices): a value
// outside its axis is a run-time error, which poisons a session, naming the feed and the position.
Status CheckFedIndices(const webir::Graph& g, const Feeds& feeds) {
  SCELLIS_ASSIGN_OR_RETURN(std::vector<webir::IndexUse> uses, webir::IndexUses(g));
  for (const webir::IndexUse& u : uses) {
    const webir::Node& s = g.at(u.source);
    if (s.role != webir::Role::kInput || s.data) continue;
    auto it = feeds.find(FeedName(s));
    if (it == feeds.end()) continue;
    SCELLIS_TRY(webir::CheckIndexValues(g, u, it->second, ErrorKind::kRuntime,
                                        "the feed \"" + FeedName(s) + "\""));
  }
  return Status::Ok();
}

// matmul_fixed's operands, when one of them is fed: the product must fit i32 (a run-time
// fixed-point-overflow that poisons a session, naming the output position), since the kernels
// keep only its low 64 bits. Known operands were checked when the graph was made.
Status CheckFedFixedPoint(const webir::Graph& g, const Feeds& feeds) {
  SCELLIS_ASSIGN_OR_RETURN(std::vector<webir::FixedPointUse> uses, webir::FixedPointUses(g));
  for (const webir::FixedPointUse& u : uses) {
    const webir::Node& a = g.at(u.a);
    const webir::Node& b = g.at(u.b);
    auto fed = [](const webir::Node& s) { return s.role == webir::Role::kInput && !s.data; };
    if (!fed(a) && !fed(b)) continue;
    // A step that does not feed both leaves them to the step that does.
    if ((fed(a) && !feeds.count(FeedName(a))) || (fed(b) && !feeds.count(FeedName(b)))) continue;
    SCELLIS_ASSIGN_OR_RETURN(HostTensor va, SourceData(a, feeds));
    SCELLIS_ASSIGN_OR_RETURN(HostTensor vb, SourceData(b, feeds));
    SCELLIS_TRY(webir::CheckFixedPointValues(g, u, va, vb, ErrorKind::kRuntime, "the fed values"));
  }
  return Status::Ok();
}

Status RefuseRed(const execplan::Plan& plan) {
  if (plan.verdict == execplan::Verdict::kRed) {
    if (!plan.findings.empty()) return Status(plan.findings);
    return InternalError("runtime", "asked to run a red plan");
  }
  return Status::Ok();
}

// A pinned executor must be one the backend has.
Status CheckExecutor(const Executor& exec, const RunOptions& options) {
  if (options.executor.empty()) return Status::Ok();
  const std::vector<std::string> have = exec.executors();
  if (std::find(have.begin(), have.end(), options.executor) != have.end()) return Status::Ok();
  std::string known;
  for (const std::string& e : have) known += (known.empty() ? "" : ", ") + e;
  return UserError("executor-unavailable", "",
                   "the " + exec.name() + " backend has no executor \"" + options.executor + "\"",
                   "its executors: " + known);
}

}  // namespace

std::string FeedName(const webir::Node& n) {
  return n.label.empty() ? n.name : n.label;
}

Status ValidateFeeds(const webir::Graph& g, const Feeds& feeds) {
  for (const auto& [name, value] : feeds) {
    int node = FindSourceNode(g, name);
    if (node < 0) {
      std::string known;
      for (const webir::Node& n : g.nodes)
        if (n.role == webir::Role::kInput || n.role == webir::Role::kParam)
          known += (known.empty() ? "" : ", ") + FeedName(n);
      return UserError("bad-feed", "", "the feed \"" + name + "\" names no input or param",
                       known.empty() ? "the plan has no inputs" : "inputs: " + known);
    }
    SCELLIS_TRY(CheckValue("bad-feed", "the feed \"" + name + "\"", g.at(node), value));
  }
  return Status::Ok();
}

Result<HostTensor> SourceData(const webir::Node& n, const Feeds& feeds) {
  const int64_t count = n.type.elements();
  if (n.role == webir::Role::kConst) {
    // As a double, so an integer constant past 2^24 is stored exactly.
    std::vector<double> v(static_cast<size_t>(count), n.attrs["value"].get<double>());
    return HostTensor::FromValues(n.type, v);
  }
  // A feed wins over an initializer: evaluation feeds trained weights into the params by name.
  if (auto it = feeds.find(FeedName(n)); it != feeds.end()) return it->second;
  if (n.role == webir::Role::kParam && n.init)
    return HostTensor::FromFloats(n.type, n.init->Generate(count));
  if (n.data) return HostTensor::FromValues(n.type, *n.data);
  return UserError("missing-input-data", n.origin,
                   "the input \"" + FeedName(n) + "\" has no data and no feed",
                   "give it \"data\" in the document, or feed it when running a session");
}

int FindSourceNode(const webir::Graph& g, const std::string& name) {
  for (const webir::Node& n : g.nodes)
    if ((n.role == webir::Role::kInput || n.role == webir::Role::kParam) && FeedName(n) == name)
      return n.id;
  return -1;
}

int FindNamedNode(const webir::Graph& g, const std::string& name) {
  for (const webir::Output& o : g.outputs)
    if (o.name == name) return o.node;
  return FindSourceNode(g, name);
}

// ---- the seam ----

Result<RunResult> Executor::Run(const execplan::Plan& plan, const Feeds& feeds,
                                const RunOptions& options) {
  SCELLIS_TRY(RefuseRed(plan));
  SCELLIS_TRY(CheckExecutor(*this, options));
  SCELLIS_TRY(ValidateFeeds(plan.graph(), feeds));
  SCELLIS_TRY(CheckFedIndices(plan.graph(), feeds));
  SCELLIS_TRY(CheckFedFixedPoint(plan.graph(), feeds));
  // Every input without inline data must be fed, carried ones included: a one-shot run has no
  // previous step. Params fall back to their initializers.
  for (const webir::Node& n : plan.graph().nodes)
    if (n.role == webir::Role::kInput && !n.data && !feeds.count(FeedName(n)))
      return SourceData(n, feeds).status();
  return DoRun(plan, feeds, options);
}

Result<std::unique_ptr<Prepared>> Executor::Prepare(const execplan::Plan& plan, const Feeds& feeds,
                                                    const RunOptions& options) {
  SCELLIS_TRY(RefuseRed(plan));
  SCELLIS_TRY(CheckExecutor(*this, options));
  SCELLIS_TRY(ValidateFeeds(plan.graph(), feeds));
  SCELLIS_TRY(CheckFedIndices(plan.graph(), feeds));
  SCELLIS_TRY(CheckFedFixedPoint(plan.graph(), feeds));
  return DoPrepare(plan, feeds, options);
}

Result<std::vector<int>> Prepared::CheckRun(const std::vector<Feeds>& feeds,
                                            const std::vector<std::string>& watch) const {
  if (feeds.empty() || feeds.size() > kMaxStepsPerRun) {
    return UserError("bad-step-count", "",
                     "a run takes 1 to " + std::to_string(kMaxStepsPerRun) + " steps, got " +
                         std::to_string(feeds.size()),
                     "split longer runs into several calls");
  }
  const webir::Graph& g = plan_.graph();
  std::vector<int> nodes;
  for (const std::string& w : watch) {
    SCELLIS_ASSIGN_OR_RETURN(int node, WatchedNode(g, w));
    nodes.push_back(node);
  }
  const std::vector<int> fed = FedInputs(g);
  for (const Feeds& step : feeds) {
    SCELLIS_TRY(ValidateFeeds(g, step));
    SCELLIS_TRY(CheckFedIndices(g, step));
    SCELLIS_TRY(CheckFedFixedPoint(g, step));
    for (int node : fed)
      if (!step.count(FeedName(g.at(node)))) return SourceData(g.at(node), step).status();
  }
  return nodes;
}

Status Prepared::NoRunInFlight(const std::string& call) const {
  if (runs_in_flight_ == 0) return Status::Ok();
  Diagnostic d = UserError(
      "runs-in-flight", "",
      call + " while " + std::to_string(runs_in_flight_) + " started run(s) are not finished",
      "finish the started runs first (FinishSteps)");
  d.kind = ErrorKind::kState;
  return d;
}

Result<StepsResult> Prepared::RunSteps(const std::vector<Feeds>& feeds,
                                       const std::vector<std::string>& watch) {
  SCELLIS_TRY(NoRunInFlight("a run"));
  SCELLIS_ASSIGN_OR_RETURN(std::vector<int> nodes, CheckRun(feeds, watch));
  return DoRunSteps(feeds, watch, nodes);
}

Status Prepared::StartSteps(const std::vector<Feeds>& feeds,
                            const std::vector<std::string>& watch) {
  if (runs_in_flight_ >= kMaxRunsInFlight) {
    Diagnostic d = UserError("too-many-runs-in-flight", "",
                             "a run was started while " + std::to_string(runs_in_flight_) +
                                 " started runs are not finished; at most " +
                                 std::to_string(kMaxRunsInFlight) + " may be in flight",
                             "finish the oldest run (FinishSteps) before starting another");
    d.kind = ErrorKind::kState;
    return d;
  }
  SCELLIS_ASSIGN_OR_RETURN(std::vector<int> nodes, CheckRun(feeds, watch));
  SCELLIS_TRY(DoStartSteps(feeds, watch, nodes));
  runs_in_flight_++;
  return Status::Ok();
}

Result<StepsResult> Prepared::FinishSteps() {
  if (runs_in_flight_ == 0) {
    Diagnostic d = UserError("no-run-in-flight", "", "no started run is waiting to be finished",
                             "start a run first (StartSteps)");
    d.kind = ErrorKind::kState;
    return d;
  }
  runs_in_flight_--;
  return DoFinishSteps();
}

Status Prepared::DoStartSteps(const std::vector<Feeds>& feeds,
                              const std::vector<std::string>& names,
                              const std::vector<int>& watch) {
  SCELLIS_ASSIGN_OR_RETURN(StepsResult r, DoRunSteps(feeds, names, watch));
  finished_.push_back(std::move(r));
  return Status::Ok();
}

Result<StepsResult> Prepared::DoFinishSteps() {
  StepsResult r = std::move(finished_.front());
  finished_.pop_front();
  return r;
}

Result<HostTensor> Prepared::Download(const std::string& name) {
  SCELLIS_TRY(NoRunInFlight("a download"));
  SCELLIS_ASSIGN_OR_RETURN(int node, WatchedNode(plan_.graph(), name));
  return DoDownload(node);
}

Status Prepared::Upload(const std::string& name, const HostTensor& value) {
  SCELLIS_TRY(NoRunInFlight("an upload"));
  int node = FindSourceNode(plan_.graph(), name);
  if (node < 0) {
    return UserError("bad-upload", "", "no input or param is named \"" + name + "\"",
                     "an upload replaces the value of a param or an input");
  }
  SCELLIS_TRY(
      CheckValue("bad-upload", "the upload to \"" + name + "\"", plan_.graph().at(node), value));
  SCELLIS_TRY(CheckFedIndices(plan_.graph(), {{name, value}}));
  SCELLIS_TRY(CheckFedFixedPoint(plan_.graph(), {{name, value}}));
  return DoUpload(node, value);
}

Status Prepared::CopyFrom(Prepared& source, const std::string& name) {
  SCELLIS_TRY(NoRunInFlight("a copy into this plan"));
  SCELLIS_TRY(source.NoRunInFlight("a copy out of this plan"));
  const int node = FindSourceNode(plan_.graph(), name);
  const int source_node = FindNamedNode(source.plan().graph(), name);
  if (node < 0 || source_node < 0) {
    return UserError("bad-upload", "",
                     "\"" + name + "\" is not " +
                         (node < 0 ? "an input or param of this plan" : "a value of the source"),
                     "a copy replaces a param or an input with the source's value of that name");
  }
  const TensorType& want = plan_.graph().at(node).type;
  const TensorType& have = source.plan().graph().at(source_node).type;
  if (!want.SameShape(have) || want.dtype != have.dtype) {
    return UserError("bad-upload", "",
                     "the copy to \"" + name + "\" is " + have.ShapeString() + " " +
                         DTypeName(have.dtype) + ", expected " + want.ShapeString() + " " +
                         DTypeName(want.dtype));
  }
  return DoCopyFrom(source, source_node, node);
}

Status Prepared::DoCopyFrom(Prepared& source, int source_node, int node) {
  SCELLIS_ASSIGN_OR_RETURN(HostTensor value, source.DoDownload(source_node));
  return DoUpload(node, value);
}

}  // namespace scellis::runtime
