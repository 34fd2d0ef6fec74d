#include "api/fit_batch.h"

#include <algorithm>
#include <map>

namespace scellis::api {

std::optional<std::string> BatchDimension(const block::Program& p) {
  if (!p.train || p.train->images < 0 || p.mode != block::LowerMode::kTrainStep)
    return std::nullopt;
  const TensorType& images = p.blocks[p.train->images].tensor_type;
  if (images.rank() < 1 || images.dims[0].symbol.empty()) return std::nullopt;
  return images.dims[0].symbol;
}

Result<execplan::BatchFit> LargestBatchThatFits(std::string_view text,
                                                const pipeline::CompileOptions& options,
                                                const std::string& dim, int64_t red_batch) {
  execplan::BatchFit fit;
  fit.dim = dim;
  fit.planned = red_batch;
  struct Planned {
    execplan::Verdict verdict;
    int64_t allocated;
  };
  std::map<int64_t, Planned> planned;  // each batch is planned once
  auto plan_at = [&](int64_t batch) -> Result<Planned> {
    auto it = planned.find(batch);
    if (it != planned.end()) return it->second;
    pipeline::CompileOptions o = options;
    o.up_to = pipeline::Rung::kExecplan;
    o.print_after.clear();
    o.lower.bind[dim] = batch;
    SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled c, pipeline::Compile(text, o));
    ++fit.plans;
    Planned p{c.plan->verdict, c.plan->memory.allocated};
    planned[batch] = p;
    return p;
  };
  // The largest batch in [1, below) whose plan `accepts`, 0 when batch 1 is refused: batch 1 is
  // planned first, then the bracket (accepted, refused) is halved until it closes.
  auto search = [&](int64_t below, auto accepts) -> Result<int64_t> {
    if (below <= 1) return int64_t{0};
    SCELLIS_ASSIGN_OR_RETURN(Planned one, plan_at(1));
    if (!accepts(one.verdict)) return int64_t{0};
    int64_t yes = 1, no = below;
    while (no - yes > 1) {
      const int64_t mid = yes + (no - yes) / 2;
      SCELLIS_ASSIGN_OR_RETURN(Planned p, plan_at(mid));
      (accepts(p.verdict) ? yes : no) = mid;
    }
    return yes;
  };
  using execplan::Verdict;
  SCELLIS_ASSIGN_OR_RETURN(fit.largest,
                           search(red_batch, [](Verdict v) { return v != Verdict::kRed; }));
  if (fit.largest == 0) return fit;
  const Planned at_largest = planned.at(fit.largest);
  fit.verdict_at_largest = at_largest.verdict;
  fit.allocated_at_largest = at_largest.allocated;
  if (at_largest.verdict == Verdict::kGreen) {
    fit.largest_green = fit.largest;
  } else {
    SCELLIS_ASSIGN_OR_RETURN(fit.largest_green,
                             search(fit.largest, [](Verdict v) { return v == Verdict::kGreen; }));
  }
  if (fit.largest_green > 0)
    fit.allocated_at_largest_green = planned.at(fit.largest_green).allocated;
  return fit;
}

Status ExplainRedPlan(std::string_view text, const pipeline::CompileOptions& options,
                      pipeline::Compiled& c) {
  if (!c.plan || !c.program || c.plan->verdict != execplan::Verdict::kRed) return Status::Ok();
  const bool memory =
      std::any_of(c.plan->findings.begin(), c.plan->findings.end(), [](const Diagnostic& d) {
        return d.severity == Severity::kError && d.code.rfind("memory-over-", 0) == 0;
      });
  // Host memory a caller stages per batch is given for the refused batch only: planned with it
  // held fixed, a smaller batch's host verdict would be too strict, so no largest batch is claimed.
  const bool staged_host =
      options.plan.caller_host_bytes > 0 &&
      std::any_of(c.plan->findings.begin(), c.plan->findings.end(),
                  [](const Diagnostic& d) { return d.code == "memory-over-host"; });
  std::optional<std::string> dim = BatchDimension(*c.program);
  if (!memory || !dim || staged_host) return Status::Ok();
  const int64_t batch = c.program->blocks[c.program->train->images].tensor_type.dims[0].size;
  SCELLIS_ASSIGN_OR_RETURN(execplan::BatchFit fit,
                           LargestBatchThatFits(text, options, *dim, batch));
  execplan::AttachBatchFit(*c.plan, std::move(fit));
  return Status::Ok();
}

}  // namespace scellis::api
