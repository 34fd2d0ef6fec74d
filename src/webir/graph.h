// Rung 2: WebIR, a tensor op graph with shapes and dtypes. Every value is the single output of one
// node; nodes are kept in dependency order. Automatic differentiation happens at this rung, so the
// backward ops of a training step are ordinary nodes, visible in the printed graph.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/determinism.h"
#include "base/json_util.h"
#include "base/result.h"
#include "base/rung_header.h"
#include "base/tensor_type.h"
#include "block/program.h"
#include "ops/op_table.h"

namespace scellis::webir {

enum class Role {
  kInput,    // data from the document or fed per run
  kParam,    // trainable, initialized from a declared initializer
  kConst,    // a constant (`full`)
  kCompute,  // produced by an op
};

// What a value is for, so the memory plan can account for it by class.
enum class Purpose {
  kForward,         // ordinary forward value
  kGradient,        // produced by the backward pass
  kOptimizerState,  // moments and velocities carried between steps
  kDataset,         // a training split held on the device, each step's batch gathered from it
};

struct Node {
  int id = 0;
  std::string op;
  std::vector<int> args;
  Json attrs = Json::object();
  TensorType type;
  Role role = Role::kCompute;
  Purpose purpose = Purpose::kForward;
  std::string name;                         // printed as %name
  std::string label;                        // the user's name ("dataset"), "" if none
  std::string origin;                       // JSON pointer of the document node this came from
  std::optional<std::vector<double>> data;  // inputs with inline data (values, exact in any dtype)
  std::optional<block::Initializer> init;   // params

  std::string Describe() const;
};

struct Output {
  std::string name;
  int node;
};

// After each session step, source node `to` takes the value of node `from` (see block::Carry).
struct Carry {
  int from;
  int to;
};

// A workflow's training step, still to be appended by the append-train-step pass.
struct PendingTrainStep {
  int loss = -1;                                 // the node whose scalar value is the loss
  std::vector<int> params;                       // the param nodes the optimizer updates
  std::vector<block::OptimizerSpec> optimizers;  // one per param: its group's settings
  std::string pointer;                           // of the "train" section
  // The whole step, its gradient half or its update half (block::LowerMode).
  block::LowerMode mode = block::LowerMode::kTrainStep;
  // Mixed precision's loss scale: the backward pass starts from d loss = loss_scale, and each
  // parameter's gradient is divided by it before the update. 1 without mixed precision.
  double loss_scale = 1;
};

struct Graph : RungHeader {
  std::vector<Node> nodes;  // index == id; every node after its args
  std::vector<Output> outputs;
  std::vector<Carry> carries;
  std::optional<PendingTrainStep> train;
  // What the ops mean; the program's table, so a session's own ops stay known down the ladder.
  std::shared_ptr<const ops::OpTable> ops = ops::BuiltinOps();

  const Node& at(int id) const { return nodes.at(static_cast<size_t>(id)); }
  // Appends a node, assigning its id (and a name if it has none).
  int Add(Node n);
  // Users of each node, by id.
  std::vector<std::vector<int>> Users() const;
};

// True when `node` is the input end of a carry.
bool IsCarried(const Graph& g, int node);
// Every source input that needs data each step: not inline, not carried.
std::vector<int> FedInputs(const Graph& g);

Result<Graph> FromBlock(const block::Program& p);
std::string Print(const Graph& g);
Json ToJson(const Graph& g);
// Re-derives every node's type from its op's rule and checks ids, order and outputs.
Status Verify(const Graph& g);

}  // namespace scellis::webir
