// Partitions WebIR into kernels. An elementwise node is folded into its consumer when the consumer
// is elementwise, it has that one consumer, and it is not a named output; a constant (`full`) is
// folded as a literal into every elementwise consumer. What remains are kernel roots.
#include <algorithm>
#include <map>
#include <set>

#include "base/sha256.h"
#include "kernel/emit/wgsl/codegen.h"
#include "kernel/module.h"
#include "webir/op_rules.h"

namespace scellis::kernel {
namespace {

bool IsElementwise(const webir::Graph& g, const webir::Node& n) {
  if (n.op == "full") return true;
  const ops::OpSpec* spec = g.ops->Find(n.op);
  return spec && spec->kind == ops::OpKind::kElementwise;
}

class Partition {
 public:
  explicit Partition(const webir::Graph& g) : g_(g), users_(g.Users()) {
    for (const webir::Output& o : g.outputs) is_output_.insert(o.node);
  }

  Result<Module> Run() {
    Module m;
    m.graph = g_;
    for (const webir::Node& n : g_.nodes) {
      if (n.role == webir::Role::kInput || n.role == webir::Role::kParam) continue;
      if (Folded(n) || FoldedTranspose(n)) continue;
      Kernel k;
      k.id = static_cast<int>(m.kernels.size());
      k.output = n.id;
      if (IsElementwise(g_, n))
        BuildFused(n, k);
      else {
        k.kind = KernelKind::kOp;
        k.op = n.op;
        k.nodes = {n.id};
        k.inputs = n.args;
        if (n.op == "matmul") {
          k.transposed.assign(n.args.size(), false);
          for (size_t i = 0; i < n.args.size(); ++i) {
            const webir::Node& a = g_.at(n.args[i]);
            if (FoldedTranspose(a)) {
              k.inputs[i] = a.args[0];
              k.transposed[i] = true;
            }
          }
        }
      }
      k.name = "k" + std::to_string(k.id) + "_" + KernelTitle(k);
      m.kernels.push_back(std::move(k));
    }
    for (Kernel& k : m.kernels) {
      auto src = wgsl::Generate(m, k);
      if (!src.ok()) return src.status();
      k.wgsl = std::move(src.value().source);
      k.workgroups = src.value().workgroups;
      k.source_hash = Sha256Hex(k.wgsl);
    }
    return m;
  }

 private:
  bool Folded(const webir::Node& n) const {
    if (!IsElementwise(g_, n) || is_output_.count(n.id)) return false;
    const std::vector<int>& users = users_[n.id];
    if (users.empty()) return n.op == "full";  // an unused constant needs no kernel
    for (int u : users)
      if (!IsElementwise(g_, g_.at(u))) return false;
    return n.op == "full" || users.size() == 1;
  }

  // A rank-2 transpose read only by rank-2 matmuls costs no kernel: the matmuls read its operand
  // with swapped strides (backward passes are full of them: x^T @ g, g @ w^T).
  bool FoldedTranspose(const webir::Node& n) const {
    if (n.op != "transpose" || is_output_.count(n.id) || users_[n.id].empty()) return false;
    for (int u : users_[n.id]) {
      const webir::Node& user = g_.at(u);
      if (user.op != "matmul" || user.type.rank() != 2) return false;
    }
    return true;
  }

  std::string KernelTitle(const Kernel& k) const {
    if (k.kind == KernelKind::kOp) return k.op;
    std::string t = "fused";
    for (const ExprStep& s : k.expr)
      if (s.op != "full") t += "_" + s.op;
    return t;
  }

  bool FoldedInto(const webir::Node& n) const {
    return n.role != webir::Role::kInput && n.role != webir::Role::kParam && Folded(n);
  }

  // Operand for node `id` inside kernel `k` being built: a step for a folded node (after the steps
  // of its own folded args, in argument order), else a kernel input. Iterative, because a fused
  // chain can be as long as the document: recursion would overflow the stack.
  int Operand(int id, Kernel& k, std::map<int, int>& step_of, std::map<int, int>& input_of) {
    auto input = [&](int node) {
      if (auto it = input_of.find(node); it != input_of.end()) return it->second;
      k.inputs.push_back(node);
      input_of[node] = static_cast<int>(k.inputs.size()) - 1;
      return input_of[node];
    };
    if (auto it = step_of.find(id); it != step_of.end()) return StepRef(it->second);
    if (!FoldedInto(g_.at(id))) return input(id);
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
        if (!step_of.count(a) && FoldedInto(g_.at(a)))
          stack.push_back({a, 0});
        else if (!step_of.count(a))
          input(a);
        continue;
      }
      ExprStep s;
      s.op = n.op;
      s.node = n.id;
      if (n.op == "full") s.value = n.attrs.at("value").get<double>();
      for (int a : n.args) {
        auto it = step_of.find(a);
        s.operands.push_back(it != step_of.end() ? StepRef(it->second) : input_of.at(a));
      }
      k.expr.push_back(s);
      k.nodes.push_back(n.id);
      step_of[n.id] = static_cast<int>(k.expr.size()) - 1;
      stack.pop_back();
    }
    return StepRef(step_of.at(id));
  }

  void BuildFused(const webir::Node& root, Kernel& k) {
    k.kind = KernelKind::kElementwise;
    k.op = "fused";
    std::map<int, int> step_of, input_of;
    ExprStep s;
    s.op = root.op;
    s.node = root.id;
    if (root.op == "full") s.value = root.attrs.at("value").get<double>();
    for (int a : root.args) s.operands.push_back(Operand(a, k, step_of, input_of));
    k.expr.push_back(s);
    k.nodes.push_back(root.id);
  }

  const webir::Graph& g_;
  std::vector<std::vector<int>> users_;
  std::set<int> is_output_;
};

}  // namespace

Result<Module> FromWebir(const webir::Graph& g) {
  SCELLIS_TRY(webir::Verify(g));
  auto m = Partition(g).Run();
  if (m.ok()) SCELLIS_TRY(Verify(m.value()));
  return m;
}

}  // namespace scellis::kernel
