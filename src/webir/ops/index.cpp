// Index ops read and sum at i32 indices: index_select and gather move elements (exact in any
// dtype), index_add and scatter_add, their gradients, add in a fixed order. The range of every
// index is checked before a kernel reads it (CheckKnownIndices here, CheckFedIndices at run time),
// so kernels never meet an index outside its axis.
#include <algorithm>

#include "webir/autodiff/autodiff.h"
#include "webir/graph.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

Diagnostic DtypeMismatch(InferContext& c, const char* op, const TensorType& a,
                         const TensorType& src) {
  return c.Error(
      "dtype-mismatch",
      std::string(op) + "'s a is " + DTypeName(a.dtype) + " and src " + DTypeName(src.dtype),
      "convert one with cast{a, dtype}: no op mixes dtypes on its own");
}

// The axis attribute of an op over `a`, which must have at least one axis.
Result<int> IndexAxis(InferContext& c, const char* op, const TensorType& a) {
  if (a.rank() == 0) {
    return c.Error("bad-rank", std::string(op) + " indexes an axis, and a is a scalar",
                   "reshape a to [1] first");
  }
  SCELLIS_ASSIGN_OR_RETURN(int axis, AxisAttr(c, "axis", a.rank()));
  if (axis < 0) return c.Error("missing-attribute", std::string(op) + " needs \"axis\"");
  return axis;
}

Status RankOneIndex(InferContext& c, const char* op, const TensorType& index) {
  if (index.rank() != 1) {
    return c.Error("bad-rank",
                   std::string(op) + "'s index is " + index.ShapeStringWithSizes() +
                       ", expected a rank-1 list of positions",
                   "reshape a single index to [1]");
  }
  return Status::Ok();
}

// index_select(a, index, axis): a's shape with index's length on `axis`, in a's dtype.
Result<TensorType> InferIndexSelect(InferContext& c) {
  const TensorType& a = c.args[0];
  SCELLIS_ASSIGN_OR_RETURN(int axis, IndexAxis(c, "index_select", a));
  SCELLIS_TRY(RankOneIndex(c, "index_select", c.args[1]));
  TensorType out = a;
  out.dims[axis] = c.args[1].dims[0];
  return out;
}

// No axis of `index` but `axis` may be longer than `of`'s (torch's rule for gather and scatter).
Status IndexFits(InferContext& c, const char* op, const TensorType& index, const TensorType& of,
                 const char* of_name, int axis) {
  if (index.rank() != of.rank()) {
    return c.Error("bad-rank", std::string(op) + "'s index is " + index.ShapeStringWithSizes() +
                                   ", " + of_name + " " + of.ShapeStringWithSizes() +
                                   ": they need the same rank");
  }
  for (int d = 0; d < index.rank(); ++d) {
    if (d != axis && index.dims[d].size > of.dims[d].size) {
      return c.Error("shape-mismatch",
                     std::string(op) + "'s index " + index.ShapeStringWithSizes() +
                         " is longer than " + of_name + " " + of.ShapeStringWithSizes() +
                         " on axis " + std::to_string(d),
                     "only the indexed axis may be longer");
    }
  }
  return Status::Ok();
}

// gather(a, index, axis): index's shape, a's dtype.
Result<TensorType> InferGather(InferContext& c) {
  const TensorType& a = c.args[0];
  SCELLIS_ASSIGN_OR_RETURN(int axis, IndexAxis(c, "gather", a));
  SCELLIS_TRY(IndexFits(c, "gather", c.args[1], a, "a", axis));
  TensorType out = c.args[1];
  out.dtype = a.dtype;
  return out;
}

// index_add(a, index, src, axis): a's type; src is a's shape but index's length on `axis`.
Result<TensorType> InferIndexAdd(InferContext& c) {
  const TensorType& a = c.args[0];
  const TensorType& src = c.args[2];
  if (a.dtype != src.dtype) return DtypeMismatch(c, "index_add", a, src);
  SCELLIS_ASSIGN_OR_RETURN(int axis, IndexAxis(c, "index_add", a));
  SCELLIS_TRY(RankOneIndex(c, "index_add", c.args[1]));
  TensorType want = a;
  want.dims[axis] = c.args[1].dims[0];
  if (!want.SameShape(src)) {
    return c.Error("shape-mismatch", "index_add's src is " + src.ShapeStringWithSizes() +
                                         ", expected " + want.ShapeStringWithSizes() +
                                         " (a's shape with index's length on axis " +
                                         std::to_string(axis) + ")");
  }
  return a;
}

// scatter_add(a, index, src, axis): a's type; index of src's shape.
Result<TensorType> InferScatterAdd(InferContext& c) {
  const TensorType& a = c.args[0];
  const TensorType& index = c.args[1];
  const TensorType& src = c.args[2];
  if (a.dtype != src.dtype) return DtypeMismatch(c, "scatter_add", a, src);
  SCELLIS_ASSIGN_OR_RETURN(int axis, IndexAxis(c, "scatter_add", a));
  SCELLIS_TRY(IndexFits(c, "scatter_add", index, a, "a", axis));
  if (!index.SameShape(src)) {
    return c.Error("shape-mismatch",
                   "scatter_add's index is " + index.ShapeStringWithSizes() + " and src " +
                       src.ShapeStringWithSizes() + ": they need the same shape",
                   "slice src to index's shape first");
  }
  return a;
}

// The gradient of a gathered `a` sums the upstream back to where each element came from.
std::vector<int> GradIndexSelect(Graph& g, const Node& n, int gout) {
  int zeros = grad::Constant(g, 0.0, g.at(n.args[0]).type.sizes());
  return {grad::Emit(g, "index_add", {zeros, n.args[1], gout}, n.attrs), -1};
}

std::vector<int> GradGather(Graph& g, const Node& n, int gout) {
  int zeros = grad::Constant(g, 0.0, g.at(n.args[0]).type.sizes());
  return {grad::Emit(g, "scatter_add", {zeros, n.args[1], gout}, n.attrs), -1};
}

std::vector<int> GradIndexAdd(Graph& g, const Node& n, int gout) {
  return {gout, -1, grad::Emit(g, "index_select", {gout, n.args[1]}, n.attrs)};
}

std::vector<int> GradScatterAdd(Graph& g, const Node& n, int gout) {
  return {gout, -1, grad::Emit(g, "gather", {gout, n.args[1]}, n.attrs)};
}

// The node whose values an index operand holds: through the ops that only rearrange elements
// (every value they give is one of their input's), back to an input or a full. -1 when the
// values are computed on the device (a carried input takes a result of the previous step).
int IndexSource(const Graph& g, int node) {
  while (true) {
    const Node& n = g.at(node);
    if (n.role == Role::kInput) {
      for (const Carry& c : g.carries)
        if (c.to == node) return -1;
      return node;
    }
    if (n.role == Role::kConst) return node;
    static const char* const kRearranging[] = {"transpose", "permute", "reshape", "slice", "flip"};
    if (std::find_if(std::begin(kRearranging), std::end(kRearranging),
                     [&](const char* op) { return n.op == op; }) == std::end(kRearranging))
      return -1;
    node = n.args[0];
  }
}

}  // namespace

bool IsIndexOp(std::string_view op) {
  return op == "index_select" || op == "gather" || op == "index_add" || op == "scatter_add";
}

Result<std::vector<IndexUse>> IndexUses(const Graph& g) {
  std::vector<IndexUse> uses;
  for (const Node& n : g.nodes) {
    if (!IsIndexOp(n.op)) continue;
    IndexUse u;
    u.op = n.id;
    u.source = IndexSource(g, n.args[1]);
    const int axis = n.attrs.at("axis").get<int>();
    u.bound = g.at(n.args[0]).type.dims[axis].size;
    if (u.source < 0) {
      return UserError("index-not-checkable", n.origin,
                       n.op + "'s index %" + g.at(n.args[1]).name +
                           " is computed on the device, so its range cannot be checked before a "
                           "kernel reads it",
                       "give the indices as an input (inline data or fed), optionally "
                       "rearranged by transpose, permute, reshape, slice or flip");
    }
    uses.push_back(u);
  }
  return uses;
}

Status CheckIndexValues(const Graph& g, const IndexUse& use, const HostTensor& values,
                        ErrorKind kind, const std::string& what) {
  const Node& op = g.at(use.op);
  for (int64_t i = 0; i < values.elements(); ++i) {
    const double v = values.ValueAt(i);
    if (v >= 0 && v < static_cast<double>(use.bound)) continue;
    Diagnostic d =
        UserError("index-out-of-range", op.origin,
                  what + " holds " + std::to_string(static_cast<int64_t>(v)) + " at position " +
                      PositionText(i, values.type.sizes()) + ", outside 0 .. " +
                      std::to_string(use.bound - 1) + " (the size of the axis " + op.op +
                      " indexes" + (use.bound == 0 ? ", which is empty" : "") + ")",
                  "indices count from 0; negative indices are refused, as torch.index_select and "
                  "torch.gather refuse them");
    d.kind = kind;
    return d;
  }
  return Status::Ok();
}

Status CheckKnownIndices(const Graph& g) {
  SCELLIS_ASSIGN_OR_RETURN(std::vector<IndexUse> uses, IndexUses(g));
  for (const IndexUse& u : uses) {
    const Node& s = g.at(u.source);
    HostTensor values;
    if (s.role == Role::kConst) {
      values = HostTensor::Zeros(s.type);
      for (int64_t i = 0; i < s.type.elements(); ++i)
        values.SetValue(i, s.attrs["value"].get<double>());
    } else if (s.data) {
      values = HostTensor::FromValues(s.type, *s.data);
    } else {
      continue;  // fed: checked before each step that reads it
    }
    const std::string what =
        s.role == Role::kConst ? "the full %" + s.name : "the data of " + s.Describe();
    SCELLIS_TRY(CheckIndexValues(g, u, values, ErrorKind::kUser, what));
  }
  return Status::Ok();
}

void AddIndexRules(RuleSet& r) {
  r["index_select"] = {InferIndexSelect, GradIndexSelect};
  r["gather"] = {InferGather, GradGather};
  r["index_add"] = {InferIndexAdd, GradIndexAdd};
  r["scatter_add"] = {InferScatterAdd, GradScatterAdd};
}

}  // namespace scellis::webir
