// WGSL generation for KernelIR. Every kernel gets a compute shader specialized to its shapes
// (sizes are constants in the source; pipelines are cached by source hash, so a shape seen again
// compiles nothing).
//
// Binding convention, shared with the WebGPU executor: @group(0) @binding(i) for i < inputs is
// `var<storage, read> in<i>: array<f32>` in Kernel::inputs order; the next binding is the output
// `var<storage, read_write> out: array<f32>`. Kernels over more than 65535 workgroups fold their
// grid into two dimensions and recover the linear index from num_workgroups.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "base/result.h"
#include "kernel/module.h"

namespace scellis::kernel::wgsl {

inline constexpr uint32_t kWorkgroupSize = 64;
inline constexpr uint32_t kMaxWorkgroupsPerDim = 65535;

struct Generated {
  std::string source;
  std::array<uint32_t, 3> workgroups = {1, 1, 1};
};

// WGSL for one kernel of `m`.
Result<Generated> Generate(const Module& m, const Kernel& k);

// Grid for `invocations` threads at kWorkgroupSize per group, folded into (x, y) when needed.
std::array<uint32_t, 3> LinearGrid(int64_t invocations);
// Prelude declaring in0..in<n-1> and out, and the linear index `let i` with its bound check.
std::string Bindings(size_t inputs);
std::string LinearEntry(int64_t total);
// WGSL literal for a float/uint.
std::string F32(double v);
std::string U32(int64_t v);

// Families: each returns false when `k` is not one of its ops.
using FamilyGen = bool (*)(const Module& m, const Kernel& k, Generated& out);
bool GenerateElementwise(const Module& m, const Kernel& k, Generated& out);
bool GenerateReduce(const Module& m, const Kernel& k, Generated& out);
bool GenerateLinalg(const Module& m, const Kernel& k, Generated& out);
bool GenerateLayout(const Module& m, const Kernel& k, Generated& out);
bool GenerateStencil(const Module& m, const Kernel& k, Generated& out);
bool GenerateNn(const Module& m, const Kernel& k, Generated& out);
bool GenerateOptim(const Module& m, const Kernel& k, Generated& out);

// A fused elementwise kernel over output elements [base, base + count) only, for tensors larger
// than one storage binding: inputs of the output's shape and the output are bound from `base`
// (indexed by the tile-local `i`), broadcast inputs are bound whole. Generate() is the tile that
// covers everything.
Generated ElementwiseTile(const Module& m, const Kernel& k, int64_t base, int64_t count);

// WGSL expression of an elementwise op applied to operand expressions a (and b); "" if unknown.
std::string ElementwiseExpr(const std::string& op, const std::string& a, const std::string& b);
// Helper functions an op's expression needs (e.g. erf for gelu), "" if none.
std::string ElementwiseHelpers(const std::string& op);

}  // namespace scellis::kernel::wgsl
