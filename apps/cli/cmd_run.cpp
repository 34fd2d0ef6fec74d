// `scellis run`: compile, plan, pick a backend, execute, print the named outputs.
#include <charconv>
#include <iostream>

#include "backend/cpu/executor.h"
#include "common.h"
#include "core/atomic_file.h"

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

const char* kCpuBanner =
    "==================================================================================\n"
    " RUNNING ON THE CPU REFERENCE: slower than a GPU; heavy training is limited.\n"
    " why: %s\n"
    "==================================================================================\n";

}  // namespace

int RunCommand(const CompileFlags& f, const std::string& backend, int threads,
               const std::string& out_file, bool allow_software_adapter) {
  int code = 0;
  auto c = CompileFile(f, session::Rung::kExecplan, {}, code);
  if (!c) return code;
  const execplan::Plan& plan = *c->plan;
  if (plan.verdict == execplan::Verdict::kRed) return Report(plan.findings, f.file, f.json);
  PrintNotes(plan.findings, f.file);

  std::string reason = backend == "cpu" ? "requested with --backend=cpu"
                                        : "this build has no GPU backend";
  std::fprintf(stderr, kCpuBanner, reason.c_str());
  backend::cpu::CpuExecutor exec({.threads = threads});
  auto result = exec.Run(plan, {});
  if (!result.ok()) return Report(result.errors(), f.file, f.json);
  backend::RunResult& r = result.value();
  if (backend != "cpu") r.fallback_reason = reason;

  Json j = backend::ResultToJson(r);
  j["determinism_tier"] = policy::TierName(plan.graph().tier);
  j["content_id"] = c->doc.content_id;
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
  for (const auto& [name, t] : r.outputs) {
    std::cout << name << ": shape " << t.type.ShapeString() << " " << DTypeName(t.type.dtype)
              << " " << FormatValues(t.data) << "\n";
  }
  return 0;
}

}  // namespace scellis::cli
