#include <map>
#include <set>

#include "kernel/passes/passes.h"

namespace scellis::kernel {

bool IsElementwiseNode(const webir::Graph& g, const webir::Node& n) {
  if (n.op == "full") return true;
  const ops::OpSpec* spec = g.ops->Find(n.op);
  return spec && (spec->kind == ops::OpKind::kElementwise || spec->kind == ops::OpKind::kNeighbour ||
                  spec->kind == ops::OpKind::kPosition);
}

Status Partition(Module& m) {
  const webir::Graph& g = m.graph();
  std::set<int> outputs;
  for (const webir::Output& o : g.outputs) outputs.insert(o.node);
  std::vector<std::vector<int>> users = g.Users();
  m.kernels.clear();
  for (const webir::Node& n : g.nodes) {
    if (n.role == webir::Role::kInput || n.role == webir::Role::kParam) continue;
    if (n.op == "full" && users[n.id].empty() && !outputs.count(n.id)) continue;
    Kernel k;
    k.output = n.id;
    k.nodes = {n.id};
    if (IsElementwiseNode(g, n)) {
      k.kind = KernelKind::kElementwise;
      k.op = "fused";
      ExprStep s;
      s.op = n.op;
      s.node = n.id;
      if (n.op == "full") s.value = n.attrs.at("value").get<double>();
      std::map<int, int> input_of;  // a value read twice is bound once
      for (int a : n.args) {
        auto [it, added] = input_of.try_emplace(a, static_cast<int>(k.inputs.size()));
        if (added) k.inputs.push_back(a);
        s.operands.push_back(it->second);
      }
      k.expr = {s};
    } else {
      k.kind = KernelKind::kOp;
      k.op = n.op;
      k.inputs = n.args;
      if (n.op == "matmul") k.transposed.assign(n.args.size(), false);
    }
    m.kernels.push_back(std::move(k));
  }
  NameKernels(m);
  return Status::Ok();
}

}  // namespace scellis::kernel
