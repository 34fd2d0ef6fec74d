// Rung 3: KernelIR. The WebIR graph partitioned into kernels: chains of elementwise ops fused into
// one kernel (a chain of N elementwise ops is one kernel, not N), every other op its own kernel.
// Each kernel carries its WGSL source and is executable by the CPU reference, which is the oracle
// it is checked against.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"
#include "webir/graph.h"

namespace scellis::kernel {

enum class KernelKind {
  kElementwise,  // a fused expression over broadcast inputs
  kOp,           // one non-elementwise op
};

// One step of a fused expression. Operands refer to kernel inputs (>= 0: index into
// Kernel::inputs) or to earlier steps (< 0: step -(k+1)).
struct ExprStep {
  std::string op;  // an elementwise op, or "full" (a literal `value`)
  std::vector<int> operands;
  double value = 0;  // for "full"
  int node = -1;     // the WebIR node this step computes
};

inline int StepRef(int step) {
  return -(step + 1);
}
inline bool IsStepRef(int operand) {
  return operand < 0;
}
inline int StepOf(int operand) {
  return -operand - 1;
}

struct Kernel {
  int id = 0;
  std::string name;  // e.g. "k2_fused_mul_relu", "k3_matmul"
  KernelKind kind = KernelKind::kOp;
  std::string op;              // kOp: the op; kElementwise: "fused"
  std::vector<int> nodes;      // WebIR nodes computed here, in order; the last is the output
  std::vector<int> inputs;     // WebIR nodes read from buffers
  int output = -1;             // WebIR node written
  std::vector<ExprStep> expr;  // kElementwise
  // kOp matmul: per input, whether it is read transposed — a rank-2 `transpose` folded into the
  // matmul, whose input is then the transpose's own operand (no kernel, no buffer for it).
  std::vector<bool> transposed;

  // WGSL, generated for the module's determinism tier.
  std::string wgsl;
  std::string entry_point = "main";
  std::string source_hash;  // sha256 of wgsl
  std::array<uint32_t, 3> workgroups = {1, 1, 1};
};

struct Module {
  webir::Graph graph;
  std::vector<Kernel> kernels;
};

Result<Module> FromWebir(const webir::Graph& g);
std::string Print(const Module& m);
// All kernels' WGSL, each under a comment naming the kernel.
std::string PrintWgsl(const Module& m);
Json ToJson(const Module& m);
Status Verify(const Module& m);

}  // namespace scellis::kernel
