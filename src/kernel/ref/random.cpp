// The CPU reference of the counter-hash ops, on the hash of base/random.h. Every value is made in
// integers and converted exactly, so the bits match every WGSL device's.
#include "base/random.h"

#include <algorithm>
#include <cmath>

#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {
namespace {

template <typename T>
void Uniform(const OpArgs<T>& a) {
  const uint32_t seed = RandomSeed(*a.node), step = StepNumber(static_cast<double>(a.inputs[0][0]));
  SetEachOutput(a, [&](int64_t i) {
    return static_cast<T>(StreamUniform(seed, step, static_cast<uint32_t>(i)));
  });
}

template <typename T>
void Dropout(const OpArgs<T>& a) {
  const uint32_t seed = RandomSeed(*a.node), step = StepNumber(static_cast<double>(a.inputs[1][0]));
  const double p = a.node->attrs.value("p", 0.5);
  const uint32_t threshold = DropoutThreshold(p);
  // The scale as torch's f32 dropout applies it: 1 / (1 - p) rounded to f32 once.
  const T scale = static_cast<T>(static_cast<float>(1.0 / (1.0 - p)));
  const T* x = a.inputs[0];
  SetEachOutput(a, [&](int64_t i) {
    const bool keep = (StreamBits(seed, step, static_cast<uint32_t>(i)) >> 8) >= threshold;
    return x[i] * (keep ? scale : T(0));
  });
}

}  // namespace

uint32_t RandomSeed(const webir::Node& n) {
  auto it = n.attrs.find("seed");
  return it == n.attrs.end() || it->is_null() ? 0u : static_cast<uint32_t>(it->get<int64_t>());
}

uint32_t DropoutThreshold(double p) {
  return static_cast<uint32_t>(std::ceil(p * 16777216.0));
}

void AddRandomOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"uniform", {Uniform<float>, Uniform<double>}});
  t.push_back({"dropout", {Dropout<float>, Dropout<double>}});
}

}  // namespace scellis::kernel::ref
