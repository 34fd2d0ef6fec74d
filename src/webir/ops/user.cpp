// The shape rule every user op shares (ops/user_op.h): the output takes the shape of the port its
// definition names and the declared dtype, and the op's reference, planned at the node's input
// types, must compute exactly that. Its gradient, where the definition gives one, is a user op per
// port (ops::UserKernel::gradients) over the ports and the upstream gradient.
#include "ops/user_op.h"
#include "webir/autodiff/autodiff.h"
#include "webir/graph.h"
#include "webir/op_rules.h"
#include "webir/user_ops.h"

namespace scellis::webir {
namespace {

std::string TypesText(const std::vector<TensorType>& args) {
  std::string s;
  for (const TensorType& t : args) s += (s.empty() ? "" : ", ") + t.ShapeStringWithSizes();
  return s;
}

Result<TensorType> InferUser(InferContext& c) {
  if (!c.spec || !c.spec->user) return InternalError("webir.InferUser", "no user op definition");
  const ops::OpSpec& spec = *c.spec;
  const ops::UserKernel& user = *spec.user;
  TensorType out;
  for (size_t i = 0; i < spec.ports.size() && i < c.args.size(); ++i) {
    if (spec.ports[i].name == user.shape_of) out = c.args[i];
    for (const ops::UserPortRank& r : user.ranks)
      if (r.port == spec.ports[i].name && c.args[i].rank() != r.rank)
        return c.ArgError(i, "bad-rank",
                          "the input \"" + r.port + "\" of \"" + spec.name + "\" is " +
                              c.args[i].ShapeStringWithSizes() + ", the op takes rank " +
                              std::to_string(r.rank));
  }
  out.dtype = user.dtype;
  // A callable reference (api/user_ops.h) says its shape only when it runs: the CPU reference
  // checks it there (`user-reference-shape`).
  if (user.callable) return out;
  auto reference = ReferenceGraph(spec, c.args);
  if (!reference.ok()) {
    std::vector<Diagnostic> errors = reference.errors();
    for (Diagnostic& d : errors)
      d.message += " (the reference planned for " + c.where + " at " + TypesText(c.args) + ")";
    return Status(errors);
  }
  const TensorType& got = reference->at(reference->outputs.at(0).node).type;
  if (!got.SameShape(out) || got.dtype != out.dtype) {
    Diagnostic d =
        c.Error("user-reference-mismatch",
                "for inputs " + TypesText(c.args) + " the reference of \"" + spec.name +
                    "\" computes " + got.ShapeStringWithSizes() + " " + DTypeName(got.dtype) +
                    ", but the op declares " + out.ShapeStringWithSizes() + " " +
                    DTypeName(out.dtype) + " (the shape of \"" + user.shape_of + "\")",
                "make the reference compute the declared shape, or declare the shape it computes");
    d.pointer = user.pointer + "/reference";
    return d;
  }
  return out;
}

// Each port the definition differentiates gets its gradient op over (ports..., grad); the others
// get none, and Backward refuses a loss that reaches a differentiated value through one of them.
std::vector<int> GradUser(Graph& g, const Node& n, int grad_out) {
  std::vector<int> grads(n.args.size(), -1);
  const ops::OpSpec* spec = g.ops->Find(n.op);
  if (!spec || !spec->user) return grads;
  std::vector<int> args = n.args;
  args.push_back(grad_out);
  for (size_t k = 0; k < spec->ports.size() && k < n.args.size(); ++k)
    for (const ops::UserKernel::Gradient& d : spec->user->gradients)
      if (d.port == spec->ports[k].name) grads[k] = grad::Emit(g, d.op, args);
  return grads;
}

}  // namespace

const OpRule& UserOpRule() {
  static const OpRule rule{InferUser, GradUser, nullptr};
  return rule;
}

}  // namespace scellis::webir
