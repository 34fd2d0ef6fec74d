#include "base/detmath.h"

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

// The double-double arithmetic below needs every operation rounded to double, once.
#if defined(__FAST_MATH__)
#error "detmath needs IEEE-754 semantics: build without -ffast-math"
#endif
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "detmath needs double arithmetic evaluated in double (no x87 excess precision)"
#endif

namespace scellis::detmath {
namespace {

#include "base/detmath_tables.inc"

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------------------------------------
// Double-double arithmetic. A value is hi + lo with |lo| <= ulp(hi)/2 ("normalized"). The
// error-free transformations below are exact as long as nothing overflows and the products stay
// above 2^-969 (the callers keep their operands in range, scaling tiny inputs first).

struct DD {
  double hi;
  double lo;
};

// A double-double times 2^k; keeps a result whose magnitude leaves the double range exact until
// the final rounding.
struct Scaled {
  DD m;
  int k;
};

// a + b exactly, any magnitudes.
inline DD TwoSum(double a, double b) {
  double s = a + b;
  double bb = s - a;
  double e = (a - (s - bb)) + (b - bb);
  return {s, e};
}

// a + b exactly, for |a| >= |b| (or a == 0).
inline DD FastTwoSum(double a, double b) {
  double s = a + b;
  return {s, b - (s - a)};
}

// Veltkamp's split of a into two halves of 26 bits each, so their products are exact.
inline DD Split(double a) {
  constexpr double kSplitter = 134217729.0;  // 2^27 + 1
  double c = kSplitter * a;
  double hi = c - (c - a);
  return {hi, a - hi};
}

// a * b exactly (Dekker), without FMA.
inline DD TwoProd(double a, double b) {
  double p = a * b;
  DD as = Split(a);
  DD bs = Split(b);
  double e = ((as.hi * bs.hi - p) + as.hi * bs.lo + as.lo * bs.hi) + as.lo * bs.lo;
  return {p, e};
}

inline DD Add(DD a, DD b) {
  DD s = TwoSum(a.hi, b.hi);
  return FastTwoSum(s.hi, s.lo + (a.lo + b.lo));
}

inline DD AddD(DD a, double b) {
  DD s = TwoSum(a.hi, b);
  return FastTwoSum(s.hi, s.lo + a.lo);
}

inline DD Neg(DD a) {
  return {-a.hi, -a.lo};
}

inline DD Mul(DD a, DD b) {
  DD p = TwoProd(a.hi, b.hi);
  return FastTwoSum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}

inline DD MulD(DD a, double b) {
  DD p = TwoProd(a.hi, b);
  return FastTwoSum(p.hi, p.lo + a.lo * b);
}

inline DD Div(DD a, DD b) {
  double q = a.hi / b.hi;
  DD p = TwoProd(q, b.hi);
  // a - q*b, where a.hi - p.hi is exact because q*b.hi is within an ulp of a.hi.
  double r = (((a.hi - p.hi) - p.lo) + a.lo) - q * b.lo;
  return FastTwoSum(q, r / b.hi);
}

// ---------------------------------------------------------------------------------------------
// Exact scaling and rounding.

// 2^e for -1022 <= e <= 1023, from its bits.
inline double Pow2(int e) {
  return std::bit_cast<double>(static_cast<uint64_t>(e + 1023) << 52);
}

// x * 2^e; exact whenever the result is a normal number or zero, and also when it is a
// subnormal that x * 2^e represents exactly. The factors are applied largest first so that no
// intermediate leaves the normal range before the result does.
inline double Ldexp(double x, int e) {
  while (e > 1023) {
    x *= Pow2(1023);
    e -= 1023;
  }
  while (e < -1022) {
    x *= Pow2(-1022);
    e += 1022;
  }
  return x * Pow2(e);
}

inline DD Ldexp(DD a, int e) {
  return {Ldexp(a.hi, e), Ldexp(a.lo, e)};
}

// floor(log2(|x|)) for a normal, nonzero x.
inline int Exponent(double x) {
  return static_cast<int>((std::bit_cast<uint64_t>(x) >> 52) & 0x7ff) - 1023;
}

// The integer nearest to x (ties to even) for |x| < 2^51: adding 1.5 * 2^52 leaves no fraction
// bits, so the addition itself rounds.
inline double RoundToInt(double x) {
  constexpr double kShift = 0x1.8p52;
  return (x + kShift) - kShift;
}

struct Format {
  int precision;  // significand bits, hidden bit included
  int emin;       // exponent of the smallest normal
  int emax;       // exponent of the largest finite
};
constexpr Format kDoubleFormat{53, -1022, 1023};
constexpr Format kFloatFormat{24, -126, 127};

// Rounds (m.hi + m.lo) * 2^k to the nearest value of format fmt (ties to even), with overflow to
// infinity and gradual underflow. m must be normalized and m.hi a normal double. The value is
// returned as a double, which holds every value of either format exactly.
double RoundTo(DD m, int k, Format fmt) {
  double hi = m.hi;
  double lo = m.lo;
  if (hi == 0) return hi;
  bool negative = hi < 0;
  if (negative) {
    hi = -hi;
    lo = -lo;
  }
  int e = Exponent(hi) + k;
  if (e > fmt.emax) return negative ? -kInf : kInf;
  // The quantum of the result: the weight of its last significand bit.
  int q = (e < fmt.emin ? fmt.emin : e) - (fmt.precision - 1);
  double h = Ldexp(hi, k - q);  // < 2^precision, exact unless far below the smallest subnormal
  double l = Ldexp(lo, k - q);
  // h >= 0; below 2^52, adding 2^52 leaves no fraction bits, so the addition rounds to an
  // integer; from 2^52 on h is one already.
  double n = h >= 0x1p52 ? h : (h + 0x1p52) - 0x1p52;
  // n rounded h alone, ties to even. As |l| is at most half an ulp of h, l matters only when h
  // sits exactly on a tie, and then its sign decides.
  double f = h - n;  // exact
  if (f == 0.5 && l > 0) {
    n += 1;
  } else if (f == -0.5 && l < 0) {
    n -= 1;
  }
  if (n >= Pow2(fmt.precision) && q + fmt.precision > fmt.emax) return negative ? -kInf : kInf;
  double r = Ldexp(n, q);
  return negative ? -r : r;
}

template <typename T>
T Finish(DD m, int k) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return static_cast<float>(RoundTo(m, k, kFloatFormat));
  } else {
    return RoundTo(m, k, kDoubleFormat);
  }
}

template <typename T>
T Finish(Scaled s) {
  return Finish<T>(s.m, s.k);
}

// Polynomial c[0] + c[1] t + ... + c[n-1] t^(n-1), by Horner's rule.
inline double Horner(const double* c, int n, double t) {
  double p = c[n - 1];
  for (int i = n - 2; i >= 0; --i) p = p * t + c[i];
  return p;
}

// x^3 P(x^2) as a double-double, P given by n coefficients whose first is a (high, low) pair.
// x^3 and the constant term are carried exactly (for |x| above 2^-300; below, the term is far
// under an ulp of any result it is added to), so only the rounding of w P1(w), a few percent
// of P, remains.
DD CubeTimes(double x, const double* coeffs, int n) {
  DD w = TwoProd(x, x);
  double rest = w.hi * Horner(coeffs + 2, n - 2, w.hi);
  DD p = TwoSum(coeffs[0], rest);
  p = FastTwoSum(p.hi, p.lo + coeffs[1]);
  DD x3 = TwoProd(x, w.hi);
  x3.lo += x * w.lo;
  return Mul(x3, p);
}

// A polynomial in t (a double-double) whose constant and linear terms are (high, low) pairs,
// pairs = {c0 hi, c0 lo, c1 hi, c1 lo}, and whose terms from t^2 up are coeffs[0..n).
DD PairPoly(DD t, const double* pairs, const double* coeffs, int n) {
  double quad = (t.hi * t.hi) * Horner(coeffs, n, t.hi);
  DD lin = Mul(t, DD{pairs[2], pairs[3]});
  DD s = Add(DD{pairs[0], pairs[1]}, lin);
  return AddD(s, quad);
}

// ---------------------------------------------------------------------------------------------
// The cores. Each returns an unrounded double-double.

// e^(xh + xl) for |xh| <= 1000, |xl| <= ulp(xh), as m * 2^k with m in [0.99, 2.02).
//
// x = (64 k + j) ln2/64 + r with |r| <= ln2/128, so e^x = 2^k * 2^(j/64) * e^r; 2^(j/64) comes
// from a table of double-doubles and e^r - 1 from its Taylor series to r^7 (the next term is
// below 2^-75). The reduction is exact: n * ln2/64 is subtracted in three pieces, the first two
// short enough that their products with n are exact.
Scaled ExpCore(double xh, double xl) {
  double nf = RoundToInt(xh * k64ByLn2);
  int n = static_cast<int>(nf);
  int j = n & 63;
  int k = n >> 6;                   // floor(n / 64): arithmetic shift
  double r1 = xh - nf * kLn2By64A;  // exact (Sterbenz)
  DD r = TwoSum(r1, -(nf * kLn2By64B));
  r = TwoSum(r.hi, r.lo + (xl - nf * kLn2By64C));
  double rh = r.hi;
  double rl = r.lo;
  // e^r - 1 = rh + low, low = rl (1 + rh) + rh^2/2 + rh^3/6 + ... + rh^7/5040.
  constexpr double kC2 = 1.0 / 2, kC3 = 1.0 / 6, kC4 = 1.0 / 24, kC5 = 1.0 / 120;
  constexpr double kC6 = 1.0 / 720, kC7 = 1.0 / 5040;
  double tail = (rh * rh) * (kC2 + rh * (kC3 + rh * (kC4 + rh * (kC5 + rh * (kC6 + rh * kC7)))));
  double low = (rl + rh * rl) + tail;
  // 2^(j/64) e^r = th + th rh + th low + tl (1 + rh + low).
  double th = kExp2Table[2 * j];
  double tl = kExp2Table[2 * j + 1];
  DD p = TwoProd(th, rh);
  DD s = FastTwoSum(th, p.hi);
  double lo = s.lo + (p.lo + (th * low + (tl + tl * (rh + low))));
  return {FastTwoSum(s.hi, lo), k};
}

// e^(xh + xl) as a plain double-double, for arguments where it stays normal (|x| <= 700).
inline DD ExpDD(double xh, double xl) {
  Scaled e = ExpCore(xh, xl);
  return Ldexp(e.m, e.k);
}

// log(x) for a positive, finite x.
//
// x = 2^e m with m in [0.75, 1.5); m inv_j = 1 + r exactly (as a double-double) with inv_j close
// to 1/(1 + j/128), so |r| < 2^-7.5 and log x = e ln2 - log(inv_j) + log1p(r). log1p(r) is its
// alternating series to r^11. Around x = 1 (e = 0, j = 0, inv_j = 1) only the series remains,
// so the relative accuracy holds there too.
DD LogCore(double x) {
  int e = 0;
  if (x < 0x1p-1022) {  // subnormal: bring into the normal range first
    x *= 0x1p54;
    e = -54;
  }
  uint64_t bits = std::bit_cast<uint64_t>(x);
  e += static_cast<int>(bits >> 52) - 1023;
  double m = std::bit_cast<double>((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
  if (m >= 1.5) {
    m *= 0.5;
    e += 1;
  }
  int j = static_cast<int>(RoundToInt((m - 1.0) * 128.0));
  const double* row = kLogTable + 3 * (j + 32);
  double inv = row[0];
  DD p = TwoProd(m, inv);
  DD r = TwoSum(p.hi - 1.0, p.lo);  // p.hi - 1 is exact (Sterbenz)
  double rh = r.hi;
  double rl = r.lo;
  // log1p(r) = r - r^2/2 + r^3 (1/3 - r/4 + r^2/5 - ...).
  DD sq = TwoProd(rh, rh);
  double sq_lo = sq.lo + 2.0 * rh * rl;
  constexpr double kC[9] = {1.0 / 3,  -1.0 / 4, 1.0 / 5,   -1.0 / 6, 1.0 / 7,
                            -1.0 / 8, 1.0 / 9,  -1.0 / 10, 1.0 / 11};
  double cube = (sq.hi * rh) * Horner(kC, 9, rh);
  DD l1p = TwoSum(rh, -0.5 * sq.hi);
  l1p.lo += (rl - 0.5 * sq_lo) + cube;
  // e ln2 + (-log inv_j) + log1p(r).
  double ed = static_cast<double>(e);
  DD s1 = TwoSum(ed * kLn2A, row[1]);
  DD s2 = TwoSum(s1.hi, l1p.hi);
  double lo = s1.lo + s2.lo + (ed * kLn2B + row[2] + l1p.lo);
  return FastTwoSum(s2.hi, lo);
}

// erf(zh + zl) for |zh| <= 0.5, |zh| >= 2^-900, as x (2/sqrt(pi) + w Q(w)), w = x^2.
DD ErfSmall(double zh, double zl) {
  DD cube = CubeTimes(zh, kErfSmall, sizeof(kErfSmall) / sizeof(double));
  DD p = TwoProd(zh, kTwoBySqrtPiHi);
  DD s = TwoSum(p.hi, cube.hi);
  double lo = s.lo + (p.lo + ((zh * kTwoBySqrtPiLo + zl * kTwoBySqrtPiHi) + cube.lo));
  return FastTwoSum(s.hi, lo);
}

// erfcx(z) = e^(z^2) erfc(z) at z = zh + zl, 0.5 <= zh < 29, from the piecewise fits.
DD Erfcx(double zh, double zl) {
  int i = 0;
  while (i + 1 < kErfcxPieces && zh >= kErfcxBreaks[i + 1]) ++i;
  DD t = TwoSum(zh - kErfcxCentre[i], zl);  // the subtraction is exact (Sterbenz)
  DD f = PairPoly(t, kErfcxPairs + 4 * i, kErfcxCoeffs + kErfcxStart[i],
                  kErfcxStart[i + 1] - kErfcxStart[i]);
  // Past the first pieces the fit is of z erfcx(z), which is nearly flat.
  if (i >= kErfcxFirstTimesZ) f = Div(f, DD{zh, zl});
  return f;
}

// erfc(z) for 0.5 <= z < 29: e^(-z^2) erfcx(z). z^2 comes in separately as a double-double so
// that callers with a scaled argument (GELU's x/sqrt2) can form it exactly from x; the tail's
// relative accuracy rests on it, the exponent being up to 840.
Scaled ErfcCore(double zh, double zl, DD z2) {
  Scaled e = ExpCore(-z2.hi, -z2.lo);
  return {Mul(e.m, Erfcx(zh, zl)), e.k};
}

// x/sqrt2 as a double-double, for |x| <= 2^900.
inline DD DivSqrt2(double x) {
  DD p = TwoProd(x, kInvSqrt2Hi);
  return FastTwoSum(p.hi, p.lo + x * kInvSqrt2Lo);
}

// x^2/2 as a double-double.
inline DD HalfSquare(double x) {
  DD p = TwoProd(x, x);
  return {0.5 * p.hi, 0.5 * p.lo};
}

// Phi(x) = P(N(0,1) <= x) for x >= 0 or for |x| <= 0.7, where it is at least 0.24 and needs
// no scaling. z is x/sqrt2.
DD PhiCentral(double x, DD z) {
  double za = z.hi < 0 ? -z.hi : z.hi;
  if (za <= 0.5) {
    DD er = ErfSmall(z.hi, z.lo);
    DD s = TwoSum(0.5, 0.5 * er.hi);  // 0.5 + erf/2, |erf| <= 0.53
    return FastTwoSum(s.hi, s.lo + 0.5 * er.lo);
  }
  // x > 0.7: 1 - erfc(z)/2.
  Scaled erfc = ErfcCore(z.hi, z.lo, HalfSquare(x));
  DD ec = Ldexp(erfc.m, erfc.k);
  DD r = TwoSum(1.0, -0.5 * ec.hi);
  return FastTwoSum(r.hi, r.lo - 0.5 * ec.lo);
}

// ---------------------------------------------------------------------------------------------
// The functions. Each is written once for double arguments; T picks the format of the single
// final rounding. Shortcut results (thresholds, special values) are exact in both formats.

template <typename T>
T ExpImpl(double x) {
  if (x != x) return static_cast<T>(x + x);
  if (x > 710.0) return static_cast<T>(kInf);
  if (x < -746.0) return 0;  // below half the smallest subnormal
  return Finish<T>(ExpCore(x, 0.0));
}

template <typename T>
T LogImpl(double x) {
  if (x != x) return static_cast<T>(x + x);
  if (x < 0) return static_cast<T>(kNaN);
  if (x == 0) return static_cast<T>(-kInf);
  if (x == kInf) return static_cast<T>(kInf);
  return Finish<T>(LogCore(x), 0);
}

template <typename T>
T TanhImpl(double x) {
  if (x != x) return static_cast<T>(x + x);
  double a = x < 0 ? -x : x;
  if (a > 22.0) return x < 0 ? -1 : 1;        // 1 - tanh(22) < 2^-62
  if (a < 0x1p-30) return static_cast<T>(x);  // x^3/3 is below a quarter ulp of x
  DD r;
  if (a < 0.5) {
    DD cube = CubeTimes(x, kTanhSmall, sizeof(kTanhSmall) / sizeof(double));
    DD s = TwoSum(x, cube.hi);
    r = FastTwoSum(s.hi, s.lo + cube.lo);
  } else {
    // 1 - 2 / (e^2a + 1).
    DD e = ExpDD(2.0 * a, 0.0);
    DD q = Div(DD{2.0, 0.0}, AddD(e, 1.0));
    r = AddD(Neg(q), 1.0);
    if (x < 0) r = Neg(r);
  }
  return Finish<T>(r, 0);
}

template <typename T>
T ErfImpl(double x) {
  if (x != x) return static_cast<T>(x + x);
  double a = x < 0 ? -x : x;
  if (a >= 6.0) return x < 0 ? -1 : 1;  // erfc(6) < 2^-55
  if (a < 0x1p-900) {
    if (x == 0) return static_cast<T>(x);
    // erf(x) = 2x/sqrt(pi) (1 - x^2/3 + ...): scale up so the product stays exact.
    double xs = x * 0x1p200;
    DD p = TwoProd(xs, kTwoBySqrtPiHi);
    return Finish<T>(FastTwoSum(p.hi, p.lo + xs * kTwoBySqrtPiLo), -200);
  }
  if (a <= 0.5) return Finish<T>(ErfSmall(x, 0.0), 0);
  Scaled ec = ErfcCore(a, 0.0, TwoProd(a, a));
  DD erfc = Ldexp(ec.m, ec.k);
  DD r = AddD(Neg(erfc), 1.0);
  if (x < 0) r = Neg(r);
  return Finish<T>(r, 0);
}

template <typename T>
T SigmoidImpl(double x) {
  if (x != x) return static_cast<T>(x + x);
  if (x >= 0) {
    if (x > 40.0) return 1;  // e^-40 < 2^-57
    DD e = ExpDD(-x, 0.0);
    return Finish<T>(Div(DD{1.0, 0.0}, AddD(e, 1.0)), 0);
  }
  if (x < -746.0) return 0;
  // e^x / (1 + e^x), keeping e^x = m 2^k scaled so that it can underflow gracefully.
  Scaled e = ExpCore(x, 0.0);
  DD d = AddD(Ldexp(e.m, e.k), 1.0);
  return Finish<T>(Div(e.m, d), e.k);
}

template <typename T>
T GeluImpl(double x) {
  if (x != x) return static_cast<T>(x + x);
  if (x > 10.0) return static_cast<T>(x);      // 1 - Phi(10) < 2^-76
  if (x < -40.0) return static_cast<T>(-0.0);  // |gelu(-40)| < 2^-1150
  double a = x < 0 ? -x : x;
  if (a < 0x1p-900) {
    // x Phi(x) = x/2 + x^2/sqrt(2 pi) + ...; the second term is far below an ulp and only
    // decides ties, always upwards, so any small positive stand-in does.
    if (x == 0) return static_cast<T>(x);
    double h = 0.5 * (x * 0x1p200);
    return Finish<T>(DD{h, (h < 0 ? -h : h) * 0x1p-100}, -200);
  }
  DD z = DivSqrt2(a);
  if (x >= 0 || z.hi <= 0.5) {
    DD phi = PhiCentral(x, x < 0 ? Neg(z) : z);
    return Finish<T>(MulD(phi, x), 0);
  }
  // x Phi(x) = x/2 erfc(|x|/sqrt2), with the exponent x^2/2 exact.
  Scaled ec = ErfcCore(z.hi, z.lo, HalfSquare(x));
  return Finish<T>(MulD(ec.m, 0.5 * x), ec.k);
}

template <typename T>
T GeluGradImpl(double x) {
  if (x != x) return static_cast<T>(x + x);
  if (x > 10.0) return 1;  // gelu'(10) - 1 < 2^-70
  if (x < -40.0) return static_cast<T>(-0.0);
  double a = x < 0 ? -x : x;
  if (a < 0x1p-60) return static_cast<T>(0.5);  // 0.5 + 0.8 x rounds to 0.5
  DD gauss_exp = Neg(HalfSquare(x));            // -x^2/2
  if (x >= kGeluGradHigh) {
    // Phi(x) + x phi(x), both terms of one sign or (for x in [-0.375, 0)) cancelling by at
    // most a factor 1.7.
    DD z = DivSqrt2(a);
    DD phi_cdf = PhiCentral(x, x < 0 ? Neg(z) : z);
    DD density = Mul(ExpDD(gauss_exp.hi, gauss_exp.lo), DD{kInvSqrt2PiHi, kInvSqrt2PiLo});
    return Finish<T>(Add(phi_cdf, MulD(density, x)), 0);
  }
  Scaled e = ExpCore(gauss_exp.hi, gauss_exp.lo);
  DD factor;
  if (x >= kGeluGradLow) {
    // Around the root: (x - x0) K(x), x - x0 exact as a double-double.
    DD t = TwoSum(x - kGeluGradRootHi, -kGeluGradRootLo);
    DD k = PairPoly(TwoSum(x, -kGeluGradCentre), kGeluGradPairs, kGeluGradCoeffs,
                    sizeof(kGeluGradCoeffs) / sizeof(double));
    factor = Mul(t, k);
  } else {
    // e^(-x^2/2) (erfcx(|x|/sqrt2)/2 + x/sqrt(2 pi)); the bracket cancels by at most 1.8.
    DD z = DivSqrt2(a);
    DD half_erfcx = Erfcx(z.hi, z.lo);
    half_erfcx = {0.5 * half_erfcx.hi, 0.5 * half_erfcx.lo};
    factor = Add(half_erfcx, MulD(DD{kInvSqrt2PiHi, kInvSqrt2PiLo}, x));
  }
  return Finish<T>(Mul(e.m, factor), e.k);
}

// e^x for a float x in plain double arithmetic: 2^(n/64) e^r with n the integer nearest
// 64 x / ln2, r = x - n ln2/64 (|r| <= ln2/128) and e^r - 1 by its Taylor polynomial to r^6
// (the next term is below 2^-65): within 2^-48 of e^x, relative. The double-double path is within
// about 2^-66 of it, so where every value within 2^-40 of this one rounds to the same float,
// that path's value does too and this float is its answer; elsewhere (one argument in about
// 180 000 of (-104, 89), and NaN, overflow and underflow) that path answers.
float ExpOfFloat(float xf) {
  const double x = xf;
  if (!(x > -104.0 && x < 89.0)) return ExpImpl<float>(x);
  const double nf = RoundToInt(x * k64ByLn2);
  const int n = static_cast<int>(nf);
  const double r = (x - nf * kLn2By64A) - nf * kLn2By64B;  // the first difference exact
  constexpr double kC2 = 1.0 / 2, kC3 = 1.0 / 6, kC4 = 1.0 / 24, kC5 = 1.0 / 120, kC6 = 1.0 / 720;
  const double p = r + (r * r) * (kC2 + r * (kC3 + r * (kC4 + r * (kC5 + r * kC6))));
  const double th = kExp2Table[2 * (n & 63)];
  const double y = Ldexp(th + th * p, n >> 6);
  const float f = static_cast<float>(y);
  if (static_cast<float>(y * (1 + 0x1p-40)) != f || static_cast<float>(y * (1 - 0x1p-40)) != f)
    return ExpImpl<float>(x);
  return f;
}

}  // namespace

double Exp(double x) {
  return ExpImpl<double>(x);
}
float Exp(float x) {
  return ExpOfFloat(x);
}
float ExpByDoubleDouble(float x) {
  return ExpImpl<float>(x);
}
double Log(double x) {
  return LogImpl<double>(x);
}
float Log(float x) {
  return LogImpl<float>(x);
}
double Tanh(double x) {
  return TanhImpl<double>(x);
}
float Tanh(float x) {
  return TanhImpl<float>(x);
}
double Erf(double x) {
  return ErfImpl<double>(x);
}
float Erf(float x) {
  return ErfImpl<float>(x);
}
double Sigmoid(double x) {
  return SigmoidImpl<double>(x);
}
float Sigmoid(float x) {
  return SigmoidImpl<float>(x);
}
double Gelu(double x) {
  return GeluImpl<double>(x);
}
float Gelu(float x) {
  return GeluImpl<float>(x);
}
double GeluGrad(double x) {
  return GeluGradImpl<double>(x);
}
float GeluGrad(float x) {
  return GeluGradImpl<float>(x);
}
double Sqrt(double x) {
  return std::sqrt(x);
}
float Sqrt(float x) {
  return std::sqrt(x);
}

}  // namespace scellis::detmath
