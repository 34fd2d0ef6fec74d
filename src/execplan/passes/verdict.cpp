#include "execplan/passes/passes.h"

namespace scellis::execplan {
namespace {

class Judge {
 public:
  explicit Judge(Plan& p) : p_(p) {}

  void Run() {
    p_.verdict = Verdict::kGreen;
    p_.findings.clear();
    const MemoryPlan& mem = p_.memory;
    const DeviceLimits& lim = p_.limits;
    if (mem.largest_tensor > lim.max_buffer_bytes) {
      Red("tensor-over-device-limit",
          "the largest tensor needs " + FormatBytes(mem.largest_tensor) + " but " + lim.device +
              " allows buffers of at most " + FormatBytes(lim.max_buffer_bytes),
          "split the tensor or use a smaller batch");
    }
    MachineMemory();  // first: what no budget can change
    if (mem.allocated > mem.budget) {
      Red("memory-over-budget",
          "the plan needs " + FormatBytes(mem.allocated) + " (" + Breakdown() +
              ") but the budget is " + FormatBytes(mem.budget) + " (" + mem.budget_source + ")",
          "reduce the largest class (a smaller batch or smaller tensors), or raise the budget "
          "with --budget if the device has the memory");
    }
    Bindings();
    if (p_.verdict == Verdict::kRed) return;
    if (mem.allocated * 10 > mem.budget * 8) {
      Yellow("near-budget", "the plan uses " + FormatBytes(mem.allocated) + " of a " +
                                FormatBytes(mem.budget) + " budget (over 80%)");
    }
  }

 private:
  std::string Breakdown() const {
    std::string s;
    for (int c = 0; c < kMemClasses; ++c) {
      if (!p_.memory.by_class[c]) continue;
      s += (s.empty() ? "" : " + ") + std::string(MemClassName(static_cast<MemClass>(c))) + " " +
           FormatBytes(p_.memory.by_class[c]);
    }
    return s.empty() ? "nothing" : s;
  }

  // What the machine has, whatever the budget says: a plan that does not fit is refused here, so
  // the allocator never is.
  void MachineMemory() {
    const MemoryPlan& mem = p_.memory;
    const DeviceLimits& lim = p_.limits;
    if (!lim.buffers_in_host_memory && lim.device_memory_bytes > 0 &&
        mem.allocated > lim.device_memory_bytes) {
      Red("memory-over-device",
          "the plan needs " + FormatBytes(mem.allocated) + " of device memory (" + Breakdown() +
              ") but " + lim.device + " has " + FormatBytes(lim.device_memory_bytes) + " (" +
              lim.device_memory_source + ")",
          "use a smaller batch or smaller tensors; a larger --budget cannot add memory");
    }
    if (lim.host_memory_bytes <= 0) return;
    const int64_t buffers = lim.buffers_in_host_memory ? mem.allocated : 0;
    const int64_t need = SaturatingAdd(buffers, mem.host_staging);
    if (need <= lim.host_memory_bytes) return;
    std::string parts;
    if (buffers) parts = "buffers " + FormatBytes(buffers) + " + ";
    parts +=
        "host copies of inputs and outputs " + FormatBytes(mem.host_staging - p_.caller_host_bytes);
    if (p_.caller_host_bytes)
      parts += " + " + p_.caller_host_what + " " + FormatBytes(p_.caller_host_bytes);
    Red("memory-over-host",
        "the run needs " + FormatBytes(need) + " of host memory (" + parts + ") but the host has " +
            FormatBytes(lim.host_memory_bytes) + " (" + lim.host_memory_source + ")",
        "use a smaller batch or smaller tensors; a larger --budget cannot add memory");
  }

  // A buffer over the device's storage-binding cap can be bound in tiles only by an elementwise
  // kernel, and only where it has the output's shape (broadcast operands are bound whole).
  void Bindings() {
    const DeviceLimits& lim = p_.limits;
    const webir::Graph& g = p_.graph();
    for (const Step& s : p_.steps) {
      const kernel::Kernel& k = p_.module().kernels[s.kernel];
      const TensorType& out = g.at(k.output).type;
      bool elementwise = k.kind == kernel::KernelKind::kElementwise;
      std::vector<std::pair<int, int>> bound = {{s.write, k.output}};
      for (size_t i = 0; i < k.inputs.size(); ++i) bound.push_back({s.reads[i], k.inputs[i]});
      for (auto [buffer, node] : bound) {
        int64_t bytes = p_.buffers[buffer].bytes;
        if (bytes <= lim.max_binding_bytes) continue;
        bool tileable = elementwise && g.at(node).type.SameShape(out);
        if (tileable) {
          Yellow("tiled-binding", k.name + " binds %" + g.at(node).name + " (" +
                                      FormatBytes(bytes) + ") in tiles under the binding cap of " +
                                      FormatBytes(lim.max_binding_bytes));
        } else {
          Red("binding-cap-exceeded",
              k.name + " must bind %" + g.at(node).name + " (" + FormatBytes(bytes) +
                  ") whole, over " + lim.device + "'s storage binding cap of " +
                  FormatBytes(lim.max_binding_bytes),
              "only elementwise kernels are tiled over the cap; split the tensor, or run on the "
              "CPU "
              "reference (--backend=cpu)");
        }
      }
    }
  }

  void Red(std::string code, std::string message, std::string help) {
    p_.verdict = Verdict::kRed;
    p_.findings.push_back(UserError(std::move(code), "", std::move(message), std::move(help)));
  }
  void Yellow(std::string code, std::string message) {
    if (p_.verdict == Verdict::kGreen) p_.verdict = Verdict::kYellow;
    p_.findings.push_back(Warning(std::move(code), "", std::move(message)));
  }

  Plan& p_;
};

}  // namespace

Status JudgeVerdict(Plan& p) {
  for (const Step& s : p.steps)
    if (s.write < 0) return InternalError("execplan.JudgeVerdict", "needs buffers assigned first");
  Judge(p).Run();
  return Status::Ok();
}

}  // namespace scellis::execplan
