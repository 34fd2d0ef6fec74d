// User ops defined through the API (docs/user_ops.md): the signature and WGSL a document's "ops"
// section would hold, with the reference given as a callable instead of a graph of built-in ops.
// The ops go into a table that a run or a conformance call is given —
// RunOptions::compile.lower.ops, ConformOptions::ops, Session::Prepare's compile options — so no
// registry is global: two callers may define ops of one name differently without meeting.
//
//   api::UserOpDefinition jacobi{
//       .name = "jacobi5",
//       .signature = {{"inputs", {{{"name", "u"}, {"rank", 2}}}}, {"shape", "u"},
//                     {"tolerance", "tight"}, {"wgsl", "fn jacobi5(index: u32) -> f32 {...}"}},
//       .reference = [](std::span<const HostTensor> in) -> Result<HostTensor> { ... },
//       .reference_version = "1"};
//   SCELLIS_ASSIGN_OR_RETURN(auto table, api::DefineOps({jacobi}));
//   options.compile.lower.ops = table;   // a document may now use {"op": "jacobi5", "u": 0}
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"
#include "ops/op_table.h"
#include "ops/user_op.h"

namespace scellis::api {

// The gradient of an op for one of its inputs (its vector-Jacobian product), as a document's
// "gradient": {PORT: {"wgsl", "reference"}} gives it, with the reference a callable.
struct UserOpGradient {
  // `fn NAME_grad_PORT(index: u32) -> f32`: one element of the gradient for PORT, reading the ports
  // and the upstream gradient through `grad_at(index)` (docs/user_ops.md).
  std::string wgsl;
  // The op's inputs in port order, then the upstream gradient (the output's shape), as f32 host
  // tensors in; the gradient for PORT (PORT's shape) out.
  ops::UserReference reference;
  // Optional: the same function in float64, which the gradient check then runs (otherwise it
  // runs `reference` on f32-rounded inputs, well within its thresholds).
  ops::UserReference64 reference_f64;
  // What the op's receipts name this callable by, as reference_version names the forward's.
  std::string reference_version = "1";
};

struct UserOpDefinition {
  std::string name;
  // "inputs", "shape", "dtype", "tolerance", "wgsl": the fields of a document's op, no "reference".
  Json signature;
  // Runs on the CPU reference in the op's place and is what conformance proves the WGSL against:
  // the op's inputs as f32 host tensors, in port order, in; the output (f32, the declared shape)
  // out. An error it returns or an exception it throws is `user-reference-failed`, another shape
  // `user-reference-shape`.
  ops::UserReference reference;
  // What the op's receipts name for the callable, which has no content to hash: the receipt keys
  // on the signature, the WGSL and this string. Change it when the function's results change.
  std::string reference_version;
  // The forward reference in float64: required when `gradients` is not empty, since the gradient
  // check compares each gradient with central differences of the forward (h = 1e-6), which f32
  // values cannot resolve (`missing-reference-f64` otherwise).
  ops::UserReference64 reference_f64;
  // By input port: the gradients autodiff emits (as ops NAME_grad_PORT) and conformance proves and
  // grad-checks with the op. A port given none is not differentiable.
  std::map<std::string, UserOpGradient> gradients;
};

// `base` (the built-ins by default) with the ops of `definitions` added, each checked as a
// document's op is (diagnostics at "/ops/NAME/..."), e.g. `op-name-taken` for a built-in's name.
Result<std::shared_ptr<const ops::OpTable>> DefineOps(
    const std::vector<UserOpDefinition>& definitions,
    const ops::OpTable& base = *ops::BuiltinOps());

}  // namespace scellis::api
