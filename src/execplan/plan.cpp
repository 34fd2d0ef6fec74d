#include "execplan/plan.h"

#include <algorithm>
#include <cstdio>

#include "base/enum_table.h"

namespace scellis::execplan {

namespace {
constexpr EnumTable<MemClass, kMemClasses> kMemClassNames(
    {{{MemClass::kParameters, "parameters"},
      {MemClass::kMasterWeights, "master_weights"},
      {MemClass::kInputs, "inputs"},
      {MemClass::kActivations, "activations"},
      {MemClass::kGradients, "gradients"},
      {MemClass::kOptimizerState, "optimizer_state"},
      {MemClass::kWorking, "working"},
      {MemClass::kDataset, "dataset"}}});
constexpr EnumTable<Verdict, 3> kVerdicts(
    {{{Verdict::kGreen, "green"}, {Verdict::kYellow, "yellow"}, {Verdict::kRed, "red"}}});
}  // namespace

const char* MemClassName(MemClass c) {
  return kMemClassNames.Name(c);
}
const char* VerdictName(Verdict v) {
  return kVerdicts.Name(v);
}

bool DatasetInBudget(const Plan& p) {
  return p.dataset && p.limits.buffers_in_host_memory;
}

int64_t WatchedStepsKept(const Plan& p) {
  if (p.limits.backend == "webgpu" && p.staged_steps > 0)
    return std::max(p.watched_steps_kept, p.staged_steps);
  return p.watched_steps_kept;
}

MemClass DominantClass(const MemoryPlan& m) {
  int best = 0;
  for (int c = 1; c < kMemClasses; ++c)
    if (m.at_peak[c] > m.at_peak[best]) best = c;
  return static_cast<MemClass>(best);
}

std::string FormatBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

namespace {
std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string DescribeDataset(const Plan& p) {
  const HostDataset& d = *p.dataset;
  std::string s = "\"" + d.source + "\": " + std::to_string(d.train_examples) + " train + " +
                  std::to_string(d.test_examples) + " test examples of " +
                  std::to_string(d.features) + " f32 with labels (" + FormatBytes(d.whole_bytes) +
                  " decoded); ";
  const std::string eval =
      d.eval_examples > 0 ? "the evaluation batch of " + std::to_string(d.eval_examples) : "";
  if (d.streamed) {
    s += "streamed: read from its files batch by batch, " + FormatBytes(p.dataset_bytes) +
         " held (" + std::to_string(d.batches) + " batches of one run" +
         (eval.empty() ? "" : " and " + eval) + ")";
  } else {
    s += "held whole for the run, " + FormatBytes(p.dataset_bytes) +
         " (batches are drawn from every example in a shuffled order" +
         (eval.empty() ? "" : "; " + eval + " gathered beside") + ")";
  }
  // The train split also held on the device, each step's batch gathered there by its row indices
  // (block::LowerOptions::dataset_examples_on_device): counted among the device's inputs.
  int64_t on_device = 0;
  for (const webir::Node& n : p.graph().nodes)
    if (n.purpose == webir::Purpose::kDataset) on_device += n.type.bytes();
  if (on_device > 0)
    s += "; the train split also copied to the device once, " + FormatBytes(on_device) +
         " of class inputs there, each step's batch gathered from it by row indices";
  if (DatasetInBudget(p))
    return s + "; counted in the budget as class dataset (this backend's buffers are host memory)";
  return s + "; host memory beside " + p.limits.device +
         "'s buffers: not held by the device budget, judged against the host's memory";
}

std::string Print(const Plan& p) {
  const webir::Graph& g = p.graph();
  std::string out = "plan";
  if (!g.name.empty()) out += " \"" + g.name + "\"";
  out += "\n";
  auto row = [&](const std::string& key, const std::string& value) {
    out += "  " + key + std::string(17 - key.size(), ' ') + ": " + value + "\n";
  };
  row("determinism_tier", std::string(policy::TierName(g.tier)) + "  (declared by " +
                              g.tier_source + ", never defaulted)");
  row("tolerance_class", std::string(policy::ToleranceName(g.tolerance)) + "  atol " +
                             Num(p.thresholds.atol) + ", rtol " + Num(p.thresholds.rtol) +
                             " under " + policy::TierName(g.tier));
  const int hoisted = p.module().HoistedKernels();
  row("dispatches",
      std::to_string(p.steps.size()) + " kernels" +
          (hoisted ? " (" + std::to_string(hoisted) + " hoisted: once per step, before the loop)"
                   : "") +
          ", one submission");
  row("buffers", std::to_string(p.buffers.size()) + " (" + FormatBytes(p.memory.allocated) +
                     " allocated, peak live " + FormatBytes(p.memory.peak_live) + ")");
  // The memory classes: what each holds allocated, and live at the peak.
  const MemoryPlan& mem = p.memory;
  const MemClass dominant = DominantClass(mem);
  auto cell = [](std::string s, size_t width) {
    return s + std::string(s.size() < width ? width - s.size() : 1, ' ');
  };
  std::string classes = cell("class", 17) + cell("allocated", 12) + "at peak";
  for (int c = 0; c < kMemClasses; ++c) {
    const MemClass cls = static_cast<MemClass>(c);
    if (cls == MemClass::kDataset && !DatasetInBudget(p)) continue;
    if (cls == MemClass::kMasterWeights && !mem.by_class[c]) continue;  // not mixed precision
    classes += "\n" + std::string(21, ' ') + cell(MemClassName(cls), 17) +
               cell(FormatBytes(mem.by_class[c]), 12) + FormatBytes(mem.at_peak[c]) +
               (cls == dominant && mem.peak_live > 0 ? "  <- dominates" : "");
  }
  const std::string peak_at = mem.peak_step < 0 ? "before the first step"
                                                : "after " + p.module().kernels[mem.peak_step].name;
  classes += "\n" + std::string(21, ' ') + cell("total", 17) +
             cell(FormatBytes(mem.allocated), 12) + FormatBytes(mem.peak_live) + "  (peak " +
             peak_at + ")";
  row("memory_classes", classes);
  row("budget", FormatBytes(p.memory.budget) + "  (" + p.memory.budget_source + ")");
  if (p.dataset) row("dataset", DescribeDataset(p));
  std::string verdict = VerdictName(p.verdict);
  if (p.verdict == Verdict::kGreen) verdict += "  fits the declared budgets";
  row("verdict", verdict);
  for (const Diagnostic& d : p.findings) out += "    " + d.Format() + "\n";
  if (p.batch_fit) {
    const BatchFit& f = *p.batch_fit;
    const std::string searched = std::to_string(f.plans) + " plans searched below " + f.dim + "=" +
                                 std::to_string(f.planned);
    if (f.largest == 0) {
      row("largest_batch", "none  (" + f.dim + "=1 plans red; " + searched + ")");
    } else {
      row("largest_batch", f.dim + "=" + std::to_string(f.largest) + "  plans " +
                               VerdictName(f.verdict_at_largest) + " at " +
                               FormatBytes(f.allocated_at_largest) + "; " + f.dim + "=" +
                               std::to_string(f.largest + 1) + " plans red (" + searched + ")");
      if (f.largest_green > 0 && f.largest_green != f.largest)
        row("largest_green", f.dim + "=" + std::to_string(f.largest_green) + "  plans green at " +
                                 FormatBytes(f.allocated_at_largest_green));
    }
  }
  if (p.stream) {
    const StreamFit& f = *p.stream;
    row("streaming", "input \"" + f.input + "\" " + f.dim + "=" + std::to_string(f.rows) + " (" +
                         FormatBytes(f.bytes) + ") in " + std::to_string(f.chunks) + " chunks of " +
                         std::to_string(f.chunk_rows) + " rows (last " +
                         std::to_string(f.last_chunk_rows) + "); all rows at once allocate " +
                         FormatBytes(f.whole_allocated) + " (" + std::to_string(f.plans) +
                         " plans searched); this plan is one chunk's");
  }
  out += "  steps:\n";
  for (const Step& s : p.steps) {
    const kernel::Kernel& k = p.module().kernels[s.kernel];
    out += "    " + k.name + "  reads";
    for (int b : s.reads) out += " b" + std::to_string(b);
    if (s.reads.empty()) out += " -";
    out += " -> b" + std::to_string(s.write);
    for (int b : s.extra_writes) out += " b" + std::to_string(b);
    if (k.matmul_schedule) out += "  schedule " + k.matmul_schedule->Name();
    if (k.elementwise_schedule) out += "  schedule " + k.elementwise_schedule->Name();
    if (k.kind == kernel::KernelKind::kTiledStages)
      out += "  " + std::to_string(k.stages.size()) + " stages in tiles of " +
             std::to_string(k.stage_tile);
    if (k.kind == kernel::KernelKind::kRowStages)
      out += "  " + std::to_string(k.stages.size()) + " stages, " + std::to_string(k.stage_tile) +
             (k.stage_tile == 1 ? " row" : " rows") + " a block";
    // A gather folded into its reader (the kernel pass fold-row-gathers): the table is read in
    // place, row by row as the index says.
    for (const kernel::Kernel::RowGather& r : k.row_gathers)
      if (r.input < static_cast<int>(s.reads.size()) && r.index < static_cast<int>(s.reads.size()))
        out += "  rows of b" + std::to_string(s.reads[r.input]) + " by b" +
               std::to_string(s.reads[r.index]);
    if (k.hoisted) out += "  hoisted";
    out += "\n";
  }
  out += "  buffers:\n";
  for (const Buffer& b : p.buffers) {
    out += "    b" + std::to_string(b.id) + " " + FormatBytes(b.bytes) + " " + MemClassName(b.cls) +
           (b.pinned ? " pinned" : "") + ":";
    for (int v : b.values) out += " %" + g.at(v).name;
    if (b.tile_scratch) out += " (tile scratch)";
    out += "\n";
  }
  return out;
}

Json ToJson(const Plan& p) {
  Json j;
  const webir::Graph& g = p.graph();
  j["determinism_tier"] = policy::TierName(g.tier);
  j["tier_source"] = g.tier_source;
  j["tolerance_class"] = policy::ToleranceName(g.tolerance);
  j["thresholds"] = {{"atol", p.thresholds.atol}, {"rtol", p.thresholds.rtol}};
  for (int c = 0; c < kMemClasses; ++c) {
    if (static_cast<MemClass>(c) == MemClass::kDataset && !p.dataset) continue;
    j["memory"]["by_class"][MemClassName(static_cast<MemClass>(c))] = p.memory.by_class[c];
    j["memory"]["at_peak"][MemClassName(static_cast<MemClass>(c))] = p.memory.at_peak[c];
  }
  j["memory"]["dominant_class"] =
      p.memory.peak_live > 0 ? Json(MemClassName(DominantClass(p.memory))) : Json();
  j["memory"]["peak_step"] = p.memory.peak_step;
  j["memory"]["allocated"] = p.memory.allocated;
  j["memory"]["peak_live"] = p.memory.peak_live;
  j["memory"]["budget"] = p.memory.budget;
  j["memory"]["budget_source"] = p.memory.budget_source;
  j["memory"]["host_staging"] = p.memory.host_staging;
  if (p.memory.fed_staging > 0) j["memory"]["fed_staging"] = p.memory.fed_staging;
  if (p.memory.watched_history > 0) j["memory"]["watched_history"] = p.memory.watched_history;
  if (p.memory.watched_history_host > 0)
    j["memory"]["watched_history_host"] = p.memory.watched_history_host;
  if (p.limits.device_memory_bytes > 0) j["memory"]["device_memory"] = p.limits.device_memory_bytes;
  if (p.limits.host_memory_bytes > 0) j["memory"]["host_memory"] = p.limits.host_memory_bytes;
  j["verdict"] = VerdictName(p.verdict);
  if (p.dataset) {
    const HostDataset& d = *p.dataset;
    j["dataset"] = {{"source", d.source},
                    {"train_examples", d.train_examples},
                    {"test_examples", d.test_examples},
                    {"features", d.features},
                    {"decoded_bytes", d.whole_bytes},
                    {"host_bytes", p.dataset_bytes},
                    {"streamed", d.streamed},
                    {"in_budget", DatasetInBudget(p)}};
    if (d.streamed) j["dataset"]["batches_held"] = d.batches;
    j["dataset"]["eval_batch"] = d.eval_examples;
  }
  if (p.batch_fit) {
    const BatchFit& f = *p.batch_fit;
    j["batch_fit"] = {
        {"dim", f.dim}, {"planned", f.planned}, {"largest", f.largest}, {"plans", f.plans}};
    if (f.largest > 0) {
      j["batch_fit"]["verdict_at_largest"] = VerdictName(f.verdict_at_largest);
      j["batch_fit"]["allocated_at_largest"] = f.allocated_at_largest;
      j["batch_fit"]["largest_green"] = f.largest_green;
      if (f.largest_green > 0)
        j["batch_fit"]["allocated_at_largest_green"] = f.allocated_at_largest_green;
    }
  }
  if (p.stream) {
    const StreamFit& f = *p.stream;
    j["streaming"] = {{"input", f.input},
                      {"dim", f.dim},
                      {"rows", f.rows},
                      {"bytes", f.bytes},
                      {"chunk_rows", f.chunk_rows},
                      {"chunks", f.chunks},
                      {"last_chunk_rows", f.last_chunk_rows},
                      {"whole_allocated", f.whole_allocated},
                      {"plans", f.plans},
                      {"reduced_outputs", f.reduced_outputs}};
  }
  j["findings"] = Json::array();
  for (const Diagnostic& d : p.findings)
    j["findings"].push_back({{"code", d.code}, {"message", d.message}, {"help", d.help}});
  for (const Step& s : p.steps) {
    const kernel::Kernel& k = p.module().kernels[s.kernel];
    Json step = {{"kernel", k.name}, {"reads", s.reads}, {"write", s.write}};
    if (!s.extra_writes.empty()) step["extra_writes"] = s.extra_writes;
    if (k.matmul_schedule) step["matmul_schedule"] = k.matmul_schedule->Name();
    if (k.elementwise_schedule) step["elementwise_schedule"] = k.elementwise_schedule->Name();
    if (k.hoisted) step["hoisted"] = true;
    j["steps"].push_back(step);
  }
  for (const Buffer& b : p.buffers) {
    j["buffers"].push_back({{"id", b.id},
                            {"bytes", b.bytes},
                            {"class", MemClassName(b.cls)},
                            {"pinned", b.pinned},
                            {"values", b.values}});
    if (b.tile_scratch) j["buffers"].back()["tile_scratch"] = true;
  }
  return j;
}

std::optional<kernel::Tiling> StepTiling(const Plan& p, const Step& s) {
  const kernel::Kernel& k = p.module().kernels[s.kernel];
  if (kernel::TilesPerElement(k)) return std::nullopt;
  bool over = false;
  for (int b : s.reads) over |= p.buffers[b].bytes > p.limits.max_binding_bytes;
  for (int b : s.Writes()) over |= p.buffers[b].bytes > p.limits.max_binding_bytes;
  if (!over) return std::nullopt;
  return kernel::PlanTiles(p.module(), k, static_cast<uint64_t>(p.limits.max_binding_bytes));
}

int64_t StepScratchBytes(const Plan& p, const Step& s) {
  if (const std::optional<kernel::Tiling> tiling = StepTiling(p, s))
    return tiling->space.scratch_elements * 4;
  const kernel::Kernel& k = p.module().kernels[s.kernel];
  return k.sum_schedule && k.sum_schedule->TwoStages() ? k.sum_schedule->Partials() * 4 : 0;
}

namespace {

// The tile scratch holds no value, so no step binds it as an operand, and it is as large as the
// scratch of every step cut into tiles that hand partial results on, or summing wide.
Status VerifyTileScratch(const Plan& p) {
  int scratch = -1;
  for (const Buffer& b : p.buffers) {
    if (!b.tile_scratch) continue;
    if (scratch >= 0 || !b.values.empty() || !b.pinned || b.cls != MemClass::kWorking)
      return InternalError("execplan.Verify",
                           "a tile scratch buffer other than one pinned, working and valueless");
    scratch = b.id;
  }
  for (const Step& s : p.steps) {
    const kernel::Kernel& k = p.module().kernels[s.kernel];
    const std::vector<int> writes = s.Writes();
    if (scratch >= 0 && (std::count(s.reads.begin(), s.reads.end(), scratch) ||
                         std::count(writes.begin(), writes.end(), scratch)))
      return InternalError("execplan.Verify", k.name + " binds the tile scratch as an operand");
    const int64_t need = StepScratchBytes(p, s);
    if (need > 0 && (scratch < 0 || p.buffers[scratch].bytes < need))
      return InternalError("execplan.Verify", k.name + " hands on " + FormatBytes(need) +
                                                  " of partial results the plan has no room for");
  }
  return Status::Ok();
}

}  // namespace

Status Verify(const Plan& p) {
  // No step may write a buffer that holds a value some later step still needs, in the first
  // iteration or, in a loop, the next one: the hoisted steps run once, then the body twice with
  // the carries' swap between (a carried input's buffer then holds its new value, its source's
  // buffer nothing yet).
  const webir::Graph& g = p.graph();
  std::vector<int> holder(p.buffers.size(), -1);
  for (const webir::Node& n : g.nodes)
    if (p.buffer_of[n.id] >= 0 && (n.role == webir::Role::kInput || n.role == webir::Role::kParam))
      holder[p.buffer_of[n.id]] = n.id;
  auto run = [&](size_t first) -> Status {
    for (size_t i = first; i < p.steps.size(); ++i) {
      const Step& s = p.steps[i];
      const kernel::Kernel& k = p.module().kernels[s.kernel];
      for (size_t j = 0; j < k.inputs.size(); ++j)
        if (holder[s.reads[j]] != k.inputs[j])
          return InternalError("execplan.Verify", k.name + " reads a buffer overwritten earlier");
      const std::vector<int> writes = s.Writes(), outputs = k.Outputs();
      if (writes.size() != outputs.size())
        return InternalError("execplan.Verify", k.name + " writes other than its outputs");
      for (size_t j = 0; j < writes.size(); ++j) {
        if (writes[j] < 0 || writes[j] >= static_cast<int>(p.buffers.size()))
          return InternalError("execplan.Verify", k.name + " writes no buffer");
        // An output over an input, or over another output, would be read or written after it
        // is overwritten by other elements' invocations; but for an output the kernel writes in
        // place of its input (Kernel::in_place: each element read, then written, by its own
        // invocation), which binds that buffer once.
        const int over = k.InPlaceOf(j);
        const bool in_place = over >= 0 && s.reads[over] == writes[j] &&
                              std::count(s.reads.begin(), s.reads.end(), writes[j]) == 1;
        if ((!in_place && std::count(s.reads.begin(), s.reads.end(), writes[j])) ||
            std::count(writes.begin(), writes.end(), writes[j]) > 1)
          return InternalError("execplan.Verify", k.name + " writes a buffer it also binds");
      }
      for (size_t j = 0; j < writes.size(); ++j) holder[writes[j]] = outputs[j];
    }
    return Status::Ok();
  };
  SCELLIS_TRY(run(0));
  if (g.repeat > 1 && !g.carries.empty()) {
    for (const webir::Carry& c : g.carries) {
      if (p.buffer_of[c.from] >= 0) holder[p.buffer_of[c.from]] = -1;
      if (p.buffer_of[c.to] >= 0) holder[p.buffer_of[c.to]] = c.to;
    }
    SCELLIS_TRY(run(static_cast<size_t>(p.module().HoistedKernels())));
  }
  for (const webir::Output& o : g.outputs)
    if (holder[p.buffer_of[o.node]] != o.node)
      return InternalError("execplan.Verify", "output " + o.name + " is overwritten");
  return VerifyTileScratch(p);
}

}  // namespace scellis::execplan
