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
};

}  // namespace scellis::ops
