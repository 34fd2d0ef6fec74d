// Scalar definitions of the elementwise ops for the CPU reference. Transcendentals come from
// detmath, never the libm, so the bits are the same on every machine.
#include "base/detmath.h"
#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {
namespace {

template <typename T>
T Add(T a, T b) {
  return a + b;
}
template <typename T>
T Sub(T a, T b) {
  return a - b;
}
template <typename T>
T Mul(T a, T b) {
  return a * b;
}
template <typename T>
T Div(T a, T b) {
  return a / b;
}
// Written as a comparison so NaN maps to 0 on every backend (WGSL uses the same select).
template <typename T>
T Relu(T a, T) {
  return a > T(0) ? a : T(0);
}
template <typename T>
T Positive(T a, T) {
  return a > T(0) ? T(1) : T(0);
}
template <typename T>
T Neg(T a, T) {
  return -a;
}
template <typename T>
T Exp(T a, T) {
  return detmath::Exp(a);
}
template <typename T>
T Log(T a, T) {
  return detmath::Log(a);
}
template <typename T>
T Sqrt(T a, T) {
  return detmath::Sqrt(a);
}
template <typename T>
T Tanh(T a, T) {
  return detmath::Tanh(a);
}
template <typename T>
T Sigmoid(T a, T) {
  return detmath::Sigmoid(a);
}
template <typename T>
T Gelu(T a, T) {
  return detmath::Gelu(a);
}
template <typename T>
T GeluGrad(T a, T b) {
  return b * detmath::GeluGrad(a);
}

}  // namespace

void AddElementwiseScalars(std::vector<std::pair<std::string, ScalarImpl>>& t) {
#define SCELLIS_SCALAR(name, arity, fn) t.push_back({name, {arity, fn<float>, fn<double>}})
  SCELLIS_SCALAR("add", 2, Add);
  SCELLIS_SCALAR("sub", 2, Sub);
  SCELLIS_SCALAR("mul", 2, Mul);
  SCELLIS_SCALAR("div", 2, Div);
  SCELLIS_SCALAR("relu", 1, Relu);
  SCELLIS_SCALAR("positive", 1, Positive);
  SCELLIS_SCALAR("neg", 1, Neg);
  SCELLIS_SCALAR("exp", 1, Exp);
  SCELLIS_SCALAR("log", 1, Log);
  SCELLIS_SCALAR("sqrt", 1, Sqrt);
  SCELLIS_SCALAR("tanh", 1, Tanh);
  SCELLIS_SCALAR("sigmoid", 1, Sigmoid);
  SCELLIS_SCALAR("gelu", 1, Gelu);
  SCELLIS_SCALAR("gelu_grad", 2, GeluGrad);
#undef SCELLIS_SCALAR
}

}  // namespace scellis::kernel::ref
