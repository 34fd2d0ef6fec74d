// An op a document defines for itself (its "ops" section; docs/user_ops.md). Its table entry is an
// ordinary OpSpec of kind kUser — ports with dtypes, a tolerance class — and this is what the
// built-ins keep elsewhere: the shape rule, the user's WGSL, and the reference, a small graph of
// built-in ops that the CPU reference runs and conformance proves the WGSL against.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/host_tensor.h"
#include "base/json_util.h"
#include "base/result.h"
#include "base/tensor_type.h"

namespace scellis::ops {

// The rank each input of a user op takes, when its definition declares one (`"rank": 2`).
struct UserPortRank {
  std::string port;
  int rank = 0;
};

// A reference given as a callable through the C++ or Python API (api/user_ops.h) in place of a
// graph of built-in ops: the op's inputs as f32 host tensors, in port order, in; the output out.
// It may be called from any thread, one call at a time per op use.
using UserReference = std::function<Result<HostTensor>(std::span<const HostTensor>)>;

// The same reference in float64, for the gradient check: central differences of a forward
// computed in f32 would measure its rounding, not its slope (HostTensor has no f64 dtype, hence a
// type of its own). Each input's sizes and values (row-major) in, the output's out.
struct Float64Tensor {
  std::vector<int64_t> sizes;
  std::vector<double> values;
};
using UserReference64 = std::function<Result<Float64Tensor>(std::span<const Float64Tensor>)>;

// A callable reference as the API gives it: the f32 form the CPU reference runs, the optional
// float64 form the gradient check runs (the f32 form's results otherwise), and the version string
// a receipt names them by.
struct UserCallable {
  UserReference f32;
  UserReference64 f64;
  std::string version = "1";
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
  // Set for an op defined through the API: the reference as a callable, which the CPU reference
  // runs in the op's place (`reference` is then null). A callable has no content to hash, so the
  // definition names it by `reference_version`, a string its author changes with its behaviour.
  UserReference callable;
  // Its float64 form, when given: what the CPU reference runs when it computes in float64 (the
  // gradient check), in place of `callable` on inputs rounded to f32.
  UserReference64 callable_f64;
  std::string reference_version;
  // The definition as written (conformance cases carry it into their documents), and the sha256 of
  // its canonical JSON: what a conformance receipt for the op is about. For a callable reference,
  // the definition's "reference" is {"callable": reference_version}.
  Json definition;
  std::string definition_hash;
  // The gradient the definition gives ("gradient": {PORT: {"wgsl", "reference"}}, or through the
  // API a WGSL and a callable per port): per input port
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
