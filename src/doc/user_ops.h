// A document's own ops: the "ops" section (graph protocol version 6, and workflows), read into
// table entries of kind kUser (ops/user_op.h). docs/user_ops.md is the user's side of it.
//
//   "ops": {"stencil5": {
//     "inputs": [{"name": "u", "dtype": "f32", "rank": 2}],   // rank: optional
//     "shape": "u",                  // the output takes this port's shape
//     "dtype": "f32",                // the output's (optional, f32)
//     "tolerance": "tight",          // exact | tight | default | loose (optional, default)
//     "wgsl": "fn stencil5(index: u32) -> f32 { ... }",
//     "reference": {"nodes": [{"id": 0, "op": "input", "name": "u"}, ...], "output": 9}}}
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/determinism.h"
#include "base/json_util.h"
#include "base/result.h"
#include "base/tensor_type.h"
#include "ops/op_table.h"
#include "ops/user_op.h"

namespace scellis::doc {

// The graph-protocol version that introduced the "ops" section.
inline constexpr int kUserOpsVersion = 6;

// Adds an entry to `table` for each op of `section` (the "ops" object), checked as far as the
// document rung can: a name that is not a WGSL identifier (`bad-op-name`) or that the table
// already has (`op-name-taken`), ports (`bad-user-op-inputs`, `bad-port-name`, `bad-rank`), dtypes
// (`unknown-dtype`, and `unsupported-dtype` for the ones user kernels do not take yet), the shape
// rule
// (`bad-shape-rule`), the WGSL (`missing-wgsl`, `user-wgsl-binding`, `user-wgsl-entry-point`,
// `user-wgsl-missing-function`) and the reference's structure (`missing-reference`,
// `bad-reference-input`, and the document rung's own diagnostics for its nodes, e.g. `unknown-op`:
// a reference uses built-in ops only). Whether the reference computes the declared shape is
// checked where shapes are known (WebIR types every use by planning the reference at its shapes).
// Every diagnostic points into the section.
std::vector<Diagnostic> ParseUserOps(const Json& section, ops::OpTable& table);

// Adds an op defined through the API (api/user_ops.h) to `table`: `definition` holds the fields of
// a document's op but "reference" (and a gradient's "wgsl" only, "gradient": {PORT: {"wgsl"}}),
// checked as ParseUserOps checks them; `reference` is the callable the CPU reference runs in its
// place and `gradients` (by port) the gradients' callables. A gradient port without a callable is
// `missing-reference`, a gradient given with no float64 forward `missing-reference-f64`. The
// definition hash covers the signature, the WGSLs and each callable's version (a callable has no
// content to hash).
std::vector<Diagnostic> ParseCallableUserOp(
    const std::string& name, const Json& definition, const ops::UserCallable& reference,
    const std::map<std::string, ops::UserCallable>& gradients, ops::OpTable& table);

// The reference of `user` as a graph-protocol document of built-in ops with one output "out": each
// port's input node given the type in `args` (in port order; with no args, no shapes — enough for
// a structural check).
Json ReferenceDocument(const ops::OpSpec& spec, const std::vector<TensorType>& args,
                       policy::Tier tier = policy::Tier::kDebug);

// A diagnostic about the reference document of `spec` pointed into the op's definition: "/nodes/3"
// becomes "/ops/NAME/reference/nodes/3".
Diagnostic AtReference(const ops::OpSpec& spec, Diagnostic d);

}  // namespace scellis::doc
