#include "pipeline/data_parallel.h"

#include <algorithm>

namespace scellis::pipeline {

Result<StepHalves> SplitTrainStep(std::string_view text, const CompileOptions& options,
                                  int chunks) {
  StepHalves h;
  CompileOptions head_options = options;
  head_options.up_to = Rung::kBlock;
  head_options.print_after.clear();
  SCELLIS_ASSIGN_OR_RETURN(h.head, Compile(text, head_options));
  if (!h.head.program->train) {
    return UserError("no-train-section", "", "the document has no \"train\" section",
                     "only a training step partitions over ranks");
  }
  h.spec = *h.head.program->train;
  if (h.spec.images < 0) {
    return UserError("missing-field", h.spec.pointer,
                     "the train section has no \"data\": there is no batch to share among ranks",
                     "add \"data\": {\"dataset\", \"images\", \"labels\"}");
  }
  const block::Block& images = h.head.program->blocks[h.spec.images];
  if (images.tensor_type.rank() < 1) {
    return UserError("bad-train-section", images.pointer,
                     "the images input \"" + images.id +
                         "\" is a scalar; it needs a batch "
                         "dimension first");
  }
  const std::string batch_dim = images.tensor_type.dims[0].symbol;
  if (batch_dim.empty()) {
    return UserError("bad-train-section", images.pointer,
                     "the images input \"" + images.id +
                         "\" has a fixed first dimension: the batch cannot be cut into chunks",
                     "give it a symbolic batch dimension, such as [\"B\", 784]");
  }
  h.gradients = options;
  h.gradients.lower.mode = block::LowerMode::kGradients;
  h.gradients.lower.bind[batch_dim] = std::max<int64_t>(1, h.spec.batch / std::max(chunks, 1));
  h.update = options;
  h.update.lower.mode = block::LowerMode::kApplyGradients;
  return h;
}

Result<CompiledWorkPlan> CompileWorkPlan(std::string_view text, const CompileOptions& options,
                                         workplan::DeviceSet devices, int chunks) {
  const int effective = chunks > 0 ? chunks : static_cast<int>(devices.ranks.size());
  SCELLIS_ASSIGN_OR_RETURN(StepHalves h, SplitTrainStep(text, options, effective));
  return CompileWorkPlan(text, std::move(h), std::move(devices), chunks);
}

Result<CompiledWorkPlan> CompileWorkPlan(std::string_view text, StepHalves h,
                                         workplan::DeviceSet devices, int chunks) {
  if (!devices.ranks.empty()) {
    h.gradients.plan.limits = devices.ranks[0];
    h.update.plan.limits = devices.ranks[0];
  }
  CompiledWorkPlan c{};
  SCELLIS_ASSIGN_OR_RETURN(c.gradients, Compile(text, h.gradients));
  SCELLIS_ASSIGN_OR_RETURN(c.update, Compile(text, h.update));
  SCELLIS_ASSIGN_OR_RETURN(
      c.plan, workplan::FromExecPlans(std::make_shared<execplan::Plan>(*c.gradients.plan),
                                      std::make_shared<execplan::Plan>(*c.update.plan),
                                      std::move(devices), h.spec.batch, {.chunks = chunks}));
  SCELLIS_TRY(workplan::Verify(c.plan));
  return c;
}

}  // namespace scellis::pipeline
