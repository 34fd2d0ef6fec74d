// The gradient check of a user op (ops/user_op.h): the reference the definition gives for each
// port's gradient, against central finite differences of the op's own forward reference. Both run
// on the CPU reference in float64, so the check is about the maths of the two references, not
// about rounding; the gradient's WGSL is proved against its reference by the ordinary cases.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conform/runner.h"
#include "kernel/ref/ref.h"
#include "ops/op_table.h"

namespace scellis::conform {

// For an op defined through the API the forward runs in its float64 form (ops::UserReference64)
// and each gradient in its own (or its f32 form, within the thresholds): the same check.
// The step of the central differences, in float64: (f(x + h) - f(x - h)) / 2h errs by about
// h^2 f''' + 1e-16 / h, both far below policy::GradcheckThresholds() for smooth references.
inline constexpr double kGradcheckStep = 1e-6;

// One result per gradient of `spec` (a user op of `table`) and per small shape of the declared
// rank ("softplus/gradcheck_x_r2_4x5"): with fresh inputs and a fresh upstream gradient G drawn
// from `seed`, each element j of the port's gradient reference is compared, within
// policy::GradcheckThresholds(), with (L(x + h e_j) - L(x - h e_j)) / 2h where L(x) = sum(G * f(x))
// and f is the forward reference. A failure names the first mismatching element: got is the
// gradient reference's value, want the finite difference. None when the op gives no gradient.
std::vector<CaseResult> GradcheckUserOp(const ops::OpSpec& spec, const ops::OpTable& table,
                                        uint64_t seed, const kernel::ref::Parallel& parallel);

// The ids of GradcheckUserOp's results for the op named `op` in `table`, in its order; none for an
// op without a gradient. A receipt records them after the group's cases.
std::vector<std::string> GradcheckIds(const std::string& op, const ops::OpTable& table);

}  // namespace scellis::conform
