// A plan made resident on a backend: buffers allocated, sources uploaded and pipelines built
// once; then any number of runs of one or many steps. Between steps the graph's carries copy each
// carried output into its input on the device, so weights and optimizer state never leave it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/executor.h"

namespace scellis::runtime {

struct StepsResult {
  // For each watched output, its value after every step (steps × elements), in watch order.
  std::vector<std::pair<std::string, std::vector<HostTensor>>> watched;
  Json stats = Json::object();
};

class Prepared {
 public:
  virtual ~Prepared() = default;

  // Runs feeds.size() steps (at least 1) in one submission. Inputs without inline data take their
  // value from the step's feeds (by FeedName), or keep their value from the previous step when
  // they are carried. Only the outputs named in `watch` are read back.
  virtual Result<StepsResult> RunSteps(const std::vector<Feeds>& feeds,
                                       const std::vector<std::string>& watch) = 0;

  // Reads the current value of a named output or a carried input, by name.
  virtual Result<HostTensor> Download(const std::string& name) = 0;

  // Replaces the current value of a param or carried input (a checkpoint being restored).
  virtual Status Upload(const std::string& name, const std::vector<float>& data) = 0;

  // "cpu" | "webgpu".
  virtual std::string backend() const = 0;
};

// Shared by the implementations: the node a Download name refers to (an output's node, or an input
// with that feed name), -1 if none.
int FindNamedNode(const webir::Graph& g, const std::string& name);
// The input or param with feed name `name` (what an Upload replaces), -1 if none.
int FindSourceNode(const webir::Graph& g, const std::string& name);

// The input or param an Upload of `elements` values to `name` replaces, or `bad-upload`.
Result<int> UploadTarget(const webir::Graph& g, const std::string& name, size_t elements);
// True when `node` is the input end of a carry.
bool IsCarried(const webir::Graph& g, int node);

// Every source input that needs data each step: not inline, not carried.
std::vector<int> FedInputs(const webir::Graph& g);

}  // namespace scellis::runtime
