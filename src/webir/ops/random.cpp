// Counter-hash ops: uniform and dropout. Their values are a pure function of (seed, step,
// element index) — the hash is stated in ops/builtin.cpp and implemented in base/random.h (CPU)
// and kernel/emit/wgsl/random.cpp — so they are never fused into an elementwise chain, whose
// element index is that of the chain's output.
#include "webir/autodiff/autodiff.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

// The step input is a scalar; the seed an integer in [0, 2^32).
Status CheckStepAndSeed(InferContext& c, const TensorType& step) {
  if (step.rank() != 0) {
    return c.Error("bad-rank", "the step input is " + step.ShapeStringWithSizes() +
                                   ", expected a scalar step number (shape [])");
  }
  auto it = c.attrs.find("seed");
  if (it != c.attrs.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 ||
        it->get<int64_t>() > int64_t{0xffffffff}) {
      return c.Error("bad-attribute",
                     "the seed is " + it->dump() + ", expected an integer in [0, 2^32)");
    }
  }
  return Status::Ok();
}

// Element indices are u32 in the hash: a stream holds at most 2^32 elements.
Status CheckIndexable(InferContext& c, const TensorType& t) {
  if (t.elements() > int64_t{0xffffffff}) {
    return c.Error("tensor-too-large",
                   "a random stream of " + t.ShapeStringWithSizes() +
                       " has more than 2^32 - 1 elements; the hash counts elements in u32",
                   "draw several smaller tensors, each with its own seed");
  }
  return Status::Ok();
}

// Absent attributes take the table's defaults here, so every kernel reads one value.
void FillDefaults(InferContext& c, const char* op) {
  const ops::OpSpec* spec = ops::BuiltinOps()->Find(op);
  for (const ops::Attr& a : spec->attrs) {
    auto it = c.attrs.find(a.name);
    if ((it == c.attrs.end() || it->is_null()) && !a.default_value.is_null())
      c.attrs[a.name] = a.default_value;
  }
}

Result<TensorType> InferUniform(InferContext& c) {
  FillDefaults(c, "uniform");
  SCELLIS_TRY(CheckStepAndSeed(c, c.args[0]));
  auto it = c.attrs.find("shape");
  std::vector<int64_t> sizes;
  if (it != c.attrs.end() && it->is_array()) {
    for (const Json& s : *it) {
      if (!s.is_number_integer() || s.get<int64_t>() < 0) {
        return c.Error("bad-attribute",
                       "the shape is " + it->dump() + ", expected sizes that are integers >= 0");
      }
      sizes.push_back(s.get<int64_t>());
    }
  }
  if (static_cast<int>(sizes.size()) > kMaxRank) {
    return c.Error("bad-rank", "the shape " + it->dump() + " has more than " +
                                   std::to_string(kMaxRank) + " dimensions");
  }
  if (!CheckedElements(sizes)) {
    return c.Error("tensor-too-large", "the shape " + it->dump() + " has more than 2^40 elements");
  }
  TensorType t = MakeType(sizes);
  SCELLIS_TRY(CheckIndexable(c, t));
  return t;
}

Result<TensorType> InferDropout(InferContext& c) {
  FillDefaults(c, "dropout");
  SCELLIS_TRY(CheckStepAndSeed(c, c.args[1]));
  SCELLIS_TRY(CheckIndexable(c, c.args[0]));
  return c.args[0];
}

// The same mask times the same scale: dropout of the upstream gradient with the node's seed, step
// and p, which recomputes the mask bit for bit.
std::vector<int> GradDropout(Graph& g, const Node& n, int gout) {
  return {grad::Emit(g, "dropout", {gout, n.args[1]}, n.attrs), -1};
}

}  // namespace

void AddRandomRules(RuleSet& r) {
  r["uniform"] = {InferUniform, nullptr};  // a source of values: nothing to differentiate
  r["dropout"] = {InferDropout, GradDropout};
}

}  // namespace scellis::webir
