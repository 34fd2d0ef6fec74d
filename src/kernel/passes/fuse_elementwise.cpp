#include <map>
#include <set>

#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

class Fusion {
 public:
  explicit Fusion(const webir::Graph& g) : g_(g), users_(g.Users()) {
    for (const webir::Output& o : g.outputs) is_output_.insert(o.node);
  }

  bool Folded(const webir::Node& n) const {
    if (!FoldableIntoUsers(n)) return false;
    const std::vector<int>& users = users_[n.id];
    if (users.empty()) return n.op == "full";
    // A butterfly is one load of a buffer: each reader loads it again rather than have it
    // stored (a compare-exchange stage reads its partner twice, for the minimum and maximum).
    return IsFreeStep(n.op) || n.op == "butterfly" || users.size() == 1 || RecomputedInLoop(n);
  }

  // Whether `n` can be a step of its users' kernels: an elementwise value, not an output, read
  // only by elementwise ops that read it at their own element (a shift or butterfly reads other
  // elements, so its operand must be in a buffer).
  bool FoldableIntoUsers(const webir::Node& n) const {
    if (n.role == webir::Role::kInput || n.role == webir::Role::kParam) return false;
    if (!IsElementwiseNode(g_, n) || is_output_.count(n.id)) return false;
    for (int u : users_[n.id])
      if (!IsElementwiseNode(g_, g_.at(u)) || IsPermutedLoad(g_.at(u).op)) return false;
    return true;
  }

  // In a repeated graph every kernel of the body is a dispatch per iteration, so a small value
  // read by several elementwise kernels is recomputed in each rather than given a kernel and a
  // buffer of its own (Gray-Scott's u·v², read by both fields' updates: two dispatches per
  // iteration instead of three). Small: at most kMaxRecomputedSteps steps over buffers and
  // constants, none of them itself read elsewhere, so recomputation never nests.
  static constexpr int kMaxRecomputedSteps = 4;
  bool RecomputedInLoop(const webir::Node& n) const {
    if (g_.repeat <= 1 || IsPermutedLoad(n.op)) return false;
    int steps = 0;
    std::vector<int> pending = {n.id};
    while (!pending.empty()) {
      const webir::Node& x = g_.at(pending.back());
      pending.pop_back();
      if (++steps > kMaxRecomputedSteps) return false;
      for (int a : x.args) {
        const webir::Node& arg = g_.at(a);
        if (!FoldableIntoUsers(arg)) continue;  // read from its buffer
        if (IsPermutedLoad(arg.op)) return false;
        if (!IsFreeStep(arg.op) && users_[a].size() != 1) return false;
        pending.push_back(a);
      }
    }
    return true;
  }

  // The kernel rooted at elementwise node `root`: its folded producers become steps (each after
  // the steps of its own args, in argument order), everything else an input.
  Kernel Build(const webir::Node& root) {
    Kernel k;
    k.kind = KernelKind::kElementwise;
    k.op = "fused";
    k.output = root.id;
    std::map<int, int> step_of, input_of;
    std::vector<int> operands;
    for (int a : root.args) operands.push_back(Operand(a, k, step_of, input_of));
    AddStep(root, operands, k);
    return k;
  }

 private:
  void AddStep(const webir::Node& n, std::vector<int> operands, Kernel& k) {
    ExprStep s;
    s.op = n.op;
    s.node = n.id;
    if (n.op == "full") s.value = n.attrs.at("value").get<double>();
    s.operands = std::move(operands);
    k.expr.push_back(std::move(s));
    k.nodes.push_back(n.id);
  }

  // Iterative, because a fused chain can be as long as the document: recursion would overflow the
  // stack.
  int Operand(int id, Kernel& k, std::map<int, int>& step_of, std::map<int, int>& input_of) {
    auto input = [&](int node) {
      auto [it, added] = input_of.try_emplace(node, static_cast<int>(k.inputs.size()));
      if (added) k.inputs.push_back(node);
      return it->second;
    };
    if (auto it = step_of.find(id); it != step_of.end()) return StepRef(it->second);
    if (!Folded(g_.at(id))) return input(id);
    struct Frame {
      int node;
      size_t next_arg;
    };
    std::vector<Frame> stack = {{id, 0}};
    while (!stack.empty()) {
      Frame& f = stack.back();
      const webir::Node& n = g_.at(f.node);
      if (f.next_arg < n.args.size()) {
        int a = n.args[f.next_arg++];
        if (!step_of.count(a) && Folded(g_.at(a)))
          stack.push_back({a, 0});
        else if (!step_of.count(a))
          input(a);
        continue;
      }
      std::vector<int> operands;
      for (int a : n.args) {
        auto it = step_of.find(a);
        operands.push_back(it != step_of.end() ? StepRef(it->second) : input_of.at(a));
      }
      AddStep(n, std::move(operands), k);
      step_of[n.id] = static_cast<int>(k.expr.size()) - 1;
      stack.pop_back();
    }
    return StepRef(step_of.at(id));
  }

  const webir::Graph& g_;
  std::vector<std::vector<int>> users_;
  std::set<int> is_output_;
};

}  // namespace

Status FuseElementwise(Module& m) {
  Fusion fusion(m.graph());
  std::vector<Kernel> kernels;
  for (Kernel& k : m.kernels) {
    if (k.kind != KernelKind::kElementwise) {
      kernels.push_back(std::move(k));
      continue;
    }
    const webir::Node& root = m.graph().at(k.output);
    if (!fusion.Folded(root)) kernels.push_back(fusion.Build(root));
  }
  m.kernels = std::move(kernels);
  NameKernels(m);
  return Status::Ok();
}

}  // namespace scellis::kernel
