// Fuzz target: any bytes, taken as a document, go down the whole ladder to an ExecPlan with a
// declared tier. Every rung must either refuse with diagnostics or produce an artifact that passes
// its verifier and prints; it must never crash, hang or report an internal error. Small green
// plans are also run on the CPU reference, so its kernels see the same inputs.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "runtime/backends/cpu/executor.h"
#include "kernel/module.h"
#include "pipeline/compile.h"

namespace {

[[noreturn]] void Fail(const scellis::Diagnostic& d) {
  std::fprintf(stderr, "%s\n", d.Format("fuzz input").c_str());
  std::abort();
}

void CheckNoInternalErrors(const std::vector<scellis::Diagnostic>& errors) {
  for (const scellis::Diagnostic& d : errors)
    if (d.kind == scellis::ErrorKind::kInternal) Fail(d);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scellis;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  pipeline::CompileOptions options;
  options.lower.tier = policy::Tier::kProd;
  options.plan.budget_bytes = int64_t{1} << 30;  // not the host's free memory: runs must repeat
  auto c = pipeline::Compile(text, options);
  if (!c.ok()) {
    CheckNoInternalErrors(c.errors());
    return 0;
  }
  // Every rung prints, in text and JSON.
  for (int r = 0; r <= static_cast<int>(pipeline::Rung::kExecplan); ++r) {
    (void)pipeline::PrintRung(c.value(), static_cast<pipeline::Rung>(r));
    (void)pipeline::RungJson(c.value(), static_cast<pipeline::Rung>(r)).dump();
  }
  (void)kernel::PrintWgsl(*c->module);

  const execplan::Plan& plan = *c->plan;
  if (plan.verdict != execplan::Verdict::kRed && plan.memory.allocated <= (int64_t{1} << 20)) {
    runtime::cpu::CpuExecutor exec({.threads = 1});
    auto r = exec.Run(plan, {});
    if (!r.ok()) CheckNoInternalErrors(r.errors());
  }
  return 0;
}
