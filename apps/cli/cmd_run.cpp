// `scellis run`: parses the flags, runs the document through the engine's run facade and prints
// the report: backend line, receipts, the outputs (last values), any histories, and the readback.
#include <algorithm>
#include <iostream>

#include "api/run.h"
#include "api/run_split.h"
#include "base/atomic_file.h"
#include "common.h"
#include "record/run_record.h"
#include "workplan/mpi/mpi_job.h"

namespace scellis::cli {
namespace {

std::string FormatValues(const std::vector<std::string>& data) {
  std::string s = "[";
  const size_t kShow = 8;
  for (size_t i = 0; i < data.size(); ++i) {
    if (data.size() > 2 * kShow && i == kShow) {
      s += "..., ";
      i = data.size() - kShow;
    }
    s += data[i];
    if (i + 1 < data.size()) s += ", ";
  }
  return s + "]";
}

void PrintTensor(const std::string& name, const runtime::HostTensor& t) {
  std::cout << name << ": shape " << t.type.ShapeString() << " " << DTypeName(t.type.dtype);
  std::vector<std::string> values = api::ValueTexts(t);
  std::vector<int64_t> sizes = t.type.sizes();
  if (sizes.size() == 2 && sizes[0] > 1 && sizes[0] <= 16 && sizes[1] <= 16) {
    // Small matrices (a Game-of-Life grid, say) read better as rows.
    std::cout << "\n";
    for (int64_t r = 0; r < sizes[0]; ++r)
      std::cout << "  "
                << FormatValues(
                       {values.begin() + r * sizes[1], values.begin() + (r + 1) * sizes[1]})
                << "\n";
  } else {
    std::cout << " " << FormatValues(values) << "\n";
  }
}

// A history prints one line per step, the middle elided when it is long.
void PrintHistory(const std::string& name, const std::vector<runtime::HostTensor>& steps) {
  std::cout << name << " (history, " << steps.size() << " steps): shape "
            << steps.front().type.ShapeString() << " " << DTypeName(steps.front().type.dtype)
            << "\n";
  const size_t kShow = 8;
  for (size_t k = 0; k < steps.size(); ++k) {
    if (steps.size() > 2 * kShow && k == kShow) {
      std::cout << "  ...\n";
      k = steps.size() - kShow;
    }
    std::cout << "  step " << k + 1 << ": " << FormatValues(api::ValueTexts(steps[k])) << "\n";
  }
}

void PrintReport(const api::RunReport& report) {
  std::cout << "backend: " << report.backend << "  executor: " << report.executor
            << "  tier: " << report.determinism_tier
            << "  fallback: " << (report.fallback_reason ? *report.fallback_reason : "none")
            << "\n";
  if (report.receipts) {
    std::cout << report.receipts->Line() << "\n";
    // A receipt that failed its checks is not counted; why goes to stderr, beside the result.
    for (const std::string& w : report.receipts->warnings) std::cerr << "warning: " << w << "\n";
  }
  if (!report.streaming.is_null()) {
    const Json& s = report.streaming;
    std::cout << "streamed: input \"" << s["input"].get<std::string>() << "\", "
              << s["rows"].get<int64_t>() << " rows in " << s["chunks"].get<int64_t>()
              << " chunks of " << s["chunk_rows"].get<int64_t>() << " rows\n";
  }
  for (const auto& [name, t] : report.outputs) PrintTensor(name, t);
  for (const auto& [name, steps] : report.history) PrintHistory(name, steps);
}

// `run --ranks=N`: the document's matmul in blocks over the ranks of an MPI job (one process alone
// with --ranks=1). Rank 0 prints the report; the other ranks print nothing. The run leaves no
// record: a replay runs in one process.
int RunSplitCommand(const CompileFlags& f, const RunFlags& r, const api::RunOptions& options,
                    const std::string& text) {
  Result<std::unique_ptr<workplan::Collective>> world =
      r.ranks > 1 ? workplan::JoinMpiJob(r.ranks, r.collective_timeout_seconds)
                  : Result<std::unique_ptr<workplan::Collective>>(workplan::SingleProcess());
  if (!world.ok()) return Report(world.errors(), f.file, f.json);
  const bool speaker = world.value()->rank() == 0;
  api::SplitRunEvents events;
  events.note = [&](const Diagnostic& d) { PrintNotes({d}, f.file); };
  events.backend = [&](const std::string& backend, const std::optional<std::string>& fallback) {
    if (backend == "cpu" && speaker)
      std::cerr << runtime::CpuBanner(fallback ? *fallback : "requested with --backend=cpu");
  };
  auto result = api::RunSplit(text, options, *world.value(), events);
  // Refusals happen alike on every rank, before any collective: rank 0 says why.
  if (!result.ok())
    return speaker ? Report(result.errors(), f.file, f.json) : ExitCodeFor(result.errors().front());
  if (!result.value()) return 0;
  const api::RunReport& report = *result.value();
  Json j = report.ToJson();
  j["run_id"] = Json();
  if (!r.out_file.empty()) {
    Status s = WriteFileAtomic(r.out_file, j.dump(2) + "\n");
    if (!s.ok()) return Report(s.errors(), "", f.json);
  }
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  PrintReport(report);
  std::cout << "ranks: " << report.stats["ranks"].get<int>() << ", the output's "
            << report.stats["axis"].get<std::string>() << " in blocks gathered to rank 0 ("
            << report.stats["gathered_bytes"].get<int64_t>() << " bytes)\n";
  return 0;
}

// Whether `text` is a training workflow whose dataset feeds its inputs (one that does not compile
// to the block rung is left for the run to report).
bool TrainingWorkflow(const std::string& text, pipeline::CompileOptions options) {
  options.up_to = pipeline::Rung::kBlock;
  options.print_after.clear();
  auto c = pipeline::Compile(text, options);
  return c.ok() && c->program && api::DatasetNotRead(*c->program);
}

// A training workflow is judged as `plan` and `validate` judge it, its dataset counted: red is
// refused with the same findings and fix; otherwise its warnings are said, and the run is refused
// by name, since it reads no dataset to feed the inputs the dataset feeds.
int JudgeTrainingWorkflow(const CompileFlags& f, int& code) {
  auto c = CompilePlan(f, PlanFlags{}, /*say_unmeasured=*/true, code);
  if (!c) return code;
  const execplan::Plan& p = *c->plan;
  if (p.verdict == execplan::Verdict::kRed) return Report(p.findings, f.file, f.json);
  PrintNotes(p.findings, f.file);
  return Report({*api::DatasetNotRead(*c->program)}, f.file, f.json);
}

}  // namespace

int RunCommand(const CompileFlags& f, const RunFlags& r) {
  // Timestamps are a WebGPU device's; `auto` might pick the CPU and time nothing.
  if (r.gpu_timestamps && r.backend != "webgpu") {
    return Report({UserError("bad-flag", "",
                             "--gpu-timestamps times WebGPU dispatches, and the backend is \"" +
                                 r.backend + "\"",
                             "add --backend=webgpu")},
                  f.file, f.json);
  }
  api::RunOptions options;
  options.select = {.requested = r.backend,
                    .allow_software_adapter = r.allow_software_adapter,
                    .cpu_threads = r.threads,
                    .adapter = r.adapter,
                    .gpu_timestamps = r.gpu_timestamps};
  options.steps = r.steps;
  options.history = r.history;
  if (!r.executor.empty())
    options.executor = r.executor == "fused" ? runtime::kFusedEncoder : runtime::kGenericExecutor;
  auto compile = CompileOptionsFrom(f);
  if (!compile.ok()) return Report(compile.errors(), "", f.json);
  options.compile = compile.value();
  auto text = ReadFile(f.file, size_t{256} << 20);
  if (!text.ok()) return Report(text.errors(), f.file, f.json);
  if (int code = 0; TrainingWorkflow(text.value(), options.compile))
    return JudgeTrainingWorkflow(f, code);
  if (r.ranks > 0) return RunSplitCommand(f, r, options, text.value());

  api::RunEvents events;
  events.note = [&](const Diagnostic& d) { PrintNotes({d}, f.file); };
  events.backend = [](const std::string& backend, const std::optional<std::string>& fallback) {
    if (backend == "cpu")
      std::cerr << runtime::CpuBanner(fallback ? *fallback : "requested with --backend=cpu");
  };
  // A streamed input runs chunk after chunk: each chunk's rows are said on stderr, as they end.
  events.stream_progress = [](int64_t done, int64_t rows) {
    std::cerr << "\rstreamed " << done << " of " << rows << " rows" << (done == rows ? "\n" : "")
              << std::flush;
  };
  auto result = api::Run(text.value(), options, events);
  if (!result.ok()) return Report(result.errors(), f.file, f.json);
  const api::RunReport& report = result.value();

  const std::string run_id = RecordOrWarn(r.no_record, [&](const store::Store& store) {
    return record::RecordRun(store, text.value(), options, report);
  });
  Json j = report.ToJson();
  j["run_id"] = run_id.empty() ? Json() : Json(run_id);
  if (!r.out_file.empty()) {
    Status s = WriteFileAtomic(r.out_file, j.dump(2) + "\n");
    if (!s.ok()) return Report(s.errors(), "", f.json);
  }
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  PrintReport(report);
  std::cout << "readback: " << report.readback_bytes() << " bytes over " << report.steps
            << (report.steps == 1 ? " step" : " steps") << "\n";
  if (report.stats.contains("gpu_timestamps")) {  // --gpu-timestamps; each dispatch's time: --json
    const Json& gpu = report.stats["gpu_timestamps"];
    std::cout << "gpu timestamps: " << gpu["dispatches"].get<int64_t>() << " of "
              << report.stats.value("dispatches", int64_t{0})
              << " dispatches timed, each in a pass of its own: busy "
              << gpu["busy_us"].get<double>() << " us, idle between them "
              << gpu["gaps_us"].get<double>() << " us\n";
    // The kernels that took the most of it, with their share.
    std::vector<std::pair<double, std::string>> kernels;
    for (const auto& [kernel, sums] : gpu["by_kernel"].items())
      kernels.push_back({sums["busy_us"].get<double>(), kernel});
    std::sort(kernels.rbegin(), kernels.rend());
    const double busy = std::max(gpu["busy_us"].get<double>(), 1e-9);
    for (size_t i = 0; i < kernels.size() && i < 5; ++i) {
      std::cout << "  " << kernels[i].second << ": " << kernels[i].first << " us ("
                << static_cast<int>(100 * kernels[i].first / busy + 0.5) << "%), "
                << gpu["by_kernel"][kernels[i].second]["dispatches"].get<int64_t>()
                << " dispatches\n";
    }
  }
  if (!run_id.empty())
    std::cout << "run record: " << run_id << " (scellis replay " << run_id << ")\n";
  return 0;
}

}  // namespace scellis::cli
