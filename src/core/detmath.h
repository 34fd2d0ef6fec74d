#pragma once
// TEMPORARY (not committed)
#include <cmath>
namespace scellis::detmath {
template <class T> T Exp(T x) { return std::exp(x); }
template <class T> T Log(T x) { return std::log(x); }
template <class T> T Sqrt(T x) { return std::sqrt(x); }
template <class T> T Tanh(T x) { return std::tanh(x); }
template <class T> T Erf(T x) { return std::erf(x); }
template <class T> T Sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }
template <class T> T Gelu(T x) { return T(0.5) * x * (T(1) + std::erf(x / std::sqrt(T(2)))); }
template <class T> T GeluGrad(T x) { return T(0.5) * (T(1) + std::erf(x / std::sqrt(T(2)))) + x * std::exp(-x*x/T(2)) / std::sqrt(T(2*M_PI)); }
}
