// Rung 1: BlockIR, a typed program of blocks. Structure becomes explicit here: which blocks run,
// in what order, with which resolved tensor types for the sources, under which determinism tier
// and tolerance class. Symbolic dimensions are bound at this rung.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/determinism.h"
#include "base/json_util.h"
#include "base/result.h"
#include "base/rung_header.h"
#include "base/tensor_type.h"
#include "doc/document.h"
#include "ops/op_table.h"

namespace scellis::block {

enum class BlockKind {
  kInput,    // data given inline or fed at run time
  kParam,    // trainable tensor with a declared, seeded initializer
  kFull,     // a constant tensor filled with one value
  kDataset,  // a host-side source of batches (IDX files); its fields feed input blocks
  kOp,       // one tensor operation; its meaning is resolved at WebIR
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
  std::string type;  // "input", "param", "full" or an op name
  std::string label;
  BlockKind kind = BlockKind::kOp;
  std::vector<std::pair<std::string, int>> inputs;  // port → index of the producing block
  Json params;                                      // op attributes
  TensorType tensor_type;                           // sources only
  std::optional<std::vector<double>> data;          // inputs with inline data, constants: exact
                                                    // for every dtype (an f64 holds any i32, u32)
  std::optional<Initializer> init;                  // params
  std::string pointer;

  std::string Describe() const;
};

struct Output {
  std::string name;
  int block;
};

// A resident value between steps: after each step of a session, input block `to` takes the value
// of output `from` (weights and optimizer moments stay on the device this way).
struct Carry {
  int from_output;  // index into Program::outputs
  int to_block;
};

// Optimizer of a training step; fields as in PyTorch's torch.optim.SGD / Adam / AdamW.
struct OptimizerSpec {
  std::string kind;  // "sgd" | "adam" | "adamw"
  double lr = 1e-3;
  double momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;  // ascend the loss, as torch.optim's maximize=True
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool operator==(const OptimizerSpec&) const = default;
};

// The "train" section: one forward, exactly one backward and one update per step.
struct TrainSpec {
  int loss = -1;            // block whose scalar output is the loss
  std::vector<int> params;  // param blocks updated by the optimizer (all of them)
  OptimizerSpec optimizer;  // the optimizer's own settings
  // One per entry of `params`: the optimizer's settings with its parameter group's overrides.
  std::vector<OptimizerSpec> param_optimizers;
  int dataset = -1;      // dataset block
  int images = -1;       // input block fed with the dataset's images
  int labels = -1;       // input block fed with its labels
  int eval_output = -1;  // block whose output is scored for accuracy (logits)
  int64_t batch = 64;
  int64_t eval_batch = 1000;
  int epochs = 1;
  uint64_t shuffle_seed = 0;
  std::string pointer = "/train";
  // Mixed precision (the section's "mixed_precision"): the step's f32 matmuls compute in f16
  // (operands cast to f16, the product cast back to f32) while the params stay the f32 master
  // weights the optimizer updates. The loss is multiplied by `loss_scale`, a power of two, before
  // the backward pass, so small gradients survive f16, and each parameter's f32 gradient is
  // divided by it again (exactly) before the update.
  struct MixedPrecision {
    double loss_scale = 1;
  };
  std::optional<MixedPrecision> mixed_precision;
};

// What to lower a training workflow to: the training step, or the forward pass alone (for
// evaluation, with the params fed by name). Data-parallel training splits the step in two halves
// with the all-reduce between them: kGradients (the params resident, from their initializers or
// copied in, the loss and every parameter's gradient as outputs, no update) and kApplyGradients
// (only the params, resident, and the optimizer update reading each gradient as the input
// "<param>@grad").
enum class LowerMode { kTrainStep, kForward, kGradients, kApplyGradients };

// The header (name, version, tier, tolerance, content id, budget, notes) is shared by every rung.
struct Program : RungHeader {
  doc::Form form = doc::Form::kGraph;
  std::vector<Block> blocks;  // every block after its inputs
  std::vector<Output> outputs;
  std::vector<Carry> carries;
  std::optional<TrainSpec> train;
  LowerMode mode = LowerMode::kTrainStep;
  // LowerOptions::dataset_examples_on_device, for the lowering.
  int64_t dataset_examples_on_device = 0;
  std::map<std::string, int64_t> dims;
  std::shared_ptr<const ops::OpTable> ops = ops::BuiltinOps();  // what its op blocks mean
};

struct LowerOptions {
  std::optional<policy::Tier> tier;     // --tier: declares a tier, composing strictest-wins
  bool tier_override = false;           // --tier-override: replaces the declared tiers
  std::map<std::string, int64_t> bind;  // --bind N=64: binds symbolic dims
  LowerMode mode = LowerMode::kTrainStep;
  // The training step (kTrainStep) with its dataset's train split held on the device: the images
  // and labels inputs become tables of this many examples (params set once, by the trainer's
  // feeds when the session is prepared), and each step's batch is gathered from them by the i32
  // row indices fed as "batch_index" (webir::kBatchIndexInput): a step is fed B indices instead
  // of B examples. 0: the batch is fed.
  int64_t dataset_examples_on_device = 0;
  // The ops the document may use: the built-in table, or a session's copy extended with its own.
  std::shared_ptr<const ops::OpTable> ops = ops::BuiltinOps();
};

Result<Program> FromDoc(const doc::Document& d, const LowerOptions& options);
std::string Print(const Program& p);
Json ToJson(const Program& p);
Status Verify(const Program& p);

}  // namespace scellis::block
