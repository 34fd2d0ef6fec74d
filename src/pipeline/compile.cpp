#include "pipeline/compile.h"

#include "base/enum_table.h"
#include "execplan/passes/check_guarantees.h"
#include "execplan/passes/passes.h"
#include "kernel/passes/passes.h"
#include "webir/passes/append_train_step.h"

namespace scellis::pipeline {

namespace {
constexpr EnumTable<Rung, 5> kRungs({{{Rung::kDoc, "doc"},
                                      {Rung::kBlock, "block"},
                                      {Rung::kWebir, "webir"},
                                      {Rung::kKernel, "kernel"},
                                      {Rung::kExecplan, "execplan"}}});
constexpr bool kOptional = true, kRequired = false;
}  // namespace

// The descent, below the structural lowerings doc → block → webir (FromDoc, FromBlock), each rung's
// passes after its FromX.
const std::vector<Pass>& Passes() {
  static const std::vector<Pass> kPasses = {
      {Rung::kWebir, "append-train-step", kRequired, webir::AppendTrainStep},
      {Rung::kKernel, "partition", kRequired, kernel::Partition},
      {Rung::kKernel, "fuse-elementwise", kOptional, kernel::FuseElementwise},
      {Rung::kKernel, "fuse-generators", kOptional, kernel::FuseGenerators},
      {Rung::kKernel, "fold-transposes", kOptional, kernel::FoldTransposes},
      {Rung::kKernel, "fuse-matmul-epilogue", kOptional, kernel::FuseMatmulEpilogue},
      {Rung::kKernel, "merge-optimizer-outputs", kOptional, kernel::MergeOptimizerOutputs},
      {Rung::kKernel, "merge-loss-gradient", kOptional, kernel::MergeLossGradient},
      {Rung::kKernel, "merge-bias-gradient", kOptional, kernel::MergeBiasGradient},
      {Rung::kKernel, "fold-constant-inputs", kOptional, kernel::FoldConstantInputs},
      {Rung::kKernel, "write-state-in-place", kOptional, kernel::WriteStateInPlace},
      {Rung::kKernel, "merge-optimizer-kernels", kOptional, kernel::MergeOptimizerKernels},
      {Rung::kKernel, "fuse-optimizer-into-gradient", kOptional, kernel::FuseOptimizerIntoGradient},
      {Rung::kKernel, "hoist-loop-invariants", kOptional, kernel::HoistLoopInvariants},
      {Rung::kKernel, "fuse-gradient-product-into-loss", kOptional,
       kernel::FuseGradientProductIntoLoss},
      {Rung::kKernel, "schedule-matmul", kRequired, kernel::ScheduleMatmul},
      {Rung::kKernel, "schedule-elementwise", kOptional, kernel::ScheduleElementwise},
      {Rung::kKernel, "schedule-sum", kOptional, kernel::ScheduleSum},
      {Rung::kKernel, "fold-row-gathers", kOptional, kernel::FoldRowGathers},
      {Rung::kKernel, "emit-wgsl", kRequired, kernel::EmitWgsl},
      {Rung::kKernel, "block-butterfly-stages", kOptional, kernel::BlockButterflyStages},
      {Rung::kKernel, "block-temporally", kOptional, kernel::BlockTemporally},
      {Rung::kExecplan, "liveness", kRequired, execplan::Liveness},
      {Rung::kExecplan, "memory-classes", kRequired, execplan::MemoryClasses},
      {Rung::kExecplan, "assign-buffers", kRequired, execplan::AssignBuffers},
      {Rung::kExecplan, "verdict", kRequired, execplan::JudgeVerdict},
      // Reads the plan only: refuses a declared guarantee its target cannot honour.
      {Rung::kExecplan, "check-guarantees", kRequired,
       +[](execplan::Plan& p) { return execplan::CheckGuarantees(p); }},
  };
  return kPasses;
}

std::optional<Rung> ParseRung(const std::string& s) {
  return kRungs.Parse(s);
}
const char* RungName(Rung r) {
  return kRungs.Name(r);
}

namespace {

std::string PassNames(bool optional_only) {
  std::string names;
  for (const Pass& p : Passes())
    if (!optional_only || p.optional) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

const Pass* FindPass(std::string_view name) {
  for (const Pass& p : Passes())
    if (p.name == name) return &p;
  return nullptr;
}

Status CheckPassOptions(const CompileOptions& o) {
  std::vector<Diagnostic> errors;
  for (const std::string& name : o.disabled_passes) {
    const Pass* p = FindPass(name);
    if (!p) {
      errors.push_back(UserError("bad-pass", "", "there is no pass \"" + name + "\" to disable",
                                 "passes that may be disabled: " + PassNames(true)));
    } else if (!p->optional) {
      errors.push_back(UserError("bad-pass", "",
                                 "the pass \"" + name + "\" is required and cannot be disabled",
                                 "passes that may be disabled: " + PassNames(true)));
    }
  }
  if (!o.print_after.empty()) {
    const Pass* p = FindPass(o.print_after);
    if (!p) {
      errors.push_back(UserError("bad-pass", "", "there is no pass \"" + o.print_after + "\"",
                                 "passes, in order: " + PassNames(false)));
    } else if (o.disabled_passes.count(o.print_after)) {
      errors.push_back(UserError("bad-pass", "",
                                 "the pass \"" + o.print_after +
                                     "\" is disabled, nothing to print "
                                     "after it"));
    }
  }
  return errors.empty() ? Status::Ok() : Status(errors);
}

// Runs the enabled passes of `rung` over `ir` in order; true when print_after named one of them
// (the descent stops there).
template <typename Ir>
Result<bool> RunPasses(Rung rung, Ir& ir, const CompileOptions& o) {
  for (const Pass& p : Passes()) {
    if (p.rung != rung || o.disabled_passes.count(std::string(p.name))) continue;
    SCELLIS_TRY(std::get<Status (*)(Ir&)>(p.run)(ir));
    if (p.name == o.print_after) return true;
  }
  return false;
}

Result<Compiled> Descend(Compiled c, webir::Graph g, const CompileOptions& o) {
  SCELLIS_ASSIGN_OR_RETURN(bool stop, RunPasses(Rung::kWebir, g, o));
  if (!stop && o.up_to < Rung::kKernel) SCELLIS_TRY(webir::Verify(g));  // else FromWebir does
  c.graph = std::make_shared<const webir::Graph>(std::move(g));
  if (stop) c.stopped_after = o.print_after;
  if (stop || o.up_to < Rung::kKernel) return c;

  SCELLIS_ASSIGN_OR_RETURN(kernel::Module m, kernel::FromWebir(c.graph));
  m.matmul_schedule_override = o.matmul_schedule;
  m.elementwise_schedule_override = o.elementwise_schedule;
  m.sum_chunk_override = o.sum_chunk;
  m.stage_tile_override = o.stage_tile;
  m.binding_cap = static_cast<uint64_t>(std::max<int64_t>(o.plan.limits.max_binding_bytes, 0));
  m.workgroup_storage_bytes = o.plan.limits.max_workgroup_storage_bytes;
  SCELLIS_ASSIGN_OR_RETURN(stop, RunPasses(Rung::kKernel, m, o));
  if (stop || o.up_to < Rung::kExecplan) SCELLIS_TRY(kernel::Verify(m));  // else FromKernel does
  c.module = std::make_shared<const kernel::Module>(std::move(m));
  if (stop) c.stopped_after = o.print_after;
  if (stop || o.up_to < Rung::kExecplan) return c;

  SCELLIS_ASSIGN_OR_RETURN(execplan::Plan p, execplan::FromKernel(c.module, o.plan));
  SCELLIS_ASSIGN_OR_RETURN(stop, RunPasses(Rung::kExecplan, p, o));
  if (!stop) SCELLIS_TRY(execplan::Verify(p));
  c.plan = std::move(p);
  if (stop) c.stopped_after = o.print_after;
  return c;
}

}  // namespace

Result<Rung> RungOfPass(const std::string& name) {
  const Pass* p = FindPass(name);
  if (!p)
    return UserError("bad-pass", "", "there is no pass \"" + name + "\"",
                     "passes, in order: " + PassNames(false));
  return p->rung;
}

Result<Compiled> Compile(std::string_view text, const CompileOptions& options) {
  SCELLIS_TRY(CheckPassOptions(options));
  Compiled c;
  SCELLIS_ASSIGN_OR_RETURN(c.doc, doc::Parse(text, *options.lower.ops));
  if (options.up_to < Rung::kBlock && options.print_after.empty()) return c;
  SCELLIS_ASSIGN_OR_RETURN(c.program, block::FromDoc(c.doc, options.lower));
  c.program->content_id = c.doc.content_id;
  c.notes = c.program->notes;
  if (options.up_to < Rung::kWebir && options.print_after.empty()) return c;
  SCELLIS_ASSIGN_OR_RETURN(webir::Graph g, webir::FromBlock(*c.program));
  return Descend(std::move(c), std::move(g), options);
}

Result<Compiled> CompileGraph(webir::Graph g, const CompileOptions& options) {
  SCELLIS_TRY(CheckPassOptions(options));
  return Descend(Compiled{}, std::move(g), options);
}

std::string PrintRung(const Compiled& c, Rung r) {
  switch (r) {
    case Rung::kDoc:
      return doc::Print(c.doc);
    case Rung::kBlock:
      return block::Print(*c.program);
    case Rung::kWebir:
      return webir::Print(*c.graph);
    case Rung::kKernel:
      return kernel::Print(*c.module);
    case Rung::kExecplan:
      return execplan::Print(*c.plan);
  }
  return "";
}

Json RungJson(const Compiled& c, Rung r) {
  switch (r) {
    case Rung::kDoc:
      return doc::ToJson(c.doc);
    case Rung::kBlock:
      return block::ToJson(*c.program);
    case Rung::kWebir:
      return webir::ToJson(*c.graph);
    case Rung::kKernel:
      return kernel::ToJson(*c.module);
    case Rung::kExecplan:
      return execplan::ToJson(*c.plan);
  }
  return Json();
}

std::vector<std::pair<std::string, std::string>> RungDumps(const Compiled& c) {
  return {
      {"0.doc.json", CanonicalJson(RungJson(c, Rung::kDoc)) + "\n"},
      {"1.block.txt", PrintRung(c, Rung::kBlock)},
      {"2.webir.txt", PrintRung(c, Rung::kWebir)},
      {"3.kernel.txt", PrintRung(c, Rung::kKernel)},
      {"3.kernel.wgsl", kernel::PrintWgsl(*c.module)},
      {"4.execplan.txt", PrintRung(c, Rung::kExecplan)},
  };
}

}  // namespace scellis::pipeline
