#include "base/detmath.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <vector>

namespace scellis::detmath {
namespace {

// The references are the C library's long double functions: 11 more bits than double, so their
// own errors are a few thousandths of a double ulp. Where an argument must be formed first
// (x/sqrt2, x^2/2) it is formed to beyond long double precision, as the functions are steep there.
using LD = long double;
static_assert(std::numeric_limits<LD>::digits >= 64, "the references need a wider long double");

constexpr double kInfD = std::numeric_limits<double>::infinity();
constexpr float kInfF = std::numeric_limits<float>::infinity();

// |y - ref| in units in the last place of T at ref (the spacing of T's values around ref, with
// the subnormal spacing below the normal range). Infinity counts as 2^(max_exponent), where the
// next binade would start, so a wrong overflow shows up as a large error.
template <typename T>
double UlpError(T y, LD ref) {
  using L = std::numeric_limits<T>;
  if (std::isnan(ref) || std::isnan(y)) return std::isnan(ref) && std::isnan(y) ? 0 : kInfD;
  LD top = std::ldexp(1.0L, L::max_exponent);
  // Past the largest finite value plus half its ulp, the correct result is infinity.
  LD overflow = top - std::ldexp(1.0L, L::max_exponent - L::digits - 1);
  if (std::isinf(y) && (y > 0 ? ref >= overflow : ref <= -overflow)) return 0;
  LD yl = std::isinf(y) ? (y > 0 ? top : -top) : static_cast<LD>(y);
  LD r = std::isinf(ref) ? (ref > 0 ? top : -top) : ref;
  if (yl == r) return 0;
  int exponent = L::min_exponent - 1;
  if (r != 0) {
    int e = 0;
    std::frexp(std::fabs(r), &e);
    if (e - 1 > exponent) exponent = e - 1;
  }
  LD ulp = std::ldexp(1.0L, exponent - (L::digits - 1));
  return static_cast<double>(std::fabs(yl - r) / ulp);
}

LD Pi() {
  return std::acos(-1.0L);
}

struct LDPair {
  LD hi;
  LD lo;
};

// 1/sqrt2 to about twice long double precision: a Newton step on the exact residual.
LDPair InvSqrt2() {
  LD h = std::sqrt(0.5L);
  LD r = std::fma(-h, h, 0.5L);
  return {h, r / (2 * h)};
}

LD RefExp(double x) {
  return std::exp(static_cast<LD>(x));
}
LD RefLog(double x) {
  return std::log(static_cast<LD>(x));
}
LD RefTanh(double x) {
  return std::tanh(static_cast<LD>(x));
}
LD RefErf(double x) {
  return std::erf(static_cast<LD>(x));
}

LD RefSigmoid(double x) {
  LD xl = x;
  if (x >= 0) return 1 / (1 + std::exp(-xl));
  LD e = std::exp(xl);
  return e / (1 + e);
}

// Phi(x) = erfc(z)/2, z = -x/sqrt2. erfc's tail falls like exp(-z^2), so a relative error in z
// becomes 2 z^2 times larger in the result: z is carried as z + dz and corrected to first order.
LD RefPhi(double x) {
  static const LDPair s = InvSqrt2();
  LD xl = -static_cast<LD>(x);
  LD z = xl * s.hi;
  LD dz = std::fma(xl, s.hi, -z) + xl * s.lo;
  return 0.5L * (std::erfc(z) - dz * (2 / std::sqrt(Pi())) * std::exp(-z * z));
}

// The standard normal density, with x^2 split exactly so the exponent is exact.
LD RefDensity(double x) {
  LD xl = x;
  LD x2 = xl * xl;
  LD x2lo = std::fma(xl, xl, -x2);
  return std::exp(-0.5L * x2) * (1 - 0.5L * x2lo) / std::sqrt(2 * Pi());
}

LD RefGelu(double x) {
  return static_cast<LD>(x) * RefPhi(x);
}

// gelu'(x) = Phi(x) + x phi(x) has a root x0; near it the two terms cancel and long double is
// not enough, so there the reference is the Taylor series at x0: gelu^(n)(x) = phi(x) P_n(x)
// with P_1 = 2 - x^2 and P_{n+1} = P_n' - x P_n.
constexpr double kRootHi = -0x1.80ead197f00b4p-1;
constexpr LD kRootLo = 1.49567591770098832732055544813e-17L;  // x0 - kRootHi

LD RefGeluGradNearRoot(double x) {
  static const std::vector<LD> taylor = [] {
    LD x0 = static_cast<LD>(kRootHi) + kRootLo;
    LD density = std::exp(-0.5L * x0 * x0) / std::sqrt(2 * Pi());
    std::vector<LD> coeffs = {0};
    std::vector<LD> p = {2, 0, -1};
    LD factorial = 1;
    for (int n = 1; n <= 16; ++n) {
      factorial *= n;
      LD value = 0;
      for (size_t i = p.size(); i-- > 0;) value = value * x0 + p[i];
      coeffs.push_back(density * value / factorial);
      std::vector<LD> next(p.size() + 1, 0);
      for (size_t i = 0; i < p.size(); ++i) {
        if (i > 0) next[i - 1] += i * p[i];
        next[i + 1] -= p[i];
      }
      p = next;
    }
    return coeffs;
  }();
  LD t = (static_cast<LD>(x) - kRootHi) - kRootLo;
  LD sum = 0;
  for (size_t n = taylor.size(); n-- > 1;) sum = (sum + taylor[n]) * t;
  return sum;
}

LD RefGeluGrad(double x) {
  if (std::fabs(x - kRootHi) < 0.03) return RefGeluGradNearRoot(x);
  return RefPhi(x) + static_cast<LD>(x) * RefDensity(x);
}

// Seeded inputs, generated from raw bits so that every machine tests the same points.
class Inputs {
 public:
  explicit Inputs(uint64_t seed) : rng_(seed) {}

  double Uniform(double lo, double hi) {
    double u = static_cast<double>(rng_() >> 11) * 0x1p-53;
    return lo + (hi - lo) * u;
  }

  // +-m 2^e with e uniform in [lo, hi]: covers many binades evenly.
  double LogUniform(int lo, int hi, bool both_signs) {
    double m = 1 + static_cast<double>(rng_() >> 12) * 0x1p-52;
    int e = lo + static_cast<int>(rng_() % static_cast<uint64_t>(hi - lo + 1));
    double x = std::ldexp(m, e);
    return both_signs && (rng_() & 1) ? -x : x;
  }

  // A positive finite double with uniformly random bits, subnormals included.
  double PositiveBits() {
    for (;;) {
      double x = std::bit_cast<double>(rng_() >> 1);
      if (std::isfinite(x) && x > 0) return x;
    }
  }

 private:
  std::mt19937_64 rng_;
};

using Sampler = std::function<double(Inputs&)>;

struct Range {
  const char* name;
  Sampler sample;
  int count;
};

struct Measured {
  double max_ulp = 0;
  double worst_x = 0;
};

template <typename T>
Measured Measure(T (*f)(T), LD (*ref)(double), const std::vector<Range>& ranges, uint64_t seed) {
  Measured m;
  Inputs in(seed);
  for (const Range& r : ranges) {
    for (int i = 0; i < r.count; ++i) {
      T x = static_cast<T>(r.sample(in));
      double err = UlpError<T>(f(x), ref(static_cast<double>(x)));
      if (err > m.max_ulp || std::isnan(err)) {
        m.max_ulp = err;
        m.worst_x = x;
      }
    }
  }
  return m;
}

// About 80,000 points per function and format, 1.1 million in all.
struct Case {
  const char* name;
  double (*fd)(double);
  float (*ff)(float);
  LD (*ref)(double);
  std::vector<Range> double_ranges;
  std::vector<Range> float_ranges;
};

Sampler U(double lo, double hi) {
  return [=](Inputs& in) { return in.Uniform(lo, hi); };
}
Sampler LogU(int lo, int hi, bool both_signs) {
  return [=](Inputs& in) { return in.LogUniform(lo, hi, both_signs); };
}
Sampler Near1(double d) {
  return [=](Inputs& in) { return 1 + in.Uniform(-d, d); };
}
Sampler Bits() {
  return [](Inputs& in) { return in.PositiveBits(); };
}

std::vector<Case> Cases() {
  return {
      {"Exp",
       Exp,
       Exp,
       RefExp,
       {{"wide", U(-746, 710), 40000},
        {"unit", U(-2, 2), 20000},
        {"tiny", LogU(-80, -1, true), 20000}},
       {{"wide", U(-104, 89), 40000},
        {"unit", U(-2, 2), 20000},
        {"tiny", LogU(-40, -1, true), 20000}}},
      {"Log",
       Log,
       Log,
       RefLog,
       {{"bits", Bits(), 30000},
        {"binade", U(0.5, 2), 20000},
        {"near 1", Near1(1e-3), 20000},
        {"very near 1", Near1(1e-12), 10000}},
       {{"bits", Bits(), 30000},
        {"binade", U(0.5, 2), 20000},
        {"near 1", Near1(1e-3), 20000},
        {"very near 1", Near1(1e-6), 10000}}},
      {"Tanh",
       Tanh,
       Tanh,
       RefTanh,
       {{"wide", U(-25, 25), 30000},
        {"unit", U(-1, 1), 30000},
        {"tiny", LogU(-60, -1, true), 20000}},
       {{"wide", U(-12, 12), 30000},
        {"unit", U(-1, 1), 30000},
        {"tiny", LogU(-60, -1, true), 20000}}},
      {"Erf",
       Erf,
       Erf,
       RefErf,
       {{"wide", U(-7, 7), 30000}, {"unit", U(-1, 1), 30000}, {"tiny", LogU(-80, -1, true), 20000}},
       {{"wide", U(-5, 5), 30000},
        {"unit", U(-1, 1), 30000},
        {"tiny", LogU(-80, -1, true), 20000}}},
      {"Sigmoid",
       Sigmoid,
       Sigmoid,
       RefSigmoid,
       {{"wide", U(-750, 45), 30000}, {"mid", U(-40, 40), 30000}, {"unit", U(-1, 1), 20000}},
       {{"wide", U(-110, 20), 30000}, {"mid", U(-20, 20), 30000}, {"unit", U(-1, 1), 20000}}},
      {"Gelu",
       Gelu,
       Gelu,
       RefGelu,
       {{"wide", U(-41, 11), 30000},
        {"mid", U(-4, 4), 30000},
        {"tiny", LogU(-80, -1, true), 20000}},
       {{"wide", U(-15, 11), 30000},
        {"mid", U(-4, 4), 30000},
        {"tiny", LogU(-80, -1, true), 20000}}},
      {"GeluGrad",
       GeluGrad,
       GeluGrad,
       RefGeluGrad,
       {{"wide", U(-41, 11), 20000},
        {"mid", U(-4, 4), 20000},
        {"root", U(-1.6, -0.3), 20000},
        {"very near root", U(kRootHi - 1e-6, kRootHi + 1e-6), 10000},
        {"tiny", LogU(-70, -1, true), 10000}},
       {{"wide", U(-15, 11), 20000},
        {"mid", U(-4, 4), 20000},
        {"root", U(-1.6, -0.3), 20000},
        {"very near root", U(kRootHi - 1e-4, kRootHi + 1e-4), 10000},
        {"tiny", LogU(-70, -1, true), 10000}}},
  };
}

// The bounds the header documents (the contract asks for 1 ulp in float and 4 in double). The
// measured maxima are 0.500 and 0.572; the margin covers the references' own error.
constexpr double kFloatBound = 0.51;
constexpr double kDoubleBound = 0.75;

TEST(DetMath, AccuracyAgainstLongDoubleReferences) {
  uint64_t seed = 20240601;
  for (const Case& c : Cases()) {
    Measured d = Measure<double>(c.fd, c.ref, c.double_ranges, seed++);
    Measured f = Measure<float>(c.ff, c.ref, c.float_ranges, seed++);
    std::printf("%-9s double max %.4f ulp (at %.17g), float max %.4f ulp (at %.9g)\n", c.name,
                d.max_ulp, d.worst_x, f.max_ulp, f.worst_x);
    EXPECT_LE(d.max_ulp, kDoubleBound) << c.name << " double at " << d.worst_x;
    EXPECT_LE(f.max_ulp, kFloatBound) << c.name << " float at " << f.worst_x;
  }
}

using FnD = double (*)(double);
using FnF = float (*)(float);

struct Overloads {
  FnD d;
  FnF f;
};

// The transcendental functions (Sqrt is the hardware's).
const Overloads kTranscendental[] = {{Exp, Exp},          {Log, Log},         {Tanh, Tanh},
                                     {Erf, Erf},          {Sigmoid, Sigmoid}, {Gelu, Gelu},
                                     {GeluGrad, GeluGrad}};

template <typename T>
bool SameBits(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
  } else {
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
  }
}

#define EXPECT_BITS(expected, actual) \
  EXPECT_TRUE(SameBits(expected, actual)) << #actual << " = " << (actual) << ", want " << (expected)

TEST(DetMath, SpecialValuesDouble) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double tiny = std::numeric_limits<double>::denorm_min();
  for (const Overloads& f : kTranscendental) EXPECT_TRUE(std::isnan(f.d(nan)));
  EXPECT_TRUE(std::isnan(Sqrt(nan)));
  EXPECT_BITS(1.0, Exp(0.0));
  EXPECT_BITS(1.0, Exp(-0.0));
  EXPECT_BITS(kInfD, Exp(kInfD));
  EXPECT_BITS(0.0, Exp(-kInfD));
  EXPECT_BITS(kInfD, Exp(709.79));
  EXPECT_TRUE(std::isfinite(Exp(709.78)));
  EXPECT_LE(UlpError<double>(Exp(709.782712893384), RefExp(709.782712893384)), 0.5);
  EXPECT_BITS(tiny, Exp(-745.13));  // e^-745.13 = 0.78 * 2^-1074: rounds up to the smallest
  EXPECT_BITS(0.0, Exp(-745.14));   // e^-745.14 < 2^-1075: rounds down to zero
  EXPECT_BITS(0.0, Log(1.0));
  EXPECT_BITS(-kInfD, Log(0.0));
  EXPECT_BITS(-kInfD, Log(-0.0));
  EXPECT_TRUE(std::isnan(Log(-1.0)));
  EXPECT_TRUE(std::isnan(Log(-kInfD)));
  EXPECT_BITS(kInfD, Log(kInfD));
  EXPECT_LE(UlpError<double>(Log(tiny), std::log(static_cast<LD>(tiny))), 0.5);
  EXPECT_LE(UlpError<double>(Log(std::numeric_limits<double>::max()),
                             std::log(static_cast<LD>(std::numeric_limits<double>::max()))),
            0.5);
  for (FnD f : {FnD{Tanh}, FnD{Erf}, FnD{Gelu}}) {
    EXPECT_BITS(0.0, f(0.0));
    EXPECT_BITS(-0.0, f(-0.0));
  }
  EXPECT_BITS(1.0, Tanh(kInfD));
  EXPECT_BITS(-1.0, Tanh(-kInfD));
  EXPECT_BITS(tiny, Tanh(tiny));
  EXPECT_BITS(1.0, Erf(kInfD));
  EXPECT_BITS(-1.0, Erf(-kInfD));
  EXPECT_BITS(2 * tiny, Erf(2 * tiny));  // 2/sqrt(pi) * 2 = 2.26 subnormal quanta
  EXPECT_BITS(1.0, Sigmoid(kInfD));
  EXPECT_BITS(0.0, Sigmoid(-kInfD));
  EXPECT_BITS(0.5, Sigmoid(0.0));
  EXPECT_BITS(0.5, Sigmoid(-0.0));
  EXPECT_BITS(Exp(-700.0), Sigmoid(-700.0));  // e^x / (1 + e^x) = e^x once 1 absorbs e^x
  EXPECT_BITS(tiny, Sigmoid(-745.13));
  EXPECT_BITS(kInfD, Gelu(kInfD));
  EXPECT_BITS(-0.0, Gelu(-kInfD));
  EXPECT_BITS(1e300, Gelu(1e300));
  EXPECT_BITS(-0.0, Gelu(-39.0));  // x Phi(x) ~ -2^-1100
  EXPECT_LT(Gelu(-38.0), 0.0);     // ~ -2^-1049, subnormal
  // x Phi(x) = x/2 + x^2/sqrt(2 pi) + ...: just above the tie at half the smallest subnormal.
  EXPECT_BITS(tiny, Gelu(tiny));
  EXPECT_BITS(-0.0, Gelu(-tiny));
  EXPECT_BITS(2 * tiny, Gelu(3 * tiny));
  EXPECT_BITS(1.0, GeluGrad(kInfD));
  EXPECT_BITS(-0.0, GeluGrad(-kInfD));
  EXPECT_BITS(0.5, GeluGrad(0.0));
  EXPECT_BITS(0.5, GeluGrad(-0.0));
  EXPECT_LT(GeluGrad(kRootHi), 0.0);  // the double nearest the root lies just below it
  EXPECT_GT(GeluGrad(std::nextafter(kRootHi, 0.0)), 0.0);
  EXPECT_BITS(3.0, Sqrt(9.0));
  EXPECT_BITS(-0.0, Sqrt(-0.0));
  EXPECT_TRUE(std::isnan(Sqrt(-1.0)));
}

TEST(DetMath, SpecialValuesFloat) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float tiny = std::numeric_limits<float>::denorm_min();
  for (const Overloads& f : kTranscendental) EXPECT_TRUE(std::isnan(f.f(nan)));
  EXPECT_TRUE(std::isnan(Sqrt(nan)));
  EXPECT_BITS(1.0f, Exp(0.0f));
  EXPECT_BITS(kInfF, Exp(kInfF));
  EXPECT_BITS(0.0f, Exp(-kInfF));
  EXPECT_BITS(kInfF, Exp(88.73f));
  EXPECT_LE(UlpError<float>(Exp(88.7228f), RefExp(88.7228f)), 0.5);
  EXPECT_BITS(tiny, Exp(-103.5f));  // e^-103.5 = 0.96 * 2^-149
  EXPECT_BITS(0.0f, Exp(-104.0f));  // 0.36 * 2^-149
  EXPECT_BITS(0.0f, Log(1.0f));
  EXPECT_BITS(-kInfF, Log(0.0f));
  EXPECT_TRUE(std::isnan(Log(-2.0f)));
  EXPECT_BITS(kInfF, Log(kInfF));
  EXPECT_LE(UlpError<float>(Log(tiny), std::log(static_cast<LD>(tiny))), 0.5);
  for (FnF f : {FnF{Tanh}, FnF{Erf}, FnF{Gelu}}) {
    EXPECT_BITS(0.0f, f(0.0f));
    EXPECT_BITS(-0.0f, f(-0.0f));
  }
  EXPECT_BITS(1.0f, Tanh(kInfF));
  EXPECT_BITS(-1.0f, Erf(-kInfF));
  EXPECT_BITS(tiny, Tanh(tiny));
  EXPECT_BITS(0.0f, Sigmoid(-kInfF));
  EXPECT_BITS(tiny, Sigmoid(-103.5f));
  EXPECT_BITS(-0.0f, Gelu(-kInfF));
  EXPECT_BITS(kInfF, Gelu(kInfF));
  EXPECT_BITS(1.0f, GeluGrad(kInfF));
  EXPECT_BITS(2.0f, Sqrt(4.0f));
}

// Every function is a pure function of its argument: the same input gives the same bits on
// every call, whatever was computed in between.
TEST(DetMath, SameInputSameBits) {
  Inputs in(7);
  std::vector<double> xs;
  for (int i = 0; i < 2000; ++i) xs.push_back(in.Uniform(-50, 50));
  for (const Overloads& f : kTranscendental) {
    std::vector<double> first;
    std::vector<float> first_f;
    for (double x : xs) {
      first.push_back(f.d(x));
      first_f.push_back(f.f(static_cast<float>(x)));
    }
    for (size_t i = xs.size(); i-- > 0;) {  // in reverse, so each call follows a different one
      EXPECT_TRUE(SameBits(first[i], f.d(xs[i]))) << xs[i];
      EXPECT_TRUE(SameBits(first_f[i], f.f(static_cast<float>(xs[i])))) << xs[i];
    }
  }
}

// Exp(float) answers from plain doubles wherever they give the double-double path's float: the
// same bits on seeded random arguments over the whole range that is neither 0 nor infinite,
// on 2^16 consecutive floats around each boundary (underflow to subnormals and to zero,
// overflow, 0 and 1) and on the special values.
TEST(DetMath, FloatExpHasTheDoubleDoublePathsBits) {
  auto same = [](float x) {
    const float got = Exp(x), want = ExpByDoubleDouble(x);
    return std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want);
  };
  Inputs in(2026);
  int64_t differ = 0;
  for (int i = 0; i < 2000000; ++i) {
    const float x = static_cast<float>(in.Uniform(-104, 89));
    if (!same(x) && ++differ <= 5) ADD_FAILURE() << "Exp(" << x << ") differs";
  }
  for (float start : {-103.98f, -103.28f, -87.34f, -1e-30f, 0.0f, 1.0f, 88.72f}) {
    uint32_t bits = std::bit_cast<uint32_t>(start);
    for (int i = 0; i < 65536; ++i) {
      const float x = std::bit_cast<float>(start < 0 ? bits - i : bits + i);
      if (!same(x) && ++differ <= 5) ADD_FAILURE() << "Exp(" << x << ") differs";
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {inf, -inf, std::numeric_limits<float>::quiet_NaN(), -0.0f, 89.0f, -104.0f,
                  std::numeric_limits<float>::denorm_min(), 1e-45f})
    EXPECT_EQ(std::bit_cast<uint32_t>(Exp(x)), std::bit_cast<uint32_t>(ExpByDoubleDouble(x))) << x;
  EXPECT_EQ(differ, 0);
}

// A digest of the bits of all functions over fixed inputs. It is the same on every machine that
// builds Scellis correctly; if it changes, the reference backend's results changed, which must
// be deliberate (and then the digest is updated with the change).
TEST(DetMath, GoldenDigest) {
  uint64_t digest = 14695981039346656037ULL;  // FNV-1a
  auto mix = [&digest](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      digest ^= (v >> (8 * i)) & 0xff;
      digest *= 1099511628211ULL;
    }
  };
  Inputs in(99);
  for (int i = 0; i < 5000; ++i) {
    double x = in.Uniform(-30, 30);
    double p = in.PositiveBits();
    float xf = static_cast<float>(x);
    for (const Overloads& f : kTranscendental) {
      double arg = f.d == FnD{Log} ? p : x;
      mix(std::bit_cast<uint64_t>(f.d(arg)));
      mix(std::bit_cast<uint32_t>(f.f(f.d == FnD{Log} ? static_cast<float>(p) : xf)));
    }
  }
  std::printf("detmath digest %016llx\n", static_cast<unsigned long long>(digest));
  EXPECT_EQ(digest, 0xca71f7ec385699c5ULL);
}

}  // namespace
}  // namespace scellis::detmath
