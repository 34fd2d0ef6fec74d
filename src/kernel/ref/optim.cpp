// Optimizer updates on the CPU, with PyTorch's arithmetic (torch.optim, single-tensor path): the
// same operations in the same order in the element type, with every scalar factor (1 - dampening,
// the bias corrections, lr / bias_correction1, ...) computed in double and rounded once to the
// element type, as a Python float is when PyTorch hands it to a kernel.
#include <cmath>

#include "base/detmath.h"
#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {
namespace {

double Attr(const webir::Node& n, const char* name) {
  return n.attrs.at(name).get<double>();
}
bool Flag(const webir::Node& n, const char* name) {
  return n.attrs.at(name).get<bool>();
}

// The integer step number held by the scalar input `t`; 0 when t < 1 (or NaN).
template <typename T>
int64_t StepNumber(T t) {
  return t >= T(1) ? static_cast<int64_t>(std::floor(static_cast<double>(t))) : 0;
}

// beta^n by square-and-multiply in double: PyTorch computes `beta ** step` in Python floats.
double PowInt(double beta, int64_t n) {
  double r = 1.0, x = beta;
  for (; n > 0; n >>= 1) {
    if (n & 1) r *= x;
    x *= x;
  }
  return r;
}

// The attributes of an update, read once per kernel.
struct Hyper {
  double lr, weight_decay, momentum = 0, dampening = 0, beta1 = 0, beta2 = 0, eps = 0;
  bool maximize, nesterov = false, decoupled = false;

  explicit Hyper(const webir::Node& n)
      : lr(Attr(n, "lr")), weight_decay(Attr(n, "weight_decay")), maximize(Flag(n, "maximize")) {
    if (n.attrs.contains("momentum")) {
      momentum = Attr(n, "momentum");
      dampening = Attr(n, "dampening");
      nesterov = Flag(n, "nesterov");
    }
    if (n.attrs.contains("beta1")) {
      beta1 = Attr(n, "beta1");
      beta2 = Attr(n, "beta2");
      eps = Attr(n, "eps");
      decoupled = Flag(n, "decoupled");
    }
  }
};

// The gradient as the update sees it: negated under maximize, plus weight_decay * param unless
// the decay is decoupled (AdamW).
template <typename T>
T EffectiveGrad(const OpArgs<T>& a, const Hyper& h, int64_t i) {
  T g = a.inputs[1][i];
  if (h.maximize) g = -g;
  if (h.weight_decay != 0 && !h.decoupled) g = g + static_cast<T>(h.weight_decay) * a.inputs[0][i];
  return g;
}

template <typename T>
void SgdUpdate(const OpArgs<T>& a) {
  Hyper h(*a.node);
  T minus_lr = static_cast<T>(-h.lr);
  SetEachOutput(a, [&](int64_t i) { return a.inputs[0][i] + minus_lr * EffectiveGrad(a, h, i); });
}

// torch.optim.SGD: buf = g on the first step, else momentum * buf + (1 - dampening) * g; the
// update direction is buf, or g + momentum * buf under nesterov. No buffer when momentum is 0
// (the velocity output is then g).
template <typename T>
void Momentum(const OpArgs<T>& a, bool velocity_out) {
  Hyper h(*a.node);
  T mom = static_cast<T>(h.momentum);
  T keep = static_cast<T>(1.0 - h.dampening);
  T minus_lr = static_cast<T>(-h.lr);
  bool first = StepNumber(a.inputs[3][0]) <= 1;
  SetEachOutput(a, [&](int64_t i) {
    T g = EffectiveGrad(a, h, i);
    T direction = g;
    T buf = g;
    if (h.momentum != 0) {
      if (!first) buf = a.inputs[2][i] * mom + keep * g;
      direction = h.nesterov ? g + mom * buf : buf;
    }
    return velocity_out ? buf : a.inputs[0][i] + minus_lr * direction;
  });
}

template <typename T>
void MomentumUpdate(const OpArgs<T>& a) {
  Momentum(a, false);
}
template <typename T>
void MomentumVelocity(const OpArgs<T>& a) {
  Momentum(a, true);
}

// exp_avg.lerp_(grad, 1 - beta1), with ATen's two-sided lerp formula.
template <typename T>
T NewFirstMoment(const OpArgs<T>& a, const Hyper& h, int64_t i) {
  T w = static_cast<T>(1.0 - h.beta1);
  T m = a.inputs[2][i], g = EffectiveGrad(a, h, i);
  return std::fabs(w) < T(0.5) ? m + w * (g - m) : g - (g - m) * (T(1) - w);
}

// exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2).
template <typename T>
T NewSecondMoment(const OpArgs<T>& a, const Hyper& h, int64_t i) {
  T beta2 = static_cast<T>(h.beta2);
  T value = static_cast<T>(1.0 - h.beta2);
  T g = EffectiveGrad(a, h, i);
  return a.inputs[3][i] * beta2 + value * g * g;
}

// Adam without maximize or weight decay (the common case) runs as straight loops over each chunk
// (adam_loops.inc), vectorised across elements with the widest instructions the machine has.
// Vectorise without assuming the output apart from the inputs (see adam_loops.inc).
#if defined(__clang__)
#define SCELLIS_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#else
#define SCELLIS_IVDEP _Pragma("GCC ivdep")
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SCELLIS_ADAM_X86 1
#pragma GCC push_options
#pragma GCC target("avx512f")
namespace avx512 {
#include "kernel/ref/adam_loops.inc"
}  // namespace avx512
#pragma GCC pop_options
#endif
namespace base_isa {
#include "kernel/ref/adam_loops.inc"
}  // namespace base_isa

template <typename T>
bool PlainAdam(const Hyper& h) {
  return !h.maximize && h.weight_decay == 0;
}

// The plain loops of AdamLoops<T> (adam_loops.inc) for this machine, with the kernel's factors.
template <typename T>
struct PlainAdamArgs {
  T w, keep, beta2, value;
  bool near;

  explicit PlainAdamArgs(const Hyper& h)
      : w(static_cast<T>(1.0 - h.beta1)),
        keep(T(1) - w),
        beta2(static_cast<T>(h.beta2)),
        value(static_cast<T>(1.0 - h.beta2)),
        near(std::fabs(w) < T(0.5)) {}
};

#ifdef SCELLIS_ADAM_X86
bool UseAvx512() {
  return MachineVectorIsa() == VectorIsa::kAvx512;
}
#endif

template <typename T>
void PlainFirstMoment(const OpArgs<T>& a, const PlainAdamArgs<T>& p, int64_t begin, int64_t end) {
#ifdef SCELLIS_ADAM_X86
  if (UseAvx512())
    return avx512::AdamLoops<T>::FirstMoment(a.inputs[1], a.inputs[2], a.output, p.w, p.keep,
                                             p.near, begin, end);
#endif
  base_isa::AdamLoops<T>::FirstMoment(a.inputs[1], a.inputs[2], a.output, p.w, p.keep, p.near,
                                      begin, end);
}

template <typename T>
void PlainSecondMoment(const OpArgs<T>& a, const PlainAdamArgs<T>& p, int64_t begin, int64_t end) {
#ifdef SCELLIS_ADAM_X86
  if (UseAvx512())
    return avx512::AdamLoops<T>::SecondMoment(a.inputs[1], a.inputs[3], a.output, p.beta2, p.value,
                                              begin, end);
#endif
  base_isa::AdamLoops<T>::SecondMoment(a.inputs[1], a.inputs[3], a.output, p.beta2, p.value, begin,
                                       end);
}

template <typename T>
void AdamM(const OpArgs<T>& a) {
  Hyper h(*a.node);
  if (PlainAdam<T>(h)) {
    const PlainAdamArgs<T> p(h);
    return SetEachOutputRange(a, [&](int64_t b, int64_t e) { PlainFirstMoment(a, p, b, e); });
  }
  SetEachOutput(a, [&](int64_t i) { return NewFirstMoment(a, h, i); });
}

template <typename T>
void AdamV(const OpArgs<T>& a) {
  Hyper h(*a.node);
  if (PlainAdam<T>(h)) {
    const PlainAdamArgs<T> p(h);
    return SetEachOutputRange(a, [&](int64_t b, int64_t e) { PlainSecondMoment(a, p, b, e); });
  }
  SetEachOutput(a, [&](int64_t i) { return NewSecondMoment(a, h, i); });
}

// param (decayed first under AdamW) + (-lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps).
template <typename T>
void AdamUpdate(const OpArgs<T>& a) {
  Hyper h(*a.node);
  int64_t step = StepNumber(a.inputs[4][0]);
  double bc1 = 1.0 - PowInt(h.beta1, step);
  double bc2 = 1.0 - PowInt(h.beta2, step);
  T minus_step_size = static_cast<T>(-(h.lr / bc1));
  T bc2_sqrt = static_cast<T>(std::sqrt(bc2));
  T eps = static_cast<T>(h.eps);
  T decay = static_cast<T>(1.0 - h.lr * h.weight_decay);
  if (PlainAdam<T>(h)) {
    const PlainAdamArgs<T> p(h);
    const T *param = a.inputs[0], *grad = a.inputs[1], *m = a.inputs[2], *v = a.inputs[3];
    return SetEachOutputRange(a, [&](int64_t begin, int64_t end) {
#ifdef SCELLIS_ADAM_X86
      if (UseAvx512())
        return avx512::AdamLoops<T>::Update(param, grad, m, v, a.output, p.w, p.keep, p.near,
                                            p.beta2, p.value, minus_step_size, bc2_sqrt, eps, begin,
                                            end);
#endif
      base_isa::AdamLoops<T>::Update(param, grad, m, v, a.output, p.w, p.keep, p.near, p.beta2,
                                     p.value, minus_step_size, bc2_sqrt, eps, begin, end);
    });
  }
  SetEachOutput(a, [&](int64_t i) {
    T p = a.inputs[0][i];
    if (h.decoupled && h.weight_decay != 0) p = p * decay;
    T m = NewFirstMoment(a, h, i), v = NewSecondMoment(a, h, i);
    T denom = detmath::Sqrt(v) / bc2_sqrt + eps;
    return p + minus_step_size * m / denom;
  });
}

// Which of its arguments (param, grad, state..., t) a moment or the velocity reads: the gradient
// and its own state (the velocity the step too), the parameter only through coupled weight decay
// (EffectiveGrad), never the other moment.
bool UpdateReads(const webir::Node& n, size_t arg) {
  const Hyper h(n);
  const bool param = h.weight_decay != 0 && !h.decoupled;
  if (n.op == "adam_m") return arg == 1 || arg == 2 || (arg == 0 && param);
  if (n.op == "adam_v") return arg == 1 || arg == 3 || (arg == 0 && param);
  if (n.op == "momentum_velocity") return arg != 0 || param;
  return true;
}

}  // namespace

void AddOptimOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"sgd_update", {SgdUpdate<float>, SgdUpdate<double>}});
  t.push_back({"momentum_update", {MomentumUpdate<float>, MomentumUpdate<double>}});
  t.push_back(
      {"momentum_velocity", {MomentumVelocity<float>, MomentumVelocity<double>, UpdateReads}});
  t.push_back({"adam_update", {AdamUpdate<float>, AdamUpdate<double>}});
  t.push_back({"adam_m", {AdamM<float>, AdamM<double>, UpdateReads}});
  t.push_back({"adam_v", {AdamV<float>, AdamV<double>, UpdateReads}});
}

}  // namespace scellis::kernel::ref
