// The CPU reference of a user op: the op's reference — a graph of built-in ops, written in the
// document — planned for the kernel's input types and run kernel by kernel on the built-ins' own
// references. Interpreting it here, rather than inlining it into the graph for the CPU backend,
// keeps one plan for every backend: the same kernel, whose WGSL is the user's on a GPU and whose
// reference is this. Each reference kernel rounds to T as the built-in kernels do, unfused.
#include <algorithm>
#include <map>

#include "kernel/passes/passes.h"
#include "kernel/ref/ref.h"
#include "webir/user_ops.h"

namespace scellis::kernel::ref {

template <typename T>
Status RunUserReference(const Module& m, const Kernel& k, const std::vector<const T*>& inputs,
                        T* out, const Parallel& parallel) {
  const ops::OpSpec* spec = m.graph().ops->Find(k.op);
  if (!spec || !spec->user) return InternalError("ref.RunUserReference", k.op + " is no user op");
  std::vector<TensorType> types;
  for (int in : k.inputs) types.push_back(m.graph().at(in).type);
  SCELLIS_ASSIGN_OR_RETURN(webir::Graph g, webir::ReferenceGraph(*spec, types));
  SCELLIS_ASSIGN_OR_RETURN(Module reference,
                           FromWebir(std::make_shared<const webir::Graph>(std::move(g))));
  SCELLIS_TRY(Partition(reference));
  const webir::Graph& rg = reference.graph();

  // Each reference node's values: a port's are the kernel's input, the others computed here.
  std::map<int, const T*> values;
  std::map<int, std::vector<T>> computed;
  for (const webir::Node& n : rg.nodes) {
    if (n.role != webir::Role::kInput) continue;
    for (size_t p = 0; p < spec->ports.size() && p < inputs.size(); ++p)
      if (spec->ports[p].name == n.label) values[n.id] = inputs[p];
  }
  for (const Kernel& rk : reference.kernels) {
    std::vector<const T*> args;
    for (int in : rk.inputs) {
      auto it = values.find(in);
      if (it == values.end())
        return InternalError("ref.RunUserReference", "the reference of " + k.op +
                                                         " reads node " + std::to_string(in) +
                                                         " before it is computed");
      args.push_back(it->second);
    }
    std::vector<T>& result = computed[rk.output];
    result.resize(static_cast<size_t>(rg.at(rk.output).type.elements()));
    SCELLIS_TRY(RunKernel<T>(reference, rk, args, result.data(), parallel));
    values[rk.output] = result.data();
  }
  const int output = rg.outputs.at(0).node;
  auto it = values.find(output);
  if (it == values.end())
    return InternalError("ref.RunUserReference", "the reference of " + k.op + " has no output");
  std::copy(it->second, it->second + rg.at(output).type.elements(), out);
  return Status::Ok();
}

template Status RunUserReference<float>(const Module&, const Kernel&,
                                        const std::vector<const float*>&, float*, const Parallel&);
template Status RunUserReference<double>(const Module&, const Kernel&,
                                         const std::vector<const double*>&, double*,
                                         const Parallel&);

}  // namespace scellis::kernel::ref
