// The backend seam. Executor and Prepared are what every caller uses: their public calls are
// non-virtual and validate their arguments in one place (feed names, shapes and dtypes, step
// counts, watched and downloaded names, uploads), with named diagnostics, before a backend's
// protected hook runs. A backend therefore only ever sees arguments that make sense for the plan.
// A run always says which backend and executor ran and why any fallback happened.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/host_tensor.h"
#include "base/json_util.h"
#include "base/result.h"
#include "base/tensor_type.h"
#include "execplan/plan.h"
#include "runtime/device_profile.h"

namespace scellis::runtime {

using scellis::HostTensor;

// Data for input nodes without inline data, by the input's name (its label, else its id). A feed
// for a param replaces its initializer (weights carried from a previous step), and a feed for an
// input with inline data replaces the data. Every feed must name an input or param of the plan
// and match its shape and dtype.
using Feeds = std::map<std::string, HostTensor>;

// The bit pattern poisoned outputs are filled with: a quiet NaN with a payload no kernel computes,
// so an element that still holds it after a run was never written.
inline constexpr uint32_t kPoisonBits = 0x7fc0deadu;

// The most steps one RunSteps call takes (one submission on a GPU).
inline constexpr size_t kMaxStepsPerRun = 64;
// The most runs started and not yet finished (Prepared::StartSteps): two keep the device busy
// while the host records the next run and reads the last one's values.
inline constexpr size_t kMaxRunsInFlight = 2;

// How a GPU backend encodes a run. The fused encoder records every iteration of every step of a
// run into one submission; the generic executor submits each iteration alone (the degradation
// path, pinned for comparisons).
inline constexpr const char* kFusedEncoder = "fused-encoder";
inline constexpr const char* kGenericExecutor = "generic";

struct RunOptions {
  // Before each kernel, fill the buffer it writes with kPoisonBits, so an element a kernel fails
  // to write reads back as the sentinel (or turns its consumers' results into NaN). Conformance
  // uses it. Backends that cannot leave an element unwritten (the CPU reference) ignore it.
  bool poison_outputs = false;
  // One of the backend's executors() to pin, or "" for its first (best) one.
  std::string executor;
  // Profiling (WebGPU; the CPU reference ignores it): the dispatches of the device program with
  // these indices are not recorded in any step, so the results are wrong by design and the run's
  // stats say `left_out_dispatches`. What a step costs without each dispatch is what that dispatch
  // costs in the stream, which GPU timestamps (a pass of its own per dispatch) overstate.
  std::vector<int> leave_out_dispatches;
};

struct RunResult {
  std::string backend;   // "cpu" | "webgpu" | "null"
  std::string executor;  // how the plan ran, e.g. "reference" or "fused-encoder"
  std::optional<std::string> fallback_reason;  // null when the requested backend ran
  std::vector<std::string> attempts;           // every backend tried, with why it was passed over
  std::vector<std::pair<std::string, HostTensor>> outputs;  // in the graph's output order
  Json stats = Json::object();
  std::vector<Diagnostic> notes;
};

struct StepsResult {
  // For each watched output, its value after every step, in watch order.
  std::vector<std::pair<std::string, std::vector<HostTensor>>> watched;
  Json stats = Json::object();
};

class Prepared;

class Executor {
 public:
  virtual ~Executor() = default;

  // Runs `plan` once with `feeds`; every named output is returned.
  Result<RunResult> Run(const execplan::Plan& plan, const Feeds& feeds,
                        const RunOptions& options = {});
  // Makes the plan resident for a session (see Prepared). `feeds` may give params and inputs
  // their starting values (a feed wins over an initializer).
  Result<std::unique_ptr<Prepared>> Prepare(const execplan::Plan& plan, const Feeds& feeds = {},
                                            const RunOptions& options = {});

  // "cpu" | "webgpu" | "null".
  virtual std::string name() const = 0;
  // The ways this backend can run a plan, best first (RunOptions::executor pins one).
  virtual std::vector<std::string> executors() const = 0;
  virtual DeviceProfile profile() const = 0;
  // The limits a plan for this executor is judged against.
  virtual execplan::DeviceLimits limits() const { return {}; }
  // Ok, or the error that made the executor unusable (a lost or poisoned device).
  virtual Status health() const { return Status::Ok(); }

 protected:
  // Called with a plan that is not red and feeds that passed ValidateFeeds.
  virtual Result<RunResult> DoRun(const execplan::Plan& plan, const Feeds& feeds,
                                  const RunOptions& options) = 0;
  virtual Result<std::unique_ptr<Prepared>> DoPrepare(const execplan::Plan& plan,
                                                      const Feeds& feeds,
                                                      const RunOptions& options) = 0;
};

// A plan made resident on a backend: buffers allocated, sources uploaded and pipelines built
// once; then any number of runs of one or many steps. Between steps the graph's carries copy each
// carried output into its input on the device, so weights and optimizer state never leave it.
class Prepared {
 public:
  explicit Prepared(const execplan::Plan& plan) : plan_(plan) {}
  virtual ~Prepared() = default;

  // Runs feeds.size() steps (1 to kMaxStepsPerRun) in one submission. Inputs without inline data
  // take their value from the step's feeds (by FeedName), or keep their value from the previous
  // step when they are carried. Only the outputs named in `watch` are read back. A step of a plan
  // with a `repeat` of N is N iterations of the graph, carries between; the watched values are
  // the last iteration's.
  Result<StepsResult> RunSteps(const std::vector<Feeds>& feeds,
                               const std::vector<std::string>& watch);
  // A run in two halves, so the host prepares and records the next run while the device still
  // runs this one: StartSteps checks its arguments as RunSteps does and starts the run;
  // FinishSteps waits for the oldest started run and returns what RunSteps would have returned
  // for it. Runs execute in the order they were started, so results and state are those of
  // sequential RunSteps calls. At most kMaxRunsInFlight runs are started and not finished
  // (`too-many-runs-in-flight`); FinishSteps with none is `no-run-in-flight`; while any run is in
  // flight, RunSteps, Download, Upload and CopyFrom are refused (`runs-in-flight`). A backend
  // that cannot overlap runs (the CPU reference) runs the steps in StartSteps.
  Status StartSteps(const std::vector<Feeds>& feeds, const std::vector<std::string>& watch);
  Result<StepsResult> FinishSteps();
  size_t runs_in_flight() const { return runs_in_flight_; }
  // Reads the current value of a named output or input, by name.
  Result<HostTensor> Download(const std::string& name);
  // Replaces the current value of a param or carried input (a checkpoint being restored); the
  // value must have the input's shape and dtype.
  Status Upload(const std::string& name, const HostTensor& value);
  // Replaces the value of this plan's param or input `name` with the current value of the output
  // or input `name` of `source`, another plan of the same type there: state handed from one
  // resident plan to another. Between plans on one device it never leaves the device (where the
  // backend can copy buffers); otherwise it goes through the host.
  Status CopyFrom(Prepared& source, const std::string& name);

  virtual std::string backend() const = 0;

  // How its steps run: the word a one-shot run on the same backend reports as its executor.

  virtual std::string executor() const = 0;
  const execplan::Plan& plan() const { return plan_; }

 protected:
  // `watch` holds the nodes of the watched names (validated), in order.
  virtual Result<StepsResult> DoRunSteps(const std::vector<Feeds>& feeds,
                                         const std::vector<std::string>& names,
                                         const std::vector<int>& watch) = 0;
  // Starts a run (arguments as DoRunSteps'). By default the run happens here, whole, and
  // DoFinishSteps hands its result back.
  virtual Status DoStartSteps(const std::vector<Feeds>& feeds,
                              const std::vector<std::string>& names, const std::vector<int>& watch);
  // The oldest started run's result; called only with a run in flight.
  virtual Result<StepsResult> DoFinishSteps();
  // `node` is an output's node or an input/param.
  virtual Result<HostTensor> DoDownload(int node) = 0;
  // `node` is an input or param whose type `value` matches.
  virtual Status DoUpload(int node, const HostTensor& value) = 0;
  // `node` is this plan's input or param, `source_node` the node of `source` with its type. By
  // default the source's value is downloaded, then uploaded here.
  virtual Status DoCopyFrom(Prepared& source, int source_node, int node);

  execplan::Plan plan_;

 private:
  // RunSteps' checks; the watched names' nodes.
  Result<std::vector<int>> CheckRun(const std::vector<Feeds>& feeds,
                                    const std::vector<std::string>& watch) const;
  // `runs-in-flight` while a started run is not finished.
  Status NoRunInFlight(const std::string& call) const;

  size_t runs_in_flight_ = 0;
  std::deque<StepsResult> finished_;  // the default DoStartSteps' results
};

// ---- shared by the backends ----

// The name a feed must use for input node `n`.
std::string FeedName(const webir::Node& n);

// The host-side value of a source node: a feed, inline data, an initializer's values or a
// constant, in the node's dtype. Feeds were validated by the seam.
Result<HostTensor> SourceData(const webir::Node& n, const Feeds& feeds);

// Checks feeds against the plan's inputs: each names an input or param (`bad-feed`), with its
// shape and dtype and byte count (`bad-feed`).
Status ValidateFeeds(const webir::Graph& g, const Feeds& feeds);

// The node a Download or watch name refers to (an output's node, or an input with that feed
// name), -1 if none.
int FindNamedNode(const webir::Graph& g, const std::string& name);
// The input or param with feed name `name` (what an Upload replaces), -1 if none.
int FindSourceNode(const webir::Graph& g, const std::string& name);
// Which inputs are carried and which fed each step: the graph's own facts (webir/graph.h).
using webir::FedInputs;
using webir::IsCarried;

}  // namespace scellis::runtime
