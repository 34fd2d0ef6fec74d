// Refuses, before anything is dispatched, a plan whose declared numeric guarantees its target
// cannot keep: `"tolerance": "exact"` over kernels a GPU computes only approximately, or
// bit-exactness across devices from a backend whose bits depend on the driver. The CPU reference
// keeps both: it is exact by definition and the same code on every machine.
#pragma once

#include "base/result.h"
#include "execplan/plan.h"

namespace scellis::execplan {

Status CheckGuarantees(const Plan& plan);

}  // namespace scellis::execplan
