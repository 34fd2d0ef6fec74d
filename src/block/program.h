// Rung 1: BlockIR, a typed program of blocks. Structure becomes explicit here: which blocks run,
// in what order, with which resolved tensor types for the sources, under which determinism tier
// and tolerance class. Symbolic dimensions are bound at this rung.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/result.h"
#include "core/tensor_type.h"
#include "doc/document.h"
#include "policy/determinism.h"

namespace scellis::block {

enum class BlockKind {
  kInput,  // data given inline or fed at run time
  kParam,  // trainable tensor with a declared, seeded initializer
  kFull,   // a constant tensor filled with one value
  kOp,     // one tensor operation; its meaning is resolved at WebIR
};

// A declared initializer. Counter-based: element i is a pure function of (seed, i).
struct Initializer {
  std::string kind;  // "uniform" (low, high), "zeros", "ones", "kaiming_uniform" (fan_in)
  double low = 0, high = 0;
  uint64_t seed = 0;
  std::vector<float> Generate(int64_t count) const;
};

struct Block {
  std::string id;
  std::string type;   // "input", "param", "full" or an op name
  std::string label;
  BlockKind kind = BlockKind::kOp;
  std::vector<std::pair<std::string, int>> inputs;  // port → index of the producing block
  Json params;                                      // op attributes
  TensorType tensor_type;                           // sources only
  std::optional<std::vector<float>> data;           // inputs with inline data, constants
  std::optional<Initializer> init;                  // params
  std::string pointer;

  std::string Describe() const;
};

struct Output {
  std::string name;
  int block;
};

// One training step over the program: the gradient of `loss` with respect to each of `params`,
// then one optimizer update per param. Lowered at WebIR (forward + backward + updates).
struct TrainStep {
  int loss = -1;               // index of the loss block
  std::string optimizer;       // "sgd" | "adam" | "adamw"
  Json hyper = Json::object(); // optimizer settings as the document gave them
  std::vector<int> params;     // indices of the trained param blocks, in program order
  std::string pointer = "/train";
};

struct Program {
  std::string name;
  doc::Form form = doc::Form::kGraph;
  int version = 1;
  std::vector<Block> blocks;  // every block after its inputs
  std::vector<Output> outputs;
  policy::Tier tier = policy::Tier::kProd;
  std::string tier_source;
  policy::ToleranceClass tolerance = policy::ToleranceClass::kDefault;
  std::optional<int64_t> budget_bytes;
  std::map<std::string, int64_t> dims;
  std::optional<TrainStep> train;
  std::vector<Diagnostic> notes;  // warnings raised while lowering (e.g. a tier override)
};

struct LowerOptions {
  std::optional<policy::Tier> tier;  // --tier: declares a tier, composing strictest-wins
  bool tier_override = false;        // --tier-override: replaces the declared tiers
  std::map<std::string, int64_t> bind;  // --bind N=64: binds symbolic dims
};

Result<Program> FromDoc(const doc::Document& d, const LowerOptions& options);
std::string Print(const Program& p);
Json ToJson(const Program& p);
Status Verify(const Program& p);

}  // namespace scellis::block
