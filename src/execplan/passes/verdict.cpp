#include <algorithm>
#include <optional>

#include "execplan/passes/passes.h"
#include "kernel/tiling.h"

namespace scellis::execplan {
namespace {

constexpr const char* kSmallerPlanHelp =
    "reduce the largest class at peak (a smaller batch or smaller tensors)";

// What the plan would allocate in f16, buffer for buffer, so a red verdict can say whether f16
// would fit: every f32 value stored as f16, except the optimizer's moments; a trained f32
// parameter keeps its f32 master copy beside its f16 one (mixed precision), an untrained one is
// stored as f16 only. Same buffers and lifetimes as the plan; the dataset as it is.
bool Trains(const Plan& p) {
  return p.memory.by_class[static_cast<int>(MemClass::kOptimizerState)] > 0 ||
         p.memory.by_class[static_cast<int>(MemClass::kGradients)] > 0;
}

int64_t F16Bytes(const Plan& p) {
  const bool training = Trains(p);
  int64_t total = DatasetInBudget(p) ? p.dataset_bytes : 0;
  for (const Buffer& b : p.buffers) {
    // Optimizer moments and master weights stay f32 in mixed precision.
    if (b.tile_scratch || b.cls == MemClass::kOptimizerState || b.cls == MemClass::kMasterWeights) {
      total = SaturatingAdd(total, b.bytes);
      continue;
    }
    int64_t bytes = 0;
    for (int v : b.values) {
      const TensorType& t = p.graph().at(v).type;
      if (t.dtype != DType::kF32) {
        bytes = std::max(bytes, t.bytes());
        continue;
      }
      const int64_t half = StorageBytes(t.elements(), DType::kF16);
      bytes = std::max(bytes, training && b.cls == MemClass::kParameters ? t.bytes() + half : half);
    }
    total = SaturatingAdd(total, bytes);
  }
  return total;
}

// Whether the plan would fit `limit` in f16, with the bytes: part of a red memory verdict's help.
std::string F16Answer(const Plan& p, int64_t limit) {
  const int64_t bytes = F16Bytes(p);
  const bool training = Trains(p);
  std::string s = training ? "in mixed precision (f16 values and gradients, f32 master weights and "
                             "optimizer state) the plan would need "
                           : "with its f32 tensors stored as f16 the plan would need ";
  s += FormatBytes(bytes);
  s += bytes <= limit ? ", which fits"
                      : ", " + FormatBytes(bytes - limit) + " over: f16 would not fit either";
  if (training && bytes <= limit)
    s += ": declare \"mixed_precision\" in the train section (its f16 products need a GPU with "
         "shader-f16, or the CPU reference)";
  if (!training && bytes <= limit) s += " (f16 on a GPU needs its shader-f16 feature)";
  return s;
}

bool IsMemoryFinding(const Diagnostic& d) {
  return d.code == "memory-over-budget" || d.code == "memory-over-host" ||
         d.code == "memory-over-device";
}

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
          "the plan needs " + FormatBytes(mem.allocated) + " (" + Breakdown() + "), " +
              FormatBytes(mem.allocated - mem.budget) + " over the budget of " +
              FormatBytes(mem.budget) + " (" + mem.budget_source + "); " + Responsible(),
          std::string(kSmallerPlanHelp) +
              ", or raise the budget with --budget if the device has the memory; " +
              F16Answer(p_, mem.budget));
    }
    Bindings();
    StorageBuffers();
    if (p_.verdict == Verdict::kRed) return;
    if (mem.allocated * 10 > mem.budget * 8) {
      Yellow("near-budget", "the plan uses " + FormatBytes(mem.allocated) + " of a " +
                                FormatBytes(mem.budget) + " budget (over 80%)");
    }
  }

 private:
  // The class a smaller plan has to shrink: the largest at the peak of live memory.
  std::string Responsible() const {
    const MemoryPlan& mem = p_.memory;
    const MemClass c = DominantClass(mem);
    return std::string("the largest class at peak is ") + MemClassName(c) + " (" +
           FormatBytes(mem.at_peak[static_cast<int>(c)]) + " of " + FormatBytes(mem.peak_live) +
           " live)";
  }

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
              "), " + FormatBytes(mem.allocated - lim.device_memory_bytes) + " more than " +
              lim.device + " has (" + FormatBytes(lim.device_memory_bytes) + ", " +
              lim.device_memory_source + "); " + Responsible(),
          std::string(kSmallerPlanHelp) + "; a larger --budget cannot add memory; " +
              F16Answer(p_, lim.device_memory_bytes));
    }
    if (lim.host_memory_bytes <= 0) return;
    const int64_t buffers = lim.buffers_in_host_memory ? mem.allocated : 0;
    const int64_t need = SaturatingAdd(buffers, mem.host_staging);
    if (need <= lim.host_memory_bytes) return;
    std::string parts;
    if (buffers) parts = "buffers " + FormatBytes(buffers) + " + ";
    const int64_t dataset = p_.dataset && !DatasetInBudget(p_) ? p_.dataset_bytes : 0;
    parts +=
        "host copies of inputs and outputs " +
        FormatBytes(mem.host_staging - p_.caller_host_bytes - dataset - mem.watched_history_host);
    if (mem.watched_history_host)
      parts += " + the watched outputs' values of every step kept " +
               FormatBytes(mem.watched_history_host);
    if (p_.caller_host_bytes)
      parts += " + " + p_.caller_host_what + " " + FormatBytes(p_.caller_host_bytes);
    if (dataset) parts += " + the dataset " + FormatBytes(dataset);
    Red("memory-over-host",
        "the run needs " + FormatBytes(need) + " of host memory (" + parts + "), " +
            FormatBytes(need - lim.host_memory_bytes) + " more than the host has (" +
            FormatBytes(lim.host_memory_bytes) + ", " + lim.host_memory_source + "); " +
            Responsible(),
        std::string(kSmallerPlanHelp) + "; a larger --budget cannot add memory");
  }

  // A buffer over the device's storage-binding cap is bound in tiles by a kernel that tiles
  // element for element (elementwise, uniform, dropout: kernel::TilesPerElement) where it has the
  // output's shape (broadcast operands are bound whole), and by the kernels
  // kernel::PlanTiles cuts into tiles (matmul, sum, cumsum, softmax, cross entropy and its
  // gradient, layout copies) when every tile's windows fit.
  void Bindings() {
    const DeviceLimits& lim = p_.limits;
    const webir::Graph& g = p_.graph();
    for (const Step& s : p_.steps) {
      const kernel::Kernel& k = p_.module().kernels[s.kernel];
      const TensorType& out = g.at(k.output).type;
      bool elementwise = kernel::TilesPerElement(k);
      std::vector<std::pair<int, int>> bound = {{s.write, k.output}};
      for (size_t i = 0; i < k.inputs.size(); ++i) bound.push_back({s.reads[i], k.inputs[i]});
      // Extra outputs come last: only a kernel PlanTiles cuts binds them in tiles.
      for (size_t j = 0; j < k.extra_outputs.size(); ++j)
        bound.push_back({s.extra_writes[j], k.extra_outputs[j]});
      const std::optional<kernel::Tiling> tiling = StepTiling(p_, s);
      for (size_t b = 0; b < bound.size(); ++b) {
        auto [buffer, node] = bound[b];
        int64_t bytes = p_.buffers[buffer].bytes;
        if (bytes <= lim.max_binding_bytes) continue;
        // A shifted read reaches outside the tile's window.
        const bool extra = b > k.inputs.size();
        bool shifted = b > 0 && !extra && kernel::ReadsShifted(k, static_cast<int>(b) - 1);
        bool tileable = elementwise && !extra && !shifted && g.at(node).type.SameShape(out);
        if (tileable || tiling) {
          Yellow("tiled-binding",
                 k.name + " binds %" + g.at(node).name + " (" + FormatBytes(bytes) + ") in tiles" +
                     (tiling ? " (" + tiling->Describe() + ")" : "") +
                     " under the binding cap of " + FormatBytes(lim.max_binding_bytes));
        } else {
          Red("binding-cap-exceeded",
              k.name + " must bind %" + g.at(node).name + " (" + FormatBytes(bytes) +
                  ") whole, over " + lim.device + "'s storage binding cap of " +
                  FormatBytes(lim.max_binding_bytes),
              "only elementwise kernels (never at a shifted read), uniform and dropout, f32 "
              "matmuls (batched too), f32 sums, means and cumsums, f32 softmax (a row cut along "
              "itself when over the cap), f32 cross entropy rows (merged with their gradient "
              "too), f32 cross entropy gradient rows, and transposes, permutes (of any rank), "
              "slices (negative steps too), flips, reshapes, concats, stacks and constant pads "
              "(an empty input too) and slice_scatters of 4-byte elements are tiled over the cap "
              "(windows start at 256-byte multiples, so a tile needs at least one row plus 252 "
              "bytes under the cap); split the tensor, or run on the CPU reference "
              "(--backend=cpu)");
        }
      }
    }
  }

  // A kernel binding more storage buffers than the device lets one shader stage bind would fail
  // when its pipeline is made, after the run began: refused here instead. (The passes that merge
  // kernels keep to WebGPU's guaranteed 8; a fused elementwise kernel binds what its expression
  // reads.)
  void StorageBuffers() {
    const int64_t cap = p_.limits.max_storage_buffers_per_kernel;
    if (cap <= 0) return;
    const webir::Graph& g = p_.graph();
    for (const kernel::Kernel& k : p_.module().kernels) {
      const int bound = k.StorageBindings();
      if (bound <= cap) continue;
      p_.verdict = Verdict::kRed;
      p_.findings.push_back(UserError(
          "too-many-storage-buffers", g.at(k.output).origin,
          k.name + " binds " + std::to_string(bound) + " storage buffers (what it reads and " +
              "writes), over " + p_.limits.device + "'s limit of " + std::to_string(cap) +
              " per shader stage",
          "split the expression so that no kernel reads more than " + std::to_string(cap - 1) +
              " tensors (compute part of it into an output of its own), or run on the CPU "
              "reference (--backend=cpu)"));
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

void AttachBatchFit(Plan& p, BatchFit fit) {
  std::string help;
  if (fit.largest > 0) {
    help = "the largest batch that fits is " + fit.dim + "=" + std::to_string(fit.largest) +
           " (it plans " + VerdictName(fit.verdict_at_largest) + " at " +
           FormatBytes(fit.allocated_at_largest) + "; " + fit.dim + "=" +
           std::to_string(fit.largest + 1) + " plans red)";
    if (fit.largest_green > 0 && fit.largest_green != fit.largest)
      help += ", the largest that plans green " + fit.dim + "=" +
              std::to_string(fit.largest_green) + " (" +
              FormatBytes(fit.allocated_at_largest_green) + ")";
    help += ": train with batch " + std::to_string(fit.largest) + " or less";
  } else {
    help = "even batch 1 (" + fit.dim +
           "=1) plans red: no smaller batch fits; reduce the largest class at peak";
  }
  for (Diagnostic& d : p.findings) {
    if (!IsMemoryFinding(d) || d.severity != Severity::kError) continue;
    d.help = help;
    if (d.code == "memory-over-budget")
      d.help += ", or raise the budget with --budget if the device has the memory; " +
                F16Answer(p, p.memory.budget);
    if (d.code == "memory-over-device") d.help += "; " + F16Answer(p, p.limits.device_memory_bytes);
  }
  p.batch_fit = std::move(fit);
}

Status JudgeVerdict(Plan& p) {
  for (const Step& s : p.steps)
    if (s.write < 0) return InternalError("execplan.JudgeVerdict", "needs buffers assigned first");
  Judge(p).Run();
  return Status::Ok();
}

}  // namespace scellis::execplan
