#include "webir/op_rules.h"

#include <algorithm>
#include <cmath>

namespace scellis::webir {

Diagnostic InferContext::Error(std::string code, std::string message, std::string help) const {
  Diagnostic d = UserError(std::move(code), pointer, std::move(message), std::move(help));
  d.where = where;
  return d;
}

Diagnostic InferContext::ArgError(size_t i, std::string code, std::string message,
                                  std::string help) const {
  Diagnostic d = Error(std::move(code), std::move(message), std::move(help));
  if (i < arg_pointers.size()) d.pointer = arg_pointers[i];
  return d;
}

namespace {

RuleSet BuildRules() {
  RuleSet r;
  AddElementwiseRules(r);
  AddReduceRules(r);
  AddLinalgRules(r);
  AddLayoutRules(r);
  AddStencilRules(r);
  AddNnRules(r);
  AddOptimRules(r);
  AddRandomRules(r);
  AddIndexRules(r);
  AddPositionRules(r);
  return r;
}

}  // namespace

const OpRule* FindRule(std::string_view op) {
  static const RuleSet rules = BuildRules();
  auto it = rules.find(op);
  return it == rules.end() ? nullptr : &it->second;
}

const OpRule* RuleOf(const ops::OpSpec& spec) {
  return spec.kind == ops::OpKind::kUser ? &UserOpRule() : FindRule(spec.name);
}

Result<TensorType> InferChecked(std::string_view op, const OpRule& rule, InferContext& c) {
  SCELLIS_ASSIGN_OR_RETURN(TensorType t, rule.infer(c));
  if (!CheckedElements(t.dims)) {
    std::string args;
    for (const TensorType& a : c.args)
      args += (args.empty() ? "" : " and ") + a.ShapeStringWithSizes();
    return c.Error("tensor-too-large",
                   std::string(op) + " of " + (args.empty() ? "no inputs" : args) +
                       " gives the shape " + t.ShapeStringWithSizes() +
                       ", more than 2^40 elements (zero-sized dimensions aside)",
                   "no device holds a tensor this large; split the data or stream it");
  }
  return t;
}

bool FitsIntegerDType(double v, DType t) {
  if (t == DType::kI32) return v == std::trunc(v) && v >= -2147483648.0 && v <= 2147483647.0;
  if (t == DType::kU32) return v == std::trunc(v) && v >= 0 && v <= 4294967295.0;
  return true;
}

std::string IntegerRangeText(DType t) {
  return t == DType::kU32 ? "[0, 4294967295]" : "[-2147483648, 2147483647]";
}

Result<TensorType> InferSameAsFirst(InferContext& c) {
  return c.args[0];
}

Result<TensorType> InferBroadcast(InferContext& c) {
  const TensorType& a = c.args[0];
  const TensorType& b = c.args[1];
  if (a.dtype != b.dtype) {
    return c.Error(
        "dtype-mismatch",
        std::string("the inputs are ") + DTypeName(a.dtype) + " and " + DTypeName(b.dtype),
        "convert one with cast{a, dtype}: no op mixes dtypes on its own");
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
