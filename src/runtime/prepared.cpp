#include "runtime/prepared.h"

namespace scellis::runtime {

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

Result<int> UploadTarget(const webir::Graph& g, const std::string& name, size_t elements) {
  int node = FindSourceNode(g, name);
  if (node < 0 || static_cast<int64_t>(elements) != g.at(node).type.elements()) {
    return UserError(
        "bad-upload", "",
        "no input or param named \"" + name + "\" holds " + std::to_string(elements) + " elements");
  }
  return node;
}

bool IsCarried(const webir::Graph& g, int node) {
  for (const webir::Carry& c : g.carries)
    if (c.to == node) return true;
  return false;
}

std::vector<int> FedInputs(const webir::Graph& g) {
  std::vector<int> fed;
  for (const webir::Node& n : g.nodes) {
    if (n.role != webir::Role::kInput || n.data) continue;
    if (!IsCarried(g, n.id)) fed.push_back(n.id);
  }
  return fed;
}

}  // namespace scellis::runtime
