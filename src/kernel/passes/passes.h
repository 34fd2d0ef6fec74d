// The passes of the kernel rung, in the order the pipeline runs them. Each transforms the module in
// place and leaves it verifiable (kernel::Verify).
#pragma once

#include "base/result.h"
#include "kernel/module.h"

namespace scellis::kernel {

// One kernel per computed WebIR node, in graph order: an elementwise node is an elementwise kernel
// of one step, any other op a kernel of its own. Constants nobody reads get no kernel.
Status Partition(Module& m);

// Folds elementwise kernels into their consumer: a node is folded when it is not a named output and
// every reader is elementwise, and it has one reader or is a constant (`full`, copied into every
// reader as a literal). What remains are the roots, each one kernel evaluating its steps in order.
Status FuseElementwise(Module& m);

// A rank-2 transpose read only by rank-2 matmuls costs no kernel: the matmuls read its operand with
// swapped strides (backward passes are full of them: x^T @ g, g @ w^T).
Status FoldTransposes(Module& m);

// Generates every kernel's WGSL (and its dispatch grid) for the module's determinism tier.
Status EmitWgsl(Module& m);

// Temporal blocking of a repeated graph (`"repeat": N`) whose body is one rank-2 stencil kernel
// (a fused expression shifting its carried value, or `life`): a second WGSL source that runs
// several iterations per dispatch over tiles with recomputed halos (Kernel::blocking), as many as
// divide N and fit the halo. Otherwise Module::not_blocked_because says why. Every iteration
// computes what the unblocked kernel computes, bit for bit.
Status BlockTemporally(Module& m);

}  // namespace scellis::kernel
