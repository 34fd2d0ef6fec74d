#include "backend/prepared.h"

namespace scellis::backend {

int FindSourceNode(const webir::Graph& g, const std::string& name) {
  for (const webir::Node& n : g.nodes)
    if ((n.role == webir::Role::kInput || n.role == webir::Role::kParam) && FeedName(n) == name)
      return n.id;
  return -1;
}

int FindNamedNode(const webir::Graph& g, const std::string& name) {
  for (const webir::Output& o : g.outputs)
    if (o.name == name) return o.node;
  return FindSourceNode(g, name);
}

std::vector<int> FedInputs(const webir::Graph& g) {
  std::vector<int> fed;
  for (const webir::Node& n : g.nodes) {
    if (n.role != webir::Role::kInput || n.data) continue;
    bool carried = false;
    for (const webir::Carry& c : g.carries) carried |= c.to == n.id;
    if (!carried) fed.push_back(n.id);
  }
  return fed;
}

}  // namespace scellis::backend
