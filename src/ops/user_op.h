// An op a document defines for itself (its "ops" section; docs/user_ops.md). Its table entry is an
// ordinary OpSpec of kind kUser — ports with dtypes, a tolerance class — and this is what the
// built-ins keep elsewhere: the shape rule, the user's WGSL, and the reference, a small graph of
// built-in ops that the CPU reference runs and conformance proves the WGSL against.
#pragma once

#include <string>
#include <vector>

#include "base/json_util.h"
#include "base/tensor_type.h"

namespace scellis::ops {

// The rank each input of a user op takes, when its definition declares one (`"rank": 2`).
struct UserPortRank {
  std::string port;
  int rank = 0;
};

struct UserKernel {
  std::string pointer;   // where the document defines it: "/ops/stencil5"
  std::string shape_of;  // the port whose shape the output takes
  DType dtype = DType::kF32;
  std::vector<UserPortRank> ranks;  // the inputs that declare a rank
  // The user's WGSL: `fn NAME(index: u32) -> f32` (one output element by its flat index) and any
  // helpers it calls, reading the ports through the accessors the engine generates.
  std::string wgsl;
  // The reference as written: {"nodes": [graph-protocol nodes of built-in ops, the ports as
  // `input` nodes named after them], "output": the id of the node it computes}.
  Json reference;
  // The definition as written (conformance cases carry it into their documents), and the sha256 of
  // its canonical JSON: what a conformance receipt for the op is about.
  Json definition;
  std::string definition_hash;
  // The gradient the definition gives ("gradient": {PORT: {"wgsl", "reference"}}): per input port
  // it differentiates, the op computing that port's vector-Jacobian product, itself a user op of
  // the same table named NAME_grad_PORT, taking the ports and the upstream gradient `grad`.
  struct Gradient {
    std::string port;
    std::string op;
  };
  std::vector<Gradient> gradients;
  // Set on a gradient's op: the op it differentiates and the port. Its `definition` is that op's
  // whole definition (a conformance case carries it), its hash the definition's and the port's.
  std::string gradient_of;
  std::string gradient_port;
};

// The port a gradient's op takes the upstream gradient at (`grad_at(index)` in its WGSL).
inline constexpr const char* kUpstreamGradientPort = "grad";

// The name of the op computing the gradient of `op` for its input `port`.
inline std::string UserGradientOpName(const std::string& op, const std::string& port) {
  return op + "_grad_" + port;
}

}  // namespace scellis::ops
