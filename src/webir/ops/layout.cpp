// Layout ops move elements without arithmetic: their results are exact on every backend.
#include "webir/autodiff/autodiff.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

Result<TensorType> InferTranspose(InferContext& c) {
  const TensorType& a = c.args[0];
  if (a.rank() != 2) {
    return c.Error("bad-rank", "transpose takes a rank-2 tensor, got " + a.ShapeStringWithSizes(),
                   "use permute for other ranks");
  }
  TensorType out = a;
  std::swap(out.dims[0], out.dims[1]);
  return out;
}

Result<TensorType> InferPermute(InferContext& c) {
  const TensorType& a = c.args[0];
  auto it = c.attrs.find("dims");
  if (it == c.attrs.end() || !it->is_array() || static_cast<int>(it->size()) != a.rank()) {
    return c.Error("bad-attribute",
                   "permute needs \"dims\": a permutation of 0.." + std::to_string(a.rank() - 1));
  }
  std::vector<bool> seen(a.rank(), false);
  TensorType out;
  out.dtype = a.dtype;
  for (auto& d : *it) {
    if (!d.is_number_integer()) return c.Error("bad-attribute", "permute dims must be integers");
    int64_t axis = d.get<int64_t>();
    if (axis < 0) axis += a.rank();
    if (axis < 0 || axis >= a.rank() || seen[axis]) {
      return c.Error("bad-attribute", "\"dims\" " + it->dump() + " is not a permutation of 0.." +
                                          std::to_string(a.rank() - 1));
    }
    seen[axis] = true;
    d = axis;
    out.dims.push_back(a.dims[axis]);
  }
  return out;
}

Result<TensorType> InferReshape(InferContext& c) {
  const TensorType& a = c.args[0];
  auto it = c.attrs.find("shape");
  if (it == c.attrs.end() || !it->is_array() || it->size() > static_cast<size_t>(kMaxRank)) {
    return c.Error("bad-attribute", "reshape needs \"shape\": an array of at most 4 sizes");
  }
  TensorType out;
  out.dtype = a.dtype;
  int infer_at = -1;
  std::vector<int64_t> given;  // the sizes other than the -1
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& d = (*it)[i];
    if (!d.is_number_integer() || d.get<int64_t>() < -1) {
      return c.Error("bad-attribute", "reshape sizes are non-negative integers or one -1");
    }
    int64_t s = d.get<int64_t>();
    if (s == -1) {
      if (infer_at >= 0) return c.Error("bad-attribute", "reshape takes at most one -1");
      infer_at = static_cast<int>(i);
    } else {
      given.push_back(s);
    }
    out.dims.push_back(Dim{s, ""});
  }
  auto known = CheckedElements(given);
  if (!known) {
    return c.Error("tensor-too-large",
                   "reshape to " + it->dump() +
                       " asks for more than 2^40 elements (zero-sized "
                       "dimensions aside)",
                   "no device holds a tensor this large; split the data or stream it");
  }
  if (infer_at >= 0) {
    // With a zero among the given sizes, any size fits the -1: refused as PyTorch refuses it.
    if (*known == 0 || a.elements() % *known) {
      return c.Error("shape-mismatch",
                     "cannot reshape " + a.ShapeStringWithSizes() + " to " + it->dump());
    }
    out.dims[infer_at].size = a.elements() / *known;
    (*it)[infer_at] = out.dims[infer_at].size;
  }
  if (out.elements() != a.elements()) {
    return c.Error("shape-mismatch", "cannot reshape " + a.ShapeStringWithSizes() + " (" +
                                         std::to_string(a.elements()) + " elements) to " +
                                         it->dump());
  }
  // Keep the user's symbols where a dimension survives unchanged in place.
  for (int i = 0; i < out.rank() && i < a.rank(); ++i)
    if (out.dims[i].size == a.dims[i].size) out.dims[i].symbol = a.dims[i].symbol;
  return out;
}

std::vector<int> GradTranspose(Graph& g, const Node& n, int gout) {
  return {grad::Emit(g, "transpose", {gout})};
}

// The inverse permutation: out axis i came from input axis dims[i].
std::vector<int> GradPermute(Graph& g, const Node& n, int gout) {
  const Json& dims = n.attrs.at("dims");
  Json inverse = Json::array();
  for (size_t i = 0; i < dims.size(); ++i) inverse.push_back(0);
  for (size_t i = 0; i < dims.size(); ++i) inverse[dims[i].get<size_t>()] = static_cast<int>(i);
  return {grad::Emit(g, "permute", {gout}, {{"dims", inverse}})};
}

std::vector<int> GradReshape(Graph& g, const Node& n, int gout) {
  Json shape = Json::array();
  for (int64_t s : g.at(n.args[0]).type.sizes()) shape.push_back(s);
  return {grad::Emit(g, "reshape", {gout}, {{"shape", shape}})};
}

}  // namespace

void AddLayoutRules(RuleSet& r) {
  r["transpose"] = {InferTranspose, GradTranspose};
  r["permute"] = {InferPermute, GradPermute};
  r["reshape"] = {InferReshape, GradReshape};
}

}  // namespace scellis::webir
