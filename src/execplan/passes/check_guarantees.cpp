#include "execplan/passes/check_guarantees.h"

#include <algorithm>

namespace scellis::execplan {
namespace {

// As the document names it: `exp #3`, or `exp "scores"`.
std::string DocumentName(const webir::Node& n) {
  return n.label.empty() ? n.op + " #" + n.name : n.op + " \"" + n.label + "\"";
}

struct Loosest {
  policy::ToleranceClass tolerance = policy::ToleranceClass::kExact;
  const webir::Node* node = nullptr;  // the first node that needs it
  std::string why;
};

// The strictest class the plan's kernels can honour on a GPU: each op's class from the op table,
// and `tight` for a fused chain of arithmetic, which a GPU compiler may contract into FMAs that
// round once where the reference rounds twice.
Loosest LoosestOnGpu(const Plan& plan) {
  const webir::Graph& g = plan.graph();
  Loosest out;
  auto raise = [&](policy::ToleranceClass t, const webir::Node& n, std::string why) {
    if (t > out.tolerance) out = {t, &n, std::move(why)};
  };
  for (const kernel::Kernel& k : plan.module().kernels) {
    int arithmetic = 0;
    for (int id : k.nodes) {
      const webir::Node& n = g.at(id);
      const ops::OpSpec* spec = g.ops->Find(n.op);
      if (!spec || spec->kind == ops::OpKind::kSource) continue;
      ++arithmetic;
      raise(spec->tolerance, n,
            "the op \"" + n.op + "\" is " + policy::ToleranceName(spec->tolerance) + " on a GPU");
    }
    if ((k.kind == kernel::KernelKind::kElementwise || k.kind == kernel::KernelKind::kTiledStages ||
         k.kind == kernel::KernelKind::kRowStages || k.HasEpilogue()) &&
        arithmetic > 1 && k.output >= 0) {
      raise(policy::ToleranceClass::kTight, g.at(k.output),
            "it is fused with other arithmetic into one kernel, which a GPU compiler may "
            "contract into fused multiply-adds");
    }
  }
  return out;
}

}  // namespace

Status CheckGuarantees(const Plan& plan) {
  const webir::Graph& g = plan.graph();
  const std::string& backend = plan.limits.backend;
  if (backend != "webgpu") return Status::Ok();  // the CPU reference keeps every guarantee
  std::vector<Diagnostic> errors;
  if (g.bit_exact_across_devices) {
    errors.push_back(UserError(
        "cross-device-bit-exactness", "/determinism",
        "the document asks for the same bits on every device, but WebGPU results depend on the "
        "driver's arithmetic",
        "run it with --backend=cpu: the CPU reference gives the same bits on every machine"));
  }
  if (g.tolerance == policy::ToleranceClass::kExact) {
    Loosest loosest = LoosestOnGpu(plan);
    if (loosest.node) {
      Diagnostic d = UserError(
          "tolerance-unachievable", loosest.node->origin,
          "the document declares \"tolerance\": \"exact\", which WebGPU cannot honour here: " +
              loosest.why,
          std::string("run it with --backend=cpu (the reference is exact), or declare ") +
              "\"tolerance\": \"" + policy::ToleranceName(loosest.tolerance) +
              "\", the strictest class these kernels allow on a GPU");
      d.where = DocumentName(*loosest.node);
      errors.push_back(std::move(d));
    }
  }
  if (!errors.empty()) return Status(errors);
  return Status::Ok();
}

}  // namespace scellis::execplan
