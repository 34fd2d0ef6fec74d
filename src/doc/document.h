// Rung 0: the document. Two ways in, one structure out:
//
//  * the plain-data graph protocol (`{"version": 1, "nodes": [...], "outputs": [...]}`), whose
//    nodes name their inputs by integer id in fields such as `a` and `b`, and which may declare a
//    determinism tier and tolerance class for the graph and for single nodes;
//  * the workflow document the Studio draws (`{"format": "scellis.workflow/1", ...}`): nodes with a
//    block type and params, wires between named ports, the declared determinism tier and tolerance
//    class, optional budgets and symbolic dims.
//
// This rung checks structure — object shapes, ids, references, cycles, version labels, that a
// graph's ops exist — and puts the nodes in dependency order. What an op computes is known further
// down; every later diagnostic still points here through each node's JSON pointer.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/determinism.h"
#include "base/json_util.h"
#include "base/result.h"
#include "base/tensor_type.h"
#include "ops/op_table.h"

namespace scellis::doc {

enum class Form { kGraph, kWorkflow };

// Newest graph-protocol version this build reads.
inline constexpr int kMaxGraphVersion = 6;
// The graph protocol version that introduced the document-level `repeat`.
inline constexpr int kRepeatVersion = 5;
// The most iterations a `repeat` may ask for.
inline constexpr int64_t kMaxRepeat = int64_t{1} << 30;
inline constexpr const char* kWorkflowFormat = "scellis.workflow/1";
inline constexpr size_t kMaxNodes = 100000;

struct Input {
  std::string port;     // "a", "b", ...
  std::string source;   // id of the producing node
  std::string pointer;  // where the reference is written
};

struct Node {
  std::string id;     // graph ids are written in decimal
  std::string op;     // the op (graph) or block type (workflow)
  std::string label;  // the user's name for it, "" if none
  Json params;        // every other field (graph) or the `params` object (workflow)
  std::vector<Input> inputs;
  std::optional<policy::Tier> tier;                 // a node-level determinism declaration
  std::optional<policy::ToleranceClass> tolerance;  // a node-level tolerance declaration
  std::string pointer;                              // "/nodes/3"

  // `matmul "proj"` or `mul #2`, for diagnostics.
  std::string Describe() const;
};

struct Output {
  std::string name;
  std::string source;
  std::string pointer;
};

struct Document {
  Form form = Form::kGraph;
  int version = 1;  // the graph protocol's version label; 1 for workflows
  std::string name;
  std::vector<Node> nodes;  // dependency order: every node after its inputs
  std::vector<Output> outputs;

  std::optional<policy::Tier> tier;
  std::string tier_pointer;
  bool tier_override = false;  // "determinism": {"tier": ..., "override": true}
  // "determinism": {"tier": ..., "bit_exact_across_devices": true}: the same bits on every backend.
  bool bit_exact_across_devices = false;
  std::optional<policy::ToleranceClass> tolerance;
  std::optional<int64_t> budget_bytes;
  std::map<std::string, int64_t> dims;  // symbolic dimension bindings
  // `"repeat"`: how many times the graph runs per step, carries between (version 5). Null when
  // absent; an integer, or in a workflow the name of one of its dims. Resolved at BlockIR.
  Json repeat;
  Json train;  // the "train" section of a workflow (null when absent); interpreted at BlockIR

  Json source;             // the document as parsed
  std::string content_id;  // sha256 of the canonical form

  const Node* Find(const std::string& id) const;
};

// The block types of the workflow format outside the op table (which holds the sources input,
// param, full and every op): the dataset block, host-side. Described with the op table's own
// types, so a palette treats every block alike; the parser checks a dataset's params against this.
const std::vector<ops::OpSpec>& WorkflowBlockTypes();

// What a document may hold, for a palette: ops::ToJson(ops) with WorkflowBlockTypes() added to
// its "node_types".
Json PaletteJson(const ops::OpTable& ops = *ops::BuiltinOps());

// Parses and structurally validates a document. Every problem found is reported, each with the
// JSON pointer of the offending node. `ops` says which ops exist and which node fields of the graph
// protocol are input ports.
Result<Document> Parse(std::string_view text, const ops::OpTable& ops = *ops::BuiltinOps());

// The rung's JSON form: the canonical document.
Json ToJson(const Document& d);
// The rung's text form.
std::string Print(const Document& d);
// Re-checks the invariants Parse establishes (ids unique, references resolve, order respected).
Status Verify(const Document& d);

}  // namespace scellis::doc
