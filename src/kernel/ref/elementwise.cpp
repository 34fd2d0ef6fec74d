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
// Comparisons give a bool as 0 or 1. IEEE 754 as PyTorch: a NaN operand makes every comparison
// false but `ne`, which it makes true; -0 == +0.
template <typename T>
T Eq(T a, T b) {
  return a == b ? T(1) : T(0);
}
template <typename T>
T Ne(T a, T b) {
  return a != b ? T(1) : T(0);
}
template <typename T>
T Lt(T a, T b) {
  return a < b ? T(1) : T(0);
}
template <typename T>
T Le(T a, T b) {
  return a <= b ? T(1) : T(0);
}
template <typename T>
T Gt(T a, T b) {
  return a > b ? T(1) : T(0);
}
template <typename T>
T Ge(T a, T b) {
  return a >= b ? T(1) : T(0);
}
// The chosen value passes as its bits: NaN, infinities and -0 included.
template <typename T>
T Where(T cond, T a, T b) {
  return cond != T(0) ? a : b;
}
template <typename T>
T MaskedFill(T a, T mask, T value) {
  return mask != T(0) ? value : a;
}
// As torch.clamp: minimum(maximum(a, lo), hi), so NaN propagates (a NaN bound never arrives:
// documents hold finite numbers) and lo > hi gives hi.
template <typename T>
T Clamp(T a, T lo, T hi) {
  if (std::isnan(a)) return a;
  T m = a < lo ? lo : a;
  return m > hi ? hi : m;
}
// The value as it is; a cast to bool is made 0 or 1 by the fused executor, which knows the
// node's dtype (bool and f32 share the f32 register, so no other cast changes a value).
template <typename T>
T Cast(T a, T) {
  return a;
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

// Integer forms, on exact values: i32 and u32 operands fit int64 with room, so a sum or a
// difference is exact before the caller wraps it; a product of two u32 can pass 2^63, so it is
// taken modulo 2^64 in uint64, which keeps the low 32 bits the wrap reads.
int64_t IntAdd(int64_t a, int64_t b, int64_t) {
  return a + b;
}
int64_t IntSub(int64_t a, int64_t b, int64_t) {
  return a - b;
}
int64_t IntMul(int64_t a, int64_t b, int64_t) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t IntNeg(int64_t a, int64_t, int64_t) {
  return -a;
}
int64_t IntMaximum(int64_t a, int64_t b, int64_t) {
  return a >= b ? a : b;
}
int64_t IntMinimum(int64_t a, int64_t b, int64_t) {
  return a <= b ? a : b;
}
int64_t IntClamp(int64_t a, int64_t lo, int64_t hi) {
  const int64_t m = a < lo ? lo : a;
  return m > hi ? hi : m;
}
int64_t IntEq(int64_t a, int64_t b, int64_t) {
  return a == b;
}
int64_t IntNe(int64_t a, int64_t b, int64_t) {
  return a != b;
}
int64_t IntLt(int64_t a, int64_t b, int64_t) {
  return a < b;
}
int64_t IntLe(int64_t a, int64_t b, int64_t) {
  return a <= b;
}
int64_t IntGt(int64_t a, int64_t b, int64_t) {
  return a > b;
}
int64_t IntGe(int64_t a, int64_t b, int64_t) {
  return a >= b;
}
int64_t IntWhere(int64_t cond, int64_t a, int64_t b) {
  return cond != 0 ? a : b;
}
int64_t IntMaskedFill(int64_t a, int64_t mask, int64_t value) {
  return mask != 0 ? value : a;
}
// Bit operations on the values: i32 sign-extended, u32 zero-extended into int64, so the low 32
// bits of each result are the 32-bit operation's, which the caller's wrap keeps.
int64_t IntBitwiseAnd(int64_t a, int64_t b, int64_t) {
  return a & b;
}
int64_t IntBitwiseOr(int64_t a, int64_t b, int64_t) {
  return a | b;
}
int64_t IntBitwiseXor(int64_t a, int64_t b, int64_t) {
  return a ^ b;
}
// As torch's bitwise shifts: a count outside [0, 32) shifts every bit out — 0 to the left; to
// the right 0, or -1 for a negative i32 (the sign fills it, as a shift by 31 does). A negative
// value is an i32 (a u32 never is), so one rule serves both dtypes.
int64_t IntShiftLeft(int64_t a, int64_t b, int64_t) {
  if (b < 0 || b >= 32) return 0;
  return static_cast<int64_t>(static_cast<uint64_t>(a) << b);
}
int64_t IntShiftRight(int64_t a, int64_t b, int64_t) {
  if (b < 0 || b >= 32) return a < 0 ? -1 : 0;
  return a >> b;  // arithmetic: sign-filling for a negative i32
}
// The conversion itself is the caller's: it reads the operand as its value and stores the result
// in the cast's dtype.
int64_t IntCast(int64_t a, int64_t, int64_t) {
  return a;
}

}  // namespace

IntegerFn FindIntegerScalar(const std::string& op) {
  static const std::pair<const char*, IntegerFn> kTable[] = {
      {"add", IntAdd},     {"sub", IntSub},         {"mul", IntMul},
      {"neg", IntNeg},     {"maximum", IntMaximum}, {"minimum", IntMinimum},
      {"clamp", IntClamp}, {"eq", IntEq},           {"ne", IntNe},
      {"lt", IntLt},       {"le", IntLe},           {"gt", IntGt},
      {"ge", IntGe},       {"where", IntWhere},     {"masked_fill", IntMaskedFill},
      {"cast", IntCast},   {"bitwise_and", IntBitwiseAnd}, {"bitwise_or", IntBitwiseOr},
      {"bitwise_xor", IntBitwiseXor}, {"shift_left", IntShiftLeft}, {"shift_right", IntShiftRight}};
  for (const auto& [name, fn] : kTable)
    if (op == name) return fn;
  return nullptr;
}

void AddElementwiseScalars(std::vector<std::pair<std::string, ScalarImpl>>& t) {
// Unary and binary definitions take (a, b); the table's functions take a third operand too.
#define SCELLIS_BLOCK(T, call)                                                  \
  [](const T* a, const T* b, const T* c, T* out, int64_t n) {                   \
    for (int64_t j = 0; j < n; ++j) out[j] = call;                              \
  }
#define SCELLIS_SCALAR(name, arity, fn)                                         \
  t.push_back({name,                                                            \
               {arity, [](float a, float b, float) { return fn<float>(a, b); }, \
                [](double a, double b, double) { return fn<double>(a, b); },    \
                SCELLIS_BLOCK(float, fn<float>(a[j], b[j])),                    \
                SCELLIS_BLOCK(double, fn<double>(a[j], b[j]))}})
#define SCELLIS_SCALAR3(name, fn)                                  \
  t.push_back({name,                                               \
               {3, fn<float>, fn<double>,                          \
                SCELLIS_BLOCK(float, fn<float>(a[j], b[j], c[j])), \
                SCELLIS_BLOCK(double, fn<double>(a[j], b[j], c[j]))}})
  SCELLIS_SCALAR("add", 2, Add);
  SCELLIS_SCALAR("sub", 2, Sub);
  SCELLIS_SCALAR("mul", 2, Mul);
  SCELLIS_SCALAR("div", 2, Div);
  SCELLIS_SCALAR("maximum", 2, Maximum);
  SCELLIS_SCALAR("minimum", 2, Minimum);
  SCELLIS_SCALAR("max_share", 2, MaxShare);
  SCELLIS_SCALAR("eq", 2, Eq);
  SCELLIS_SCALAR("ne", 2, Ne);
  SCELLIS_SCALAR("lt", 2, Lt);
  SCELLIS_SCALAR("le", 2, Le);
  SCELLIS_SCALAR("gt", 2, Gt);
  SCELLIS_SCALAR("ge", 2, Ge);
  SCELLIS_SCALAR3("where", Where);
  SCELLIS_SCALAR3("masked_fill", MaskedFill);
  SCELLIS_SCALAR3("clamp", Clamp);
  SCELLIS_SCALAR("cast", 1, Cast);
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
#undef SCELLIS_BLOCK
#undef SCELLIS_SCALAR
#undef SCELLIS_SCALAR3
}

}  // namespace scellis::kernel::ref
