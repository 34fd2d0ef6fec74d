// The op specification table, below every rung: what each op is called, since which graph-protocol
// version it exists, its ports and attributes, its kind, whether it is differentiable, its
// tolerance class and what makes its bits trustworthy. The document parser reads ports from it,
// WebIR checks attributes against it and pairs each entry with its shape and gradient rule
// (webir/ops/<family>.cpp), the kernel rungs pair it with a CPU reference and a WGSL kernel, and
// docs/ops.md is generated from it.
//
// The table is a value: the built-in one is shared read-only, and a session that brings its own
// ops copies it and adds them. It travels down the ladder with the compile options.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/determinism.h"
#include "base/json_util.h"
#include "base/result.h"
#include "base/tensor_type.h"

namespace scellis::ops {

struct UserKernel;

enum class OpKind {
  kSource,       // input, param, full
  kElementwise,  // one output element from the same index of each (broadcast) input; fusable
  kReduce,       // sum, mean
  kMatmul,
  kLayout,     // transpose, permute, reshape
  kStencil,    // life
  kNormalize,  // softmax, log_softmax
  kLoss,       // cross_entropy and its gradient
  kOptimizer,  // sgd/momentum/adam updates
  kRandom,     // uniform, dropout: counter-hash streams of (seed, step, element index)
  // shift, butterfly: each output element reads its operand at another element's index (a fixed
  // offset with a declared boundary; the index with bits flipped); fused into an elementwise
  // kernel as a permuted load of a buffer.
  kNeighbour,
  kIndex,      // index_select, gather, index_add, scatter_add: reads and sums at i32 indices
  // arange: each element is its own index along an axis; computed in the kernel that reads it
  // (an index expression, no buffer), like a constant.
  kPosition,
  // An op a document defines (ops/user_op.h): its WGSL is the user's, its CPU reference a graph of
  // built-in ops. Never fused: one kernel per node.
  kUser,
};
const char* OpKindName(OpKind k);

// What an input port carries; the parser treats every port alike (a node id, or a list of them
// for a list port), readers of the table and its documentation need the difference.
enum class PortRole {
  kOperand,   // a value the op computes with
  kLabels,    // class indices stored as f32
  kGradient,  // an upstream gradient or the gradient being applied
  kState,     // optimizer state carried between steps
  kStep,      // the 1-based step number, a scalar
  kIndex,     // i32 indices into an axis of an operand, range-checked before any kernel reads them
};
const char* PortRoleName(PortRole r);

struct Port {
  Port(std::string name, PortRole role = PortRole::kOperand,
       std::vector<DType> dtypes = {DType::kF32}, bool list = false)
      : name(std::move(name)), role(role), dtypes(std::move(dtypes)), list(list) {}
  std::string name;
  PortRole role;
  std::vector<DType> dtypes;
  // A list port takes a non-empty list of node ids (`"inputs": [3, 4, 5]`; a workflow wires it
  // once per entry, in wire order) and binds them as consecutive arguments in list order. An op
  // has at most one, as its last port, so every other argument keeps its place.
  bool list = false;
};

enum class AttrType {
  kInt,     // an integer (an axis: negative counts from the end)
  kNumber,  // any finite JSON number
  kBool,
  kString,
  kIntList,  // an array of integers
  kBounds,   // an array of integers or nulls (slice bounds: null is the end the step runs to)
  kPairs,    // an array of [integer, integer] pairs (pad's [before, after] per axis)
  kShape,    // an array of sizes: integers or symbolic dimension names
  kNumbers,  // a flat array of numbers
  kObject,
};
const char* AttrTypeName(AttrType t);

// The values a number attribute accepts: an interval, each end open or closed. Held by the table
// so every reader of the attribute (a graph node, a train section's optimizer) accepts the same.
struct NumberRange {
  double low, high;
  bool low_open = false, high_open = false;
  bool Contains(double v) const;
  std::string Text() const;  // "(0, 1e+30]"
};

struct Attr {
  Attr(std::string name, AttrType type, Json default_value = nullptr, bool required = false,
       std::optional<NumberRange> range = std::nullopt, bool as_operand = false, double absent = 0)
      : name(std::move(name)),
        type(type),
        default_value(std::move(default_value)),
        required(required),
        range(range),
        as_operand(as_operand),
        absent(absent) {}
  std::string name;
  AttrType type;
  Json default_value;  // null: none (absent means "not given", see the op's summary)
  bool required;
  std::optional<NumberRange> range;  // kNumber only: the accepted values
  // kNumber only: the value reaches the kernels as an argument, a rank-0 f32 constant appended
  // after the op's ports in attribute order (clamp's bounds, masked_fill's value), so kernels
  // compute with operands alone and never read attributes. `absent` stands in for a value not
  // given (clamp's missing bound is an infinity, which bounds nothing).
  bool as_operand = false;
  double absent = 0;
};

struct OpSpec {
  std::string name;
  int min_version = 1;
  std::vector<Port> ports;  // in argument order
  std::vector<Attr> attrs;
  OpKind kind = OpKind::kElementwise;
  bool differentiable = false;
  policy::ToleranceClass tolerance = policy::ToleranceClass::kTight;
  std::string determinism;  // reduction order, atomics: what a reader needs to trust the bits
  std::string summary;
  // What NaN and ±inf inputs give, on every backend: PyTorch's semantics for the op.
  std::string nan;
  // Set for an op of kind kUser only: the definition the document gave (its WGSL, its reference).
  std::shared_ptr<const UserKernel> user;

  const Port* FindPort(std::string_view port) const;
  const Attr* FindAttr(std::string_view attr) const;
  // The arguments its WebIR node and kernels take: the ports, then the operand attributes (a
  // list port counted once).
  size_t Arity() const;
  // Whether a node of this op may have `args` arguments: Arity() exactly, or with a list port
  // any count that gives the list at least one entry.
  bool ArityFits(size_t args) const;
  // The op's list port, or nullptr.
  const Port* ListPort() const;
};

class OpTable {
 public:
  // Adds an op; false when one of that name is already there (the table keeps the first).
  bool Add(OpSpec spec);
  const OpSpec* Find(std::string_view name) const;
  const std::vector<OpSpec>& ops() const { return ops_; }
  // Whether some op of the table has an input port of this name.
  bool IsPortName(std::string_view port) const;
  // "add, sub, ..." for the ops available at graph-protocol `version`, sources excluded.
  std::string NamesUpTo(int version) const;

 private:
  std::vector<OpSpec> ops_;
};

// The ops this build implements, on every rung. Shared and immutable: copy it to extend it.
const std::shared_ptr<const OpTable>& BuiltinOps();

// Checks `attrs` against the op's declared attributes: an unknown name is `unknown-attribute`, a
// value of the wrong type or outside its range `bad-attribute`, a required one missing
// `missing-attribute`. A null value counts as not given. `pointer_of` gives the JSON pointer of an
// attribute; `node_pointer` and `where` locate the node for a missing one.
std::vector<Diagnostic> CheckAttributes(
    const OpSpec& spec, const Json& attrs, const std::string& node_pointer,
    const std::function<std::string(const std::string&)>& pointer_of, const std::string& where);

// docs/ops.md: one section per op, generated so the reference cannot drift from the table.
std::string ToMarkdown(const OpTable& table);

// One entry as JSON, for front ends that draw a palette or form from the table:
//   {"name", "family" (the kind), "min_version", "summary", "inputs": [{"name", "role",
//    "dtypes", "list"}], "attrs": [{"name", "type", "default", "required", "range"}], "outputs":
//    [{"name": "out"}], "differentiable", "tolerance", "determinism", "nan"}
// `range` is {"low", "high", "low_open", "high_open", "text"} or null.
Json ToJson(const OpSpec& spec);
// The table as JSON: {"ops": [the computing ops], "node_types": [the sources: input, param,
// full]}, each entry in the form above, in table order. Block types a document format adds
// outside the table (a workflow's dataset) are added by the document rung (doc::PaletteJson).
Json ToJson(const OpTable& table);

}  // namespace scellis::ops
