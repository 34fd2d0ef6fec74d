// `scellis lower`, `scellis plan`, `scellis validate`: descend the ladder without running.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "base/atomic_file.h"
#include "common.h"
#include "pipeline/data_parallel.h"
#include "pipeline/matmul_parallel.h"
#include "runtime/backends/select.h"
#include "train/dataset_memory.h"

namespace scellis::cli {

Result<pipeline::Rung> LowerRung(const CompileFlags& f, const LowerFlags& l) {
  int modes = !l.to.empty() + !l.dump_dir.empty() + !f.print_after.empty();
  if (modes != 1) {
    return UserError(
        "bad-flag", "",
        "lower needs exactly one of --to=RUNG, --print-after=PASS or --dump-rungs=DIR");
  }
  if (!f.print_after.empty()) return pipeline::RungOfPass(f.print_after);
  if ((l.ranks > 0 || l.chunks > 0) && l.to != "workplan")
    return UserError("bad-flag", "", "--ranks and --chunks go with --to=workplan");
  if (!l.dump_dir.empty()) return pipeline::Rung::kExecplan;
  // The WorkPlan descends through the ExecPlans of the step's halves.
  if (l.to == "workplan") return pipeline::Rung::kExecplan;
  std::optional<pipeline::Rung> rung = pipeline::ParseRung(l.to);
  if (!rung) {
    return UserError(
        "bad-flag", "",
        "--to takes doc, block, webir, kernel, execplan or workplan, got \"" + l.to + "\"");
  }
  return *rung;
}

// `lower --to=workplan` of a document without a train section: its one matmul in blocks over the
// ranks, printed whatever its verdict.
int LowerMatmulWorkPlanCommand(const CompileFlags& f, const LowerFlags& l,
                               const pipeline::CompileOptions& options, const std::string& text,
                               const workplan::DeviceSet& devices) {
  if (l.chunks > 0)
    return Report({UserError("bad-flag", "",
                             "--chunks cuts a training batch; this document "
                             "trains nothing")},
                  "", f.json);
  auto c = pipeline::CompileMatmulWorkPlan(text, options, devices);
  if (!c.ok()) return Report(c.errors(), f.file, f.json);
  PrintNotes(c->whole.notes, f.file);
  if (f.json)
    std::cout << workplan::ToJson(c->plan).dump(2) << "\n";
  else
    std::cout << workplan::Print(c->plan);
  return 0;
}

// `lower --to=workplan`: the training step shared among --ranks ranks alike (the CPU reference's
// limits unless the document's budget says otherwise), printed whatever its verdict.
int LowerWorkPlanCommand(const CompileFlags& f, const LowerFlags& l) {
  auto options = CompileOptionsFrom(f);
  if (!options.ok()) return Report(options.errors(), "", f.json);
  auto text = ReadFile(f.file, size_t{256} << 20);
  if (!text.ok()) return Report(text.errors(), f.file, f.json);
  const int ranks = l.ranks > 0 ? l.ranks : 1;
  const workplan::DeviceSet devices =
      workplan::DeviceSet::Uniform(ranks, execplan::HostMemoryLimits("cpu", "cpu"));
  auto c = pipeline::CompileWorkPlan(text.value(), options.value(), devices, l.chunks);
  if (!c.ok() && c.errors().front().code == "no-train-section")
    return LowerMatmulWorkPlanCommand(f, l, options.value(), text.value(), devices);
  if (!c.ok()) return Report(c.errors(), f.file, f.json);
  PrintNotes(c->gradients.notes, f.file);
  if (f.json)
    std::cout << workplan::ToJson(c->plan).dump(2) << "\n";
  else
    std::cout << workplan::Print(c->plan);
  return 0;
}

int LowerCommand(const CompileFlags& f, const LowerFlags& l) {
  auto rung = LowerRung(f, l);
  if (!rung.ok()) return Report(rung.errors(), "", f.json);
  if (l.to == "workplan") return LowerWorkPlanCommand(f, l);
  const std::string& dump_dir = l.dump_dir;
  int code = 0;
  auto c = CompileFile(f, *rung, {}, code);
  if (!c) return code;
  if (!dump_dir.empty()) {
    // Written only after every rung compiled: a failing document writes nothing.
    std::error_code ec;
    std::filesystem::create_directories(dump_dir, ec);
    const auto files = pipeline::RungDumps(*c);
    for (const auto& [name, text] : files) {
      Status s = WriteFileAtomic((std::filesystem::path(dump_dir) / name).string(), text);
      if (!s.ok()) return Report(s.errors(), "", f.json);
    }
    std::cout << "wrote " << files.size() << " rung dumps to " << dump_dir << "\n";
    return 0;
  }
  if (f.json)
    std::cout << pipeline::RungJson(*c, *rung).dump(2) << "\n";
  else
    std::cout << pipeline::PrintRung(*c, *rung);
  return 0;
}

// The device a plan is judged against: the CPU reference's (the host's memory) unless --backend
// names another, which is then selected as `scellis train` selects it.
Result<runtime::Selection> PlanBackend(const PlanFlags& p) {
  if (p.backend == "cpu") {
    runtime::Selection reference;
    reference.backend = "cpu";
    return reference;
  }
  return runtime::SelectBackend({.requested = p.backend,
                                 .allow_software_adapter = p.allow_software_adapter,
                                 .adapter = p.adapter});
}

// A training workflow's step is planned as the trainer runs it (train::PlanStep), with its dataset
// measured from the files' headers; a dataset that cannot be measured leaves the plan as compiled,
// said on stderr when `say_unmeasured`, as is where a GPU's batches are gathered on the host.
std::optional<pipeline::Compiled> CompilePlan(const CompileFlags& f, const PlanFlags& pf,
                                              bool say_unmeasured, int& code) {
  auto backend = PlanBackend(pf);
  if (!backend.ok()) {
    code = Report(backend.errors(), f.file, f.json);
    return std::nullopt;
  }
  if (backend->fallback_reason && say_unmeasured)
    std::cerr << "planned for " << backend->backend << ": " << *backend->fallback_reason << "\n";
  auto c = CompileFile(f, pipeline::Rung::kExecplan, backend->limits, code);
  if (!c || !c->program) return c;
  auto held = train::DatasetHeld(*c->program);
  if (!held.ok()) {
    if (say_unmeasured) PrintNotes(held.errors(), f.file);
    return c;
  }
  if (!held.value()) return c;
  auto options = CompileOptionsFrom(f);
  auto text = ReadFile(f.file, size_t{256} << 20);
  if (!options.ok() || !text.ok()) return c;  // read and parsed once already
  options->plan.limits = c->plan->limits;
  auto planned = train::PlanStep(text.value(), options.value(), *held.value(),
                                 {.batch = c->program->train->batch,
                                  .steps_per_run = pf.steps_per_run,
                                  .stream_dataset = f.stream_dataset,
                                  .host_batches = pf.host_batches,
                                  .gpu = backend->backend != "cpu"});
  if (!planned.ok()) {
    code = Report(planned.errors(), f.file, f.json);
    return std::nullopt;
  }
  if (say_unmeasured && !planned->host_batches_reason.empty())
    std::cerr << "each step's batch is gathered on the host and fed: "
              << planned->host_batches_reason << "\n";
  return std::move(planned->compiled);
}

// `plan --ranks`: a training step's WorkPlan as `scellis train --ranks` plans it
// (train::PlanDataParallelStep), its dataset measured from the files' headers; printed whatever
// its verdict, a red one also an error (exit 2).
int PlanDataParallelCommand(const CompileFlags& f, const PlanFlags& pf) {
  auto backend = PlanBackend(pf);
  if (!backend.ok()) return Report(backend.errors(), f.file, f.json);
  int code = 0;
  auto c = CompileFile(f, pipeline::Rung::kBlock, backend->limits, code);
  if (!c) return code;
  if (!c->program || !c->program->train)
    return Report(
        {UserError("bad-flag", "", "--ranks plans a training step; this document trains nothing")},
        f.file, f.json);
  auto held = train::DatasetHeld(*c->program);
  if (!held.ok()) return Report(held.errors(), f.file, f.json);
  auto options = CompileOptionsFrom(f);
  auto text = ReadFile(f.file, size_t{256} << 20);
  if (!options.ok() || !text.ok() || !held.value())
    return Report({UserError("bad-flag", "", "--ranks plans a training step with a dataset")},
                  f.file, f.json);
  options->plan.limits = backend->limits;
  auto planned = train::PlanDataParallelStep(text.value(), options.value(), *held.value(),
                                             {.batch = c->program->train->batch,
                                              .ranks = std::max(pf.ranks, 1),
                                              .chunks = pf.chunks,
                                              .stream_dataset = f.stream_dataset});
  if (!planned.ok()) return Report(planned.errors(), f.file, f.json);
  const workplan::WorkPlan& w = planned->work.plan;
  PrintNotes(planned->notes, f.file);
  std::cout << (f.json ? workplan::ToJson(w).dump(2) + "\n" : workplan::Print(w));
  if (w.verdict != execplan::Verdict::kRed) return 0;
  for (const Diagnostic& d : w.findings) std::cerr << d.Format(f.file) << "\n";
  for (const workplan::RankMemory& m : w.memory)
    for (const Diagnostic& d : m.findings) std::cerr << d.Format(f.file) << "\n";
  return 2;
}

// The plan is printed whatever its verdict; a red one is also an error (exit 2), its findings on
// stderr, so scripts can gate on `scellis plan`.
int PlanCommand(const CompileFlags& f, const PlanFlags& pf) {
  if (pf.ranks > 0 || pf.chunks > 0) return PlanDataParallelCommand(f, pf);
  int code = 0;
  auto c = CompilePlan(f, pf, /*say_unmeasured=*/true, code);
  if (!c) return code;
  const execplan::Plan& p = *c->plan;
  if (f.json)
    std::cout << execplan::ToJson(p).dump(2) << "\n";
  else
    std::cout << execplan::Print(p);
  if (p.verdict != execplan::Verdict::kRed) return 0;
  for (const Diagnostic& d : p.findings) std::cerr << d.Format(f.file) << "\n";
  return 2;
}

int ValidateCommand(const CompileFlags& f) {
  int code = 0;
  auto c = CompilePlan(f, PlanFlags{}, /*say_unmeasured=*/false, code);
  if (!c) return code;
  const execplan::Plan& p = *c->plan;
  if (p.verdict == execplan::Verdict::kRed) return Report(p.findings, f.file, f.json);
  if (f.json) {
    std::cout << Json{{"ok", true},
                      {"content_id", c->doc.content_id},
                      {"verdict", execplan::VerdictName(p.verdict)}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << f.file << ": valid (" << c->doc.content_id << "), plan verdict "
              << execplan::VerdictName(p.verdict) << "\n";
  }
  return 0;
}

}  // namespace scellis::cli
