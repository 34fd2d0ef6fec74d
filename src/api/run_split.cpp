#include "api/run_split.h"

#include <chrono>

#include "pipeline/matmul_parallel.h"

namespace scellis::api {

namespace {

// The feeds of `rank`'s block: the cut operand's slice (unless it is a constant, which the rank's
// graph holds at its block's shape), and whatever the caller fed the replicated one.
Result<runtime::Feeds> BlockFeeds(const pipeline::CompiledMatmulWorkPlan& c,
                                  const runtime::Feeds& given, int rank) {
  const workplan::MatmulWorkPlan& w = c.plan;
  const webir::Graph& whole = *c.whole.graph;
  const bool rows = w.axis == workplan::SplitAxis::kRows;
  const webir::Node& cut = whole.at(rows ? w.site.a : w.site.b);
  const webir::Node& kept = whole.at(rows ? w.site.b : w.site.a);
  runtime::Feeds feeds;
  if (cut.role != webir::Role::kConst) {
    SCELLIS_ASSIGN_OR_RETURN(HostTensor value, runtime::SourceData(cut, given));
    feeds[runtime::FeedName(cut)] = workplan::SliceOperand(w, value, rank);
  }
  if (auto it = given.find(runtime::FeedName(kept)); it != given.end())
    feeds[it->first] = it->second;
  return feeds;
}

}  // namespace

Result<std::optional<RunReport>> RunSplit(std::string_view text, const RunOptions& options,
                                          workplan::Collective& world,
                                          const SplitRunEvents& events) {
  if (options.steps != 1 || !options.history.empty()) {
    return UserError("bad-flag", "", "--ranks runs one step of one matmul",
                     "leave out --steps and --history with --ranks");
  }
  const auto start = std::chrono::steady_clock::now();
  SCELLIS_ASSIGN_OR_RETURN(runtime::Selection sel, runtime::SelectBackend(options.select));
  pipeline::CompileOptions compile = options.compile;
  SCELLIS_ASSIGN_OR_RETURN(
      pipeline::CompiledMatmulWorkPlan c,
      pipeline::CompileMatmulWorkPlan(text, compile,
                                      workplan::DeviceSet::Uniform(world.size(), sel.limits)));
  const workplan::MatmulWorkPlan& w = c.plan;
  if (events.note)
    for (const Diagnostic& d : c.whole.notes) events.note(d);
  if (w.verdict == execplan::Verdict::kRed) {
    std::vector<Diagnostic> why = w.findings;
    for (const workplan::BlockMemory& m : w.memory)
      for (const Diagnostic& d : m.findings)
        if (d.severity == Severity::kError) why.push_back(d);
    return Status(std::move(why));
  }
  const int rank = world.rank();
  const execplan::Plan& mine = *w.rank_plans[rank];
  if (events.note && rank == 0)
    for (const Diagnostic& d : mine.findings) events.note(d);
  if (events.backend) events.backend(sel.backend, sel.fallback_reason);

  // From here a failure may leave other ranks waiting at the gather: it ends the job.
  auto fail = [&](const Status& s) { world.Abort(s.errors().front()); };
  auto feeds = BlockFeeds(c, options.feeds, rank);
  if (!feeds.ok()) fail(feeds.status());
  runtime::RunOptions run_options;
  run_options.executor = options.executor;
  auto block = sel.executor->Run(mine, feeds.value(), run_options);
  if (!block.ok()) fail(block.status());
  const HostTensor& values = block->outputs.front().second;
  auto gathered = world.Gather(values.view<float>(), workplan::BlockCounts(w));
  if (!gathered.ok()) fail(gathered.status());
  if (rank != 0) return std::optional<RunReport>();

  RunReport report;
  report.backend = sel.backend;
  report.executor = block->executor;
  report.fallback_reason = sel.fallback_reason;
  report.attempts = sel.attempts;
  report.determinism_tier = policy::TierName(mine.graph().tier);
  report.content_id = c.whole.doc.content_id;
  report.profile = sel.profile.key;
  report.adapter = sel.profile.adapter;
  report.plan_hash = w.rank_hashes[0];
  report.tolerance = policy::ToleranceName(mine.graph().tolerance);
  report.thresholds = mine.thresholds;
  report.outputs.emplace_back(w.site.output, workplan::Assemble(w, gathered.value()));
  const int64_t whole_bytes = w.site.m * w.site.n * 4;
  report.stats = {{"ranks", w.ranks()},
                  {"axis", workplan::SplitAxisName(w.axis)},
                  {"steps", 1},
                  {"rank0_memory_allocated_bytes", mine.memory.allocated},
                  {"gathered_bytes", whole_bytes},
                  {"readback_bytes", values.bytes.size()},
                  {"wall_ms", std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - start)
                                  .count()}};
  return std::optional<RunReport>(std::move(report));
}

}  // namespace scellis::api
