// Plans buffers and memory for a kernel module: static liveness, buffer reuse, the memory plan by
// class and the verdict against the budget and the device's limits.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "execplan/plan.h"

namespace scellis::execplan {
namespace {

MemClass ClassOf(const webir::Graph& g, const webir::Node& n,
                 const std::vector<std::vector<int>>& users) {
  if (n.purpose == webir::Purpose::kGradient) return MemClass::kGradients;
  if (n.purpose == webir::Purpose::kOptimizerState) return MemClass::kOptimizerState;
  switch (n.role) {
    case webir::Role::kParam:
      return MemClass::kParameters;
    case webir::Role::kInput:
      // Moments and velocities fed back each step are optimizer state, not data.
      return n.purpose == webir::Purpose::kOptimizerState ? MemClass::kOptimizerState
                                                          : MemClass::kInputs;
    default:
      break;
  }
  for (int u : users[n.id])
    if (g.at(u).purpose == webir::Purpose::kGradient) return MemClass::kActivations;
  return MemClass::kWorking;
}

class Planner {
 public:
  Planner(const kernel::Module& m, const PlanOptions& o) : m_(m), options_(o) {}

  Result<Plan> Run() {
    const webir::Graph& g = m_.graph;
    plan_.module = m_;
    plan_.target = options_.limits;
    plan_.buffer_of.assign(g.nodes.size(), -1);
    plan_.thresholds = policy::ResolveThresholds(g.tolerance, g.tier);
    std::vector<std::vector<int>> users = g.Users();

    std::vector<bool> is_output(g.nodes.size(), false);
    for (const webir::Output& o : g.outputs) is_output[o.node] = true;

    // Last step that reads each value.
    std::vector<int> last_read(g.nodes.size(), -1);
    for (size_t s = 0; s < m_.kernels.size(); ++s)
      for (int in : m_.kernels[s].inputs) last_read[in] = static_cast<int>(s);

    // Sources live for the whole run.
    for (const webir::Node& n : g.nodes) {
      if (n.role == webir::Role::kInput || n.role == webir::Role::kParam)
        Assign(n.id, ClassOf(g, n, users), /*pinned=*/true);
    }
    int64_t live = 0;
    for (const Buffer& b : plan_.buffers) live += b.bytes;
    plan_.memory.peak_live = live;

    for (size_t s = 0; s < m_.kernels.size(); ++s) {
      const kernel::Kernel& k = m_.kernels[s];
      const webir::Node& out = g.at(k.output);
      MemClass cls = ClassOf(g, out, users);
      bool pinned = is_output[out.id] || cls == MemClass::kOptimizerState;
      Assign(out.id, cls, pinned);
      live += out.type.bytes();
      plan_.memory.peak_live = std::max(plan_.memory.peak_live, live);

      Step step;
      step.kernel = static_cast<int>(s);
      for (int in : k.inputs) step.reads.push_back(plan_.buffer_of[in]);
      step.write = plan_.buffer_of[out.id];
      plan_.steps.push_back(step);

      // Values whose last reader just ran free their buffers for later steps (once each, even
      // when the kernel reads the value twice, as matmul(a, a) does).
      for (size_t i = 0; i < k.inputs.size(); ++i) {
        int in = k.inputs[i];
        if (last_read[in] != static_cast<int>(s)) continue;
        if (std::find(k.inputs.begin(), k.inputs.begin() + i, in) != k.inputs.begin() + i) continue;
        Buffer& b = plan_.buffers[plan_.buffer_of[in]];
        if (b.pinned) continue;
        live -= g.at(in).type.bytes();
        free_.push_back(b.id);
      }
      if (last_read[out.id] < 0 && !pinned) {  // written but never read: free at once
        live -= out.type.bytes();
        free_.push_back(plan_.buffer_of[out.id]);
      }
    }

    for (const Buffer& b : plan_.buffers) {
      plan_.memory.by_class[static_cast<int>(b.cls)] += b.bytes;
      plan_.memory.allocated += b.bytes;
      plan_.memory.largest_tensor = std::max(plan_.memory.largest_tensor, b.bytes);
    }
    Judge();
    return std::move(plan_);
  }

 private:
  void Assign(int node, MemClass cls, bool pinned) {
    int64_t bytes = m_.graph.at(node).type.bytes();
    if (!pinned) {
      // Best fit among free buffers of the same class.
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        const Buffer& b = plan_.buffers[*it];
        if (b.cls != cls || b.bytes < bytes) continue;
        if (best == free_.end() || b.bytes < plan_.buffers[*best].bytes) best = it;
      }
      if (best != free_.end()) {
        int id = *best;
        free_.erase(best);
        plan_.buffers[id].values.push_back(node);
        plan_.buffer_of[node] = id;
        return;
      }
    }
    Buffer b;
    b.id = static_cast<int>(plan_.buffers.size());
    b.bytes = bytes;
    b.cls = cls;
    b.pinned = pinned;
    b.values = {node};
    plan_.buffer_of[node] = b.id;
    plan_.buffers.push_back(b);
  }

  std::string Breakdown() const {
    std::string s;
    for (int c = 0; c < kMemClasses; ++c) {
      if (!plan_.memory.by_class[c]) continue;
      s += (s.empty() ? "" : " + ") + std::string(MemClassName(static_cast<MemClass>(c))) + " " +
           FormatBytes(plan_.memory.by_class[c]);
    }
    return s.empty() ? "nothing" : s;
  }

  void Judge() {
    MemoryPlan& mem = plan_.memory;
    if (options_.budget_bytes) {
      mem.budget = *options_.budget_bytes;
      mem.budget_source = "--budget";
    } else if (m_.graph.budget_bytes) {
      mem.budget = *m_.graph.budget_bytes;
      mem.budget_source = "the document";
    } else {
      mem.budget = DetectHostBudget();
      mem.budget_source =
          options_.limits.device == "cpu" ? "detected: 80% of available host memory" : "detected";
    }
    const DeviceLimits& lim = options_.limits;
    plan_.verdict = Verdict::kGreen;
    if (mem.largest_tensor > lim.max_buffer_bytes) {
      Red("tensor-over-device-limit",
          "the largest tensor needs " + FormatBytes(mem.largest_tensor) + " but " + lim.device +
              " allows buffers of at most " + FormatBytes(lim.max_buffer_bytes),
          "split the tensor or use a smaller batch");
    }
    if (mem.allocated > mem.budget) {
      Red("memory-over-budget",
          "the plan needs " + FormatBytes(mem.allocated) + " (" + Breakdown() +
              ") but the budget is " + FormatBytes(mem.budget) + " (" + mem.budget_source + ")",
          "reduce the largest class (a smaller batch or smaller tensors), or raise the budget "
          "with --budget if the device has the memory");
    }
    JudgeBindings();
    if (plan_.verdict == Verdict::kRed) return;
    if (mem.allocated * 10 > mem.budget * 8) {
      Yellow("near-budget", "the plan uses " + FormatBytes(mem.allocated) + " of a " +
                                FormatBytes(mem.budget) + " budget (over 80%)");
    }
  }

  // A buffer over the device's storage-binding cap can be bound in tiles only by an elementwise
  // kernel, and only where it has the output's shape (broadcast operands are bound whole).
  void JudgeBindings() {
    const DeviceLimits& lim = options_.limits;
    for (const Step& s : plan_.steps) {
      const kernel::Kernel& k = m_.kernels[s.kernel];
      const TensorType& out = m_.graph.at(k.output).type;
      bool elementwise = k.kind == kernel::KernelKind::kElementwise;
      std::vector<std::pair<int, int>> bound = {{s.write, k.output}};
      for (size_t i = 0; i < k.inputs.size(); ++i) bound.push_back({s.reads[i], k.inputs[i]});
      for (auto [buffer, node] : bound) {
        int64_t bytes = plan_.buffers[buffer].bytes;
        if (bytes <= lim.max_binding_bytes) continue;
        bool tileable = elementwise && m_.graph.at(node).type.SameShape(out);
        if (tileable) {
          Yellow("tiled-binding", k.name + " binds %" + m_.graph.at(node).name + " (" +
                                      FormatBytes(bytes) + ") in tiles under the binding cap of " +
                                      FormatBytes(lim.max_binding_bytes));
        } else {
          Red("binding-cap-exceeded",
              k.name + " must bind %" + m_.graph.at(node).name + " (" + FormatBytes(bytes) +
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
    plan_.verdict = Verdict::kRed;
    plan_.findings.push_back(UserError(std::move(code), "", std::move(message), std::move(help)));
  }
  void Yellow(std::string code, std::string message) {
    if (plan_.verdict == Verdict::kGreen) plan_.verdict = Verdict::kYellow;
    plan_.findings.push_back(Warning(std::move(code), "", std::move(message)));
  }

  const kernel::Module& m_;
  const PlanOptions& options_;
  Plan plan_;
  std::vector<int> free_;
};

}  // namespace

int64_t DetectHostBudget() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024 / 10 * 8;
  }
  return int64_t{4} << 30;
}

Result<Plan> FromKernel(const kernel::Module& m, const PlanOptions& options) {
  SCELLIS_TRY(kernel::Verify(m));
  auto p = Planner(m, options).Run();
  if (p.ok()) SCELLIS_TRY(Verify(p.value()));
  return p;
}

}  // namespace scellis::execplan
