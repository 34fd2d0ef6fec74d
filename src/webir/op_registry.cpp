#include "webir/op_registry.h"

#include <algorithm>

namespace scellis::webir {

Diagnostic InferContext::Error(std::string code, std::string message, std::string help) const {
  Diagnostic d = UserError(std::move(code), pointer, std::move(message), std::move(help));
  d.where = where;
  return d;
}

namespace {

Result<TensorType> InferSourceUnused(InferContext& c) {
  return c.Error("internal", "source ops are typed by their block");
}

void RegisterSourceOps(std::vector<OpDef>& r) {
  r.push_back({.name = "input",
               .inputs = {},
               .attrs = {"shape", "data", "dtype", "name"},
               .kind = OpKind::kSource,
               .infer = InferSourceUnused,
               .tolerance = policy::ToleranceClass::kExact,
               .determinism = "exact (no arithmetic)",
               .summary = "a tensor given inline or fed per run"});
  r.push_back({.name = "param",
               .inputs = {},
               .attrs = {"shape", "init", "dtype", "name"},
               .kind = OpKind::kSource,
               .infer = InferSourceUnused,
               .tolerance = policy::ToleranceClass::kExact,
               .determinism = "exact (no arithmetic)",
               .summary = "a trainable tensor with a seeded initializer"});
  r.push_back({.name = "full",
               .inputs = {},
               .attrs = {"shape", "value", "dtype", "name"},
               .kind = OpKind::kSource,
               .infer = InferSourceUnused,
               .tolerance = policy::ToleranceClass::kExact,
               .determinism = "exact (no arithmetic)",
               .summary = "a tensor filled with one value"});
}

std::vector<OpDef> BuildRegistry() {
  std::vector<OpDef> r;
  RegisterSourceOps(r);
  RegisterElementwiseOps(r);
  RegisterReduceOps(r);
  RegisterLinalgOps(r);
  RegisterLayoutOps(r);
  RegisterStencilOps(r);
  RegisterNnOps(r);
  RegisterOptimOps(r);
  return r;
}

}  // namespace

const std::vector<OpDef>& Registry() {
  static const std::vector<OpDef> registry = BuildRegistry();
  return registry;
}

const OpDef* FindOp(std::string_view name) {
  for (const OpDef& d : Registry())
    if (d.name == name) return &d;
  return nullptr;
}

Result<TensorType> InferSameAsFirst(InferContext& c) {
  return c.args[0];
}

Result<TensorType> InferBroadcast(InferContext& c) {
  const TensorType& a = c.args[0];
  const TensorType& b = c.args[1];
  if (a.dtype != b.dtype) {
    return c.Error("dtype-mismatch", std::string("the inputs are ") + DTypeName(a.dtype) + " and " +
                                         DTypeName(b.dtype));
  }
  if (a.SameShape(b)) return a;
  auto dims = BroadcastDims(a.dims, b.dims);
  if (!dims) {
    return c.Error("shape-mismatch",
                   "the shapes " + a.ShapeStringWithSizes() + " and " + b.ShapeStringWithSizes() +
                       " do not broadcast",
                   "broadcasting aligns shapes from the right; each pair of sizes must be equal "
                   "or one of them 1");
  }
  // Graph protocol version 1 has only same-shape binary ops (and the scalar form, which arrives
  // here as a rank-0 constant).
  if (c.version < 2 && a.rank() != 0 && b.rank() != 0) {
    return c.Error("op-newer-than-version",
                   "the shapes " + a.ShapeStringWithSizes() + " and " + b.ShapeStringWithSizes() +
                       " differ; broadcasting needs graph protocol version 2, the graph is "
                       "labelled version " +
                       std::to_string(c.version),
                   "label the graph \"version\": 2, or give both inputs the same shape");
  }
  if (!FitsMaxElements(*dims)) {
    return c.Error("tensor-too-large",
                   "broadcasting " + a.ShapeStringWithSizes() + " with " +
                       b.ShapeStringWithSizes() + " gives more than 2^40 elements",
                   "no device holds a tensor this large; split the data or stream it");
  }
  TensorType out;
  out.dtype = a.dtype;
  out.dims = *dims;
  return out;
}

Result<int> AxisAttr(InferContext& c, const char* name, int rank) {
  auto it = c.attrs.find(name);
  if (it == c.attrs.end() || it->is_null()) return -1;
  if (!it->is_number_integer()) {
    return c.Error("bad-attribute", std::string("the attribute \"") + name + "\" is " + it->dump() +
                                        ", expected an integer axis");
  }
  int64_t axis = it->get<int64_t>();
  if (axis < -rank || axis >= rank) {
    return c.Error("bad-axis", "the axis " + std::to_string(axis) + " is out of range for rank " +
                                   std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  *it = axis;
  return static_cast<int>(axis);
}

}  // namespace scellis::webir
