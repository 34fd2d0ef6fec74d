// Deterministic transcendental functions for the CPU reference backend.
//
// The reference backend is the oracle every other backend is checked against, so its results
// must be the same bits on every machine, compiler and C library. The C library's exp/log/tanh/erf
// differ between versions and vendors, so they are never called here: every function below is
// built from IEEE-754 +, -, *, / (each correctly rounded, hence identical everywhere), exact
// bit manipulation, and constants written out as hexadecimal literals. Nothing relies on FMA
// (the build disables contraction) and the evaluation order is fixed by the source.
//
// Internally each function carries its result as a double-double (about 2^-66 relative) and
// rounds once, at the end, to the requested format; a float overload therefore gives the float
// nearest to the true value except when that value lies within ~2^-66 of a rounding boundary.
//
// Accuracy, measured against long double references on 22 million seeded points (the unit
// test's ranges with 20 times its 1.1 million points), in units in the last place of the result:
//
//   function   float    double
//   Exp        0.500    0.500
//   Log        0.500    0.500
//   Tanh       0.500    0.512
//   Erf        0.500    0.519
//   Sigmoid    0.500    0.501
//   Gelu       0.500    0.572
//   GeluGrad   0.500    0.537
//
// An error of 0.500 means correctly rounded on every point tested. GeluGrad keeps this relative
// accuracy right up to its root. The tests assert 0.51 ulp for float and 0.75 for double.
//
// Special values follow the C library's conventions: NaN in gives NaN out, signed zeros are kept
// where the function is odd, overflow gives infinity and underflow rounds through the subnormals
// to zero.
#pragma once

namespace scellis::detmath {

// e^x.
double Exp(double x);
float Exp(float x);
// The float e^x from the double-double path alone: Exp(float) takes a plain double's shortcut
// wherever that gives the same float (tests compare the two).
float ExpByDoubleDouble(float x);

// Natural logarithm; NaN for x < 0, -inf for +-0.
double Log(double x);
float Log(float x);

// Hyperbolic tangent.
double Tanh(double x);
float Tanh(float x);

// Error function, erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt.
double Erf(double x);
float Erf(float x);

// Logistic function 1 / (1 + e^-x), without overflow or cancellation for large |x|: for very
// negative x it follows e^x down through the subnormals.
double Sigmoid(double x);
float Sigmoid(float x);

// Exact GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))). For negative x it is computed from the
// complementary error function with x^2/2 carried exactly, so the tail (which underflows near
// x = -38.6) keeps full relative accuracy instead of cancelling.
double Gelu(double x);
float Gelu(float x);

// Derivative of the exact GELU, Phi(x) + x phi(x) with phi the standard normal density. It has a
// root near x = -0.7518; around it the function is evaluated as (x - root) times a smooth
// factor, so the relative accuracy holds there too.
double GeluGrad(double x);
float GeluGrad(float x);

// Square root. IEEE-754 requires it to be correctly rounded, so the standard one is used.
double Sqrt(double x);
float Sqrt(float x);

}  // namespace scellis::detmath
