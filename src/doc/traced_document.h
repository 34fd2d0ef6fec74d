// A traced function made into its document, its loop rolled up: a front end that traces a plain
// function (Python's scellis.pipeline, the browser runtime's createPipeline) records an ordinary
// `for` loop as every copy of its body.
// The longest stretch of nodes that is one body repeated — each copy reading the previous copy's
// values where the first read the loop's starting values — becomes the document's graph with
// `repeat` set to the number of copies. Every copy is checked node by node and port by port
// against the first, so the roll-up is exact. The front ends hand the engine their trace and take
// the document it makes (TracedDocument); neither holds the algorithm.
//
// A trace is graph-protocol nodes in order, each reading earlier nodes by their place in the list:
//
//   {"nodes": [{"id": 0, "op": "input", "name": "u", ...}, {"id": 1, "op": "mul", "a": 0, ...}],
//    "outputs": [7],                     // the nodes the function returns
//    "ports": {"stencil5": ["u"]}}       // the input ports of ops outside the table (user ops)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"
#include "ops/op_table.h"

namespace scellis::doc {

// One read of a node: its port `port`, or entry `index` of its list port `port` (concat's inputs).
struct PortSlot {
  std::string port;
  int64_t index = -1;  // -1: a single-node port
  bool operator==(const PortSlot&) const = default;
};

// The loop a trace repeats: its body is nodes [start, start + length) (the first copy), run
// `count` times. `carry` pairs a node before the loop that the first copy reads as state with the
// body node whose previous value the later copies read instead, in the order the first copy first
// reads them; `carried` lists the first copy's reads (node, slot) that are state. The first copy's
// other reads of nodes before the loop are loop-invariant.
struct TracedLoop {
  int64_t start = 0, length = 0, count = 0;
  std::vector<std::pair<int64_t, int64_t>> carry;
  std::vector<std::pair<int64_t, PortSlot>> carried;
};

// The longest stretch of the trace that is one body repeated at least twice, and whose copies but
// the last are read by nothing after it (nor returned); nullopt when there is none. Candidates come
// from runs of nodes with equal ops and attributes at a distance L (the body's length), longest
// first; each is verified exactly. A trace that is not the shape above is `bad-trace`, pointed at
// the offending node or port; an op neither in `table` nor in "ports" is `unknown-op`.
Result<std::optional<TracedLoop>> FindTracedLoop(const Json& trace,
                                                 const ops::OpTable& table = *ops::BuiltinOps());

// {"start", "length", "count", "carry": [[before, after], ...], "carried": [[node, port] or
// [node, port, index], ...]}, or null: what the front ends read.
Json ToJson(const std::optional<TracedLoop>& loop);

// A finished trace made into its document: the nodes before the loop, the loop's first copy (its
// reads of state pointed at carried params) and the nodes after it (their reads of the last copy
// pointed at the first), with "repeat" the loop's count and protocol version 5 at least; with no
// loop, the trace as it is. The trace is the roll-up's, with what the document needs besides:
//
//   {"nodes": [...], "ports": {...},
//    "returns": [["out", 7], ...],         // the function's results, named, in order
//    "types": [[[12, 10], "f32"], ...],    // each node's shape (null: not known) and dtype
//    "needs": [1, 5, ...],                 // each node's lowest protocol version
//    "inputs": ["u", "q"],                 // the input nodes that are the call's tensor arguments
//    "name": "jacobi",                     // the document's name (optional)
//    "loop": {...}}                        // a loop traced once (as ToJson writes one; without
//                                          // "carried", the body's reads of the nodes in "carry"),
//                                          // else the roll-up's (FindTracedLoop)
//
// The answer: {"doc", "repeat", "fed": {document input: argument, fed every call}, "state":
// {carried param: argument, its value at each call's start}, "prologue": null, or {"doc",
// "inputs", "outputs"} for a loop starting from values computed before it (an accumulator
// started at zero): a document of their own, its nodes under their places in the trace, whose
// outputs are the carried params' starting values}. A carried value of unknown shape is
// `unknown-shape`; a trace not of this shape `bad-trace`.
Result<Json> TracedDocument(const Json& trace, const ops::OpTable& table = *ops::BuiltinOps());

}  // namespace scellis::doc
