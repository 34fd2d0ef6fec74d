// Scalar definitions of the elementwise ops for the CPU reference. Transcendentals come from
// detmath, never the libm, so the bits are the same on every machine.
#include <cmath>
#include <limits>

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
// As torch.maximum and torch.minimum: a NaN operand gives NaN, and equal operands (+0 and -0
// included) give a.
template <typename T>
T Maximum(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return a >= b ? a : b;
}
template <typename T>
T Minimum(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return a <= b ? a : b;
}
// The share of maximum's gradient for a (PyTorch: ties split in half, NaN passes to both).
template <typename T>
T MaxShare(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return T(1);
  return a > b ? T(1) : a == b ? T(0.5) : T(0);
}
// NaN stays NaN and -0 stays -0, as torch.relu gives them.
template <typename T>
T Relu(T a, T) {
  return a < T(0) ? T(0) : a;
}
// 0 only for a <= 0: NaN gives 1, so relu's gradient at NaN passes the upstream gradient, as
// PyTorch's threshold_backward does.
template <typename T>
T Positive(T a, T) {
  return a <= T(0) ? T(0) : T(1);
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
// PyTorch evaluates a * Phi(a) as written, so gelu(-inf) = -inf * 0 = NaN, and its derivative
// Phi(a) + a * phi(a) is NaN at both infinities (inf * 0); detmath gives the limits instead.
template <typename T>
T Gelu(T a, T) {
  if (std::isinf(a) && a < T(0)) return std::numeric_limits<T>::quiet_NaN();
  return detmath::Gelu(a);
}
template <typename T>
T GeluGrad(T a, T b) {
  if (std::isinf(a)) return std::numeric_limits<T>::quiet_NaN();
  return b * detmath::GeluGrad(a);
}

}  // namespace

void AddElementwiseScalars(std::vector<std::pair<std::string, ScalarImpl>>& t) {
#define SCELLIS_SCALAR(name, arity, fn) t.push_back({name, {arity, fn<float>, fn<double>}})
  SCELLIS_SCALAR("add", 2, Add);
  SCELLIS_SCALAR("sub", 2, Sub);
  SCELLIS_SCALAR("mul", 2, Mul);
  SCELLIS_SCALAR("div", 2, Div);
  SCELLIS_SCALAR("maximum", 2, Maximum);
  SCELLIS_SCALAR("minimum", 2, Minimum);
  SCELLIS_SCALAR("max_share", 2, MaxShare);
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
