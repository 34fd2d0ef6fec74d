#include "runtime/backends/cpu/backend.h"

#include "runtime/backends/cpu/executor.h"

namespace scellis::runtime::cpu {
namespace {

class CpuBackend : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string noun() const override { return "CPU reference"; }
  Result<ProbeReport> Probe(const BackendOptions& options) const override {
    CpuExecutor e({.threads = options.cpu_threads});
    return ProbeReport{"the reference, " + std::to_string(e.threads()) + " threads",
                       {{"threads", e.threads()}},
                       ""};
  }
  Result<std::unique_ptr<Executor>> Open(const BackendOptions& options) const override {
    return std::unique_ptr<Executor>(new CpuExecutor({.threads = options.cpu_threads}));
  }
  Status SupportsKernel(const kernel::Module& m, const kernel::Kernel& k) const override {
    if (k.kind == kernel::KernelKind::kOp) {
      if (kernel::ref::FindOp(k.op)) return Status::Ok();
      return UserError("unsupported-kernel", "", "the CPU reference has no kernel for " + k.op);
    }
    // A kernel of stages runs each stage as the elementwise kernel it was.
    for (const kernel::Kernel& stage : k.stages) SCELLIS_TRY(SupportsKernel(m, stage));
    for (const kernel::ExprStep& s : k.expr) {
      // Constants, ramps and permuted loads are the fused kernel's own (kernel/ref/ref.cpp).
      if (kernel::IsFreeStep(s.op) || kernel::IsPermutedLoad(s.op)) continue;
      if (!kernel::ref::FindScalar(s.op) && !kernel::ref::FindIntegerScalar(s.op))
        return UserError("unsupported-kernel", "",
                         "the CPU reference has no elementwise " + s.op + " (in " + k.name + ")");
    }
    return Status::Ok();
  }
  Result<std::string> ProfileKey(const BackendOptions&) const override {
    return ReferenceProfile().key;
  }
};

}  // namespace

std::unique_ptr<Backend> MakeBackend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace scellis::runtime::cpu
