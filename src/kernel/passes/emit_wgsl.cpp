#include "base/sha256.h"
#include "kernel/emit/wgsl/codegen.h"
#include "kernel/passes/passes.h"

namespace scellis::kernel {

Status EmitWgsl(Module& m) {
  for (Kernel& k : m.kernels) {
    SCELLIS_ASSIGN_OR_RETURN(wgsl::Generated generated, wgsl::Generate(m, k));
    EmittedSource& src = k.Wgsl();
    src.source = std::move(generated.source);
    src.source_hash = Sha256Hex(src.source);
    src.user_first_line = generated.user_first_line;
    src.user_lines = generated.user_lines;
    k.workgroups = generated.workgroups;
    // A wide sum's second dispatch, the partial sums into the result (the device program binds
    // the scratch between the two).
    std::erase_if(k.sources,
                  [](const EmittedSource& e) { return e.target == kWgslSumFinishTarget; });
    if (k.sum_schedule && k.sum_schedule->TwoStages()) {
      wgsl::Generated finish = wgsl::WideSumFinish(m, k);
      k.sources.push_back({kWgslSumFinishTarget, finish.source, "main", Sha256Hex(finish.source)});
    }
  }
  return Status::Ok();
}

}  // namespace scellis::kernel
