#include "execplan/passes/passes.h"

namespace scellis::execplan {
namespace {

MemClass ClassOf(const webir::Graph& g, const webir::Node& n,
                 const std::vector<std::vector<int>>& users) {
  if (n.purpose == webir::Purpose::kGradient) return MemClass::kGradients;
  if (n.purpose == webir::Purpose::kOptimizerState) return MemClass::kOptimizerState;
  // The training split held on the device is the step's input data, resident.
  if (n.purpose == webir::Purpose::kDataset) return MemClass::kInputs;
  if (n.role == webir::Role::kParam) {
    for (int u : users[n.id])
      if (g.at(u).op == "cast" && g.at(u).type.dtype == DType::kF16)
        return MemClass::kMasterWeights;
    return MemClass::kParameters;
  }
  if (n.role == webir::Role::kInput) return MemClass::kInputs;
  for (int u : users[n.id])
    if (g.at(u).purpose == webir::Purpose::kGradient) return MemClass::kActivations;
  return MemClass::kWorking;
}

}  // namespace

Status MemoryClasses(Plan& p) {
  const webir::Graph& g = p.graph();
  std::vector<std::vector<int>> users = g.Users();
  p.class_of.assign(g.nodes.size(), MemClass::kWorking);
  for (const webir::Node& n : g.nodes) p.class_of[n.id] = ClassOf(g, n, users);
  // A value carried into a source is that source's next value (the updated parameter, the next
  // generation of a grid): it is counted with the source, not as working memory.
  for (const webir::Carry& c : g.carries) p.class_of[c.from] = p.class_of[c.to];
  return Status::Ok();
}

}  // namespace scellis::execplan
