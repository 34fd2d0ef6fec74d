// Elementwise ops: each output element depends only on the same (broadcast) index of each input,
// so chains of them fuse into one kernel. Their scalar definitions live in
// kernel/ref/elementwise.cpp (CPU) and kernel/emit/wgsl/elementwise.cpp (WGSL).
#include "webir/autodiff/autodiff.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

using grad::Emit;

int ArgType(Graph& g, const Node& n, int k, int value) {
  return grad::SumToShape(g, value, g.at(n.args[k]).type);
}

std::vector<int> GradAdd(Graph& g, const Node& n, int gout) {
  return {ArgType(g, n, 0, gout), ArgType(g, n, 1, gout)};
}
std::vector<int> GradSub(Graph& g, const Node& n, int gout) {
  return {ArgType(g, n, 0, gout), ArgType(g, n, 1, Emit(g, "neg", {gout}))};
}
std::vector<int> GradMul(Graph& g, const Node& n, int gout) {
  return {ArgType(g, n, 0, Emit(g, "mul", {gout, n.args[1]})),
          ArgType(g, n, 1, Emit(g, "mul", {gout, n.args[0]}))};
}
// d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b.
std::vector<int> GradDiv(Graph& g, const Node& n, int gout) {
  int ga = Emit(g, "div", {gout, n.args[1]});
  int gb = Emit(g, "neg", {Emit(g, "div", {Emit(g, "mul", {gout, n.id}), n.args[1]})});
  return {ArgType(g, n, 0, ga), ArgType(g, n, 1, gb)};
}
// As PyTorch's maximum backward: the larger operand takes the gradient, ties split it in half, a
// NaN operand passes it to both. minimum is maximum with the operands' roles swapped.
std::vector<int> GradMaximum(Graph& g, const Node& n, int gout) {
  int a = n.args[0], b = n.args[1];
  return {ArgType(g, n, 0, Emit(g, "mul", {gout, Emit(g, "max_share", {a, b})})),
          ArgType(g, n, 1, Emit(g, "mul", {gout, Emit(g, "max_share", {b, a})}))};
}
std::vector<int> GradMinimum(Graph& g, const Node& n, int gout) {
  int a = n.args[0], b = n.args[1];
  return {ArgType(g, n, 0, Emit(g, "mul", {gout, Emit(g, "max_share", {b, a})})),
          ArgType(g, n, 1, Emit(g, "mul", {gout, Emit(g, "max_share", {a, b})}))};
}
std::vector<int> GradRelu(Graph& g, const Node& n, int gout) {
  return {Emit(g, "mul", {gout, Emit(g, "positive", {n.args[0]})})};
}
std::vector<int> GradNeg(Graph& g, const Node& n, int gout) {
  return {Emit(g, "neg", {gout})};
}
std::vector<int> GradExp(Graph& g, const Node& n, int gout) {
  return {Emit(g, "mul", {gout, n.id})};
}
std::vector<int> GradLog(Graph& g, const Node& n, int gout) {
  return {Emit(g, "div", {gout, n.args[0]})};
}
// d sqrt(a) = 0.5 / sqrt(a).
std::vector<int> GradSqrt(Graph& g, const Node& n, int gout) {
  return {Emit(g, "div", {Emit(g, "mul", {gout, grad::Constant(g, 0.5)}), n.id})};
}
// d tanh(a) = 1 - tanh(a)^2.
std::vector<int> GradTanh(Graph& g, const Node& n, int gout) {
  int sq = Emit(g, "mul", {n.id, n.id});
  return {Emit(g, "mul", {gout, Emit(g, "sub", {grad::Constant(g, 1.0), sq})})};
}
// d sigmoid(a) = s (1 - s).
std::vector<int> GradSigmoid(Graph& g, const Node& n, int gout) {
  int one_minus = Emit(g, "sub", {grad::Constant(g, 1.0), n.id});
  return {Emit(g, "mul", {Emit(g, "mul", {gout, n.id}), one_minus})};
}
std::vector<int> GradGelu(Graph& g, const Node& n, int gout) {
  return {Emit(g, "gelu_grad", {n.args[0], gout})};
}
// gelu_grad(a, b) = b * gelu'(a), gelu'(a) = Phi(a) + a phi(a), gelu''(a) = phi(a) (2 - a^2) with
// phi(a) = exp(-a^2 / 2) / sqrt(2 pi).
std::vector<int> GradGeluGrad(Graph& g, const Node& n, int gout) {
  int a = n.args[0], b = n.args[1];
  int sq = Emit(g, "mul", {a, a});
  int pdf = Emit(g, "div",
                 {Emit(g, "exp", {Emit(g, "mul", {sq, grad::Constant(g, -0.5)})}),
                  grad::Constant(g, 2.5066282746310002)});
  int second = Emit(g, "mul", {pdf, Emit(g, "sub", {grad::Constant(g, 2.0), sq})});
  int ga = Emit(g, "mul", {Emit(g, "mul", {gout, b}), second});
  int gb = Emit(g, "gelu_grad", {a, gout});
  return {ArgType(g, n, 0, ga), ArgType(g, n, 1, gb)};
}

}  // namespace

void AddElementwiseRules(RuleSet& r) {
  r["add"] = {InferBroadcast, GradAdd};
  r["sub"] = {InferBroadcast, GradSub};
  r["mul"] = {InferBroadcast, GradMul};
  r["div"] = {InferBroadcast, GradDiv};
  r["maximum"] = {InferBroadcast, GradMaximum};
  r["minimum"] = {InferBroadcast, GradMinimum};
  r["max_share"] = {InferBroadcast, nullptr};  // a step function: no useful derivative
  r["relu"] = {InferSameAsFirst, GradRelu};
  r["positive"] = {InferSameAsFirst, nullptr};  // a step function: no useful derivative
  r["neg"] = {InferSameAsFirst, GradNeg};
  r["exp"] = {InferSameAsFirst, GradExp};
  r["log"] = {InferSameAsFirst, GradLog};
  r["sqrt"] = {InferSameAsFirst, GradSqrt};
  r["tanh"] = {InferSameAsFirst, GradTanh};
  r["sigmoid"] = {InferSameAsFirst, GradSigmoid};
  r["gelu"] = {InferSameAsFirst, GradGelu};
  r["gelu_grad"] = {InferBroadcast, GradGeluGrad};
}

}  // namespace scellis::webir
