// `scellis run`: compile, plan, pick a backend, execute, print the named outputs.
#include <charconv>
#include <chrono>
#include <iostream>

#include "runtime/backends/select.h"
#include "common.h"
#include "conform/receipt.h"
#include "base/atomic_file.h"

namespace scellis::cli {
namespace {

std::string FormatFloat(float v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string FormatValues(const std::vector<float>& data) {
  std::string s = "[";
  const size_t kShow = 8;
  for (size_t i = 0; i < data.size(); ++i) {
    if (data.size() > 2 * kShow && i == kShow) {
      s += "..., ";
      i = data.size() - kShow;
    }
    s += FormatFloat(data[i]);
    if (i + 1 < data.size()) s += ", ";
  }
  return s + "]";
}

// Runs `steps` steps of the plan as a prepared session: carried values stay on the device between
// steps, up to 64 steps go into one submission, and the outputs of the last step are returned.
Result<runtime::RunResult> RunSteps(runtime::Executor& exec, const execplan::Plan& plan,
                                    int steps) {
  auto start = std::chrono::steady_clock::now();
  SCELLIS_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Prepared> prepared, exec.Prepare(plan));
  std::vector<std::string> names;
  for (const webir::Output& o : plan.graph().outputs) names.push_back(o.name);
  runtime::StepsResult last;
  int submissions = 0;
  for (int done = 0; done < steps;) {
    int k = std::min(steps - done, 64);
    SCELLIS_ASSIGN_OR_RETURN(last, prepared->RunSteps(std::vector<runtime::Feeds>(k), names));
    done += k;
    ++submissions;
  }
  runtime::RunResult r;
  r.backend = prepared->backend();
  r.executor = r.backend == "webgpu" ? "fused-encoder" : "reference";
  for (auto& [name, values] : last.watched) r.outputs.emplace_back(name, std::move(values.back()));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  r.stats = {{"steps", steps},
             {"submissions", submissions},
             {"kernels", plan.steps.size()},
             {"wall_ms", ms},
             {"memory_allocated_bytes", plan.memory.allocated}};
  return r;
}

}  // namespace

int RunCommand(const CompileFlags& f, const std::string& backend, int threads,
               const std::string& out_file, bool allow_software_adapter, int steps) {
  // The backend is chosen first: the plan is judged against the limits of the device it runs on.
  auto selection = runtime::SelectBackend({.requested = backend,
                                           .allow_software_adapter = allow_software_adapter,
                                           .cpu_threads = threads});
  if (!selection.ok()) return Report(selection.errors(), "", f.json);
  runtime::Selection& sel = selection.value();
  int code = 0;
  auto c = CompileFile(f, pipeline::Rung::kExecplan, sel.limits, code);
  if (!c) return code;
  const execplan::Plan& plan = *c->plan;
  if (plan.verdict == execplan::Verdict::kRed) return Report(plan.findings, f.file, f.json);
  PrintNotes(plan.findings, f.file);

  if (sel.backend == "cpu") {
    std::cerr << runtime::CpuBanner(sel.fallback_reason ? *sel.fallback_reason
                                                        : "requested with --backend=cpu");
  }
  if (steps < 1)
    return Report({UserError("bad-flag", "", "--steps takes a positive count")}, "", f.json);
  auto result = steps == 1 ? sel.executor->Run(plan, {}) : RunSteps(*sel.executor, plan, steps);
  if (!result.ok()) return Report(result.errors(), f.file, f.json);
  runtime::RunResult& r = result.value();
  r.fallback_reason = sel.fallback_reason;
  r.attempts = sel.attempts;

  Json j = runtime::ResultToJson(r);
  j["determinism_tier"] = policy::TierName(plan.graph().tier);
  j["content_id"] = c->doc.content_id;
  // Which kernels have earned trust on this device: receipts gate trust, not execution.
  std::optional<conform::ReceiptReport> receipts;
  if (sel.backend == "webgpu") {
    if (auto store = store::Store::Open(); store.ok()) {
      receipts = conform::CheckReceipts(*store, sel.profile.key, plan.module, plan.graph().tier);
      j["receipts"] = receipts->ToJson();
    }
  }
  if (!out_file.empty()) {
    Status s = WriteFileAtomic(out_file, j.dump(2) + "\n");
    if (!s.ok()) return Report(s.errors(), "", f.json);
  }
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "backend: " << r.backend << "  executor: " << r.executor
            << "  tier: " << policy::TierName(plan.graph().tier)
            << "  fallback: " << (r.fallback_reason ? *r.fallback_reason : "none") << "\n";
  if (receipts) std::cout << receipts->Line() << "\n";
  for (const auto& [name, t] : r.outputs) {
    const std::vector<float> values = t.ToFloats();
    std::cout << name << ": shape " << t.type.ShapeString() << " " << DTypeName(t.type.dtype);
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
  return 0;
}

}  // namespace scellis::cli
