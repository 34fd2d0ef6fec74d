// Elementwise ops: each output element depends only on the same (broadcast) index of each input,
// so chains of them fuse into one kernel. Their scalar definitions live in
// kernel/ref/elementwise.cpp (CPU) and kernel/wgsl/elementwise.cpp (WGSL).
#include "webir/op_registry.h"

namespace scellis::webir {

void RegisterElementwiseOps(std::vector<OpDef>& r) {
  using policy::ToleranceClass;
  auto binary = [&](const char* name, int version, ToleranceClass tol, const char* summary) {
    r.push_back({.name = name, .min_version = version, .inputs = {"a", "b"}, .attrs = {"scalar"},
                 .kind = OpKind::kElementwise, .infer = InferBroadcast, .tolerance = tol,
                 .determinism = "one correctly rounded operation per element",
                 .summary = summary});
  };
  auto unary = [&](const char* name, int version, ToleranceClass tol, const char* determinism,
                   const char* summary) {
    r.push_back({.name = name, .min_version = version, .inputs = {"a"}, .attrs = {},
                 .kind = OpKind::kElementwise, .infer = InferSameAsFirst, .tolerance = tol,
                 .determinism = determinism, .summary = summary});
  };
  binary("add", 1, ToleranceClass::kExact, "a + b, or a + scalar");
  binary("sub", 1, ToleranceClass::kExact, "a - b, or a - scalar");
  binary("mul", 1, ToleranceClass::kExact, "a * b, or a * scalar");
  binary("div", 2, ToleranceClass::kTight, "a / b (WGSL division is within 2.5 ulp)");
  unary("relu", 1, ToleranceClass::kExact, "exact", "max(a, 0)");
  unary("positive", 1, ToleranceClass::kExact, "exact", "1 where a > 0, else 0");
  unary("neg", 2, ToleranceClass::kExact, "exact", "-a");
  unary("exp", 2, ToleranceClass::kDefault,
        "CPU: own implementation (1 ulp); GPU: the driver's exp", "e^a");
  unary("log", 2, ToleranceClass::kDefault,
        "CPU: own implementation (1 ulp); GPU: the driver's log", "natural logarithm");
  unary("sqrt", 2, ToleranceClass::kTight, "correctly rounded on CPU", "square root");
  unary("tanh", 2, ToleranceClass::kDefault, "CPU: own implementation", "hyperbolic tangent");
  unary("sigmoid", 2, ToleranceClass::kDefault, "CPU: own implementation", "1 / (1 + e^-a)");
  unary("gelu", 2, ToleranceClass::kDefault, "exact erf; CPU: own erf",
        "a * Phi(a), the exact (erf) form");
  binary("gelu_grad", 2, ToleranceClass::kDefault, "gradient of exact gelu: b * gelu'(a)");
}

}  // namespace scellis::webir
