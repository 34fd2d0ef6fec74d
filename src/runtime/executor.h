// What every backend shares: host tensors, feeds, the result of a run, and the executor interface.
// A run always says which backend and executor ran and why any fallback happened.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"
#include "base/tensor_type.h"
#include "execplan/plan.h"

namespace scellis::runtime {

struct HostTensor {
  TensorType type;
  std::vector<float> data;
};

// Data for input nodes without inline data, by the input's name (its label, else its id). A feed
// for a param replaces its initializer (weights carried from a previous step), and a feed for an
// input with inline data replaces the data.
using Feeds = std::map<std::string, HostTensor>;

struct RunResult {
  std::string backend;   // "cpu" | "webgpu"
  std::string executor;  // how the plan ran, e.g. "reference" or "fused-encoder"
  std::optional<std::string> fallback_reason;  // null when the requested backend ran
  std::vector<std::string> attempts;           // every backend tried, with why it was passed over
  std::vector<std::pair<std::string, HostTensor>> outputs;  // in the graph's output order
  Json stats = Json::object();
  std::vector<Diagnostic> notes;
};

class Prepared;

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  virtual Result<RunResult> Run(const execplan::Plan& plan, const Feeds& feeds) = 0;
  // Makes the plan resident for a session (see prepared.h).
  virtual Result<std::unique_ptr<Prepared>> Prepare(const execplan::Plan& plan) = 0;
};

// The host-side data of a source node: inline data, a feed, an initializer's values or a constant.
Result<std::vector<float>> SourceData(const webir::Node& n, const Feeds& feeds);

// The name a feed must use for input node `n`.
std::string FeedName(const webir::Node& n);

// `{"backend": ..., "outputs": {"values": {"shape": [3], "dtype": "f32", "data": [...]}}, ...}`.
Json ResultToJson(const RunResult& r);

}  // namespace scellis::runtime
