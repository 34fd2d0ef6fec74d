// Layout ops move elements without arithmetic: their results are exact on every backend.
#include <algorithm>
#include <cmath>
#include <limits>

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

// Reads slice bounds as Python's slice.indices(n) does and writes them back normalized: per axis
// a start inside the axis, the step, and a stop that reads back to the same elements (null where a
// negative step runs past index 0; 0:0 for an empty range). Normalized bounds read back unchanged,
// so a gradient rule that copies them describes the same elements. Returns the sliced type.
Result<TensorType> NormalizeSlice(InferContext& c, const TensorType& a, const char* op) {
  const int rank = a.rank();
  auto list = [&](const char* name, bool required) -> Result<Json> {
    auto it = c.attrs.find(name);
    if (it == c.attrs.end() || it->is_null()) {
      if (required)
        return c.Error("missing-attribute", std::string(op) + " needs \"" + name + "\"");
      Json absent = Json::array();
      for (int d = 0; d < rank; ++d) absent.push_back(nullptr);
      return absent;
    }
    if (!it->is_array() || static_cast<int>(it->size()) != rank) {
      return c.Error(
          "bad-attribute",
          std::string(op) + " \"" + name + "\" is " + it->dump() +
              ": it needs one entry per axis of " + a.ShapeStringWithSizes(),
          "give " + std::to_string(rank) + " entries; a full axis is start 0, stop null");
    }
    return *it;
  };
  auto starts = list("starts", true);
  if (!starts.ok()) return starts.status();
  auto stops = list("stops", false);
  if (!stops.ok()) return stops.status();
  auto steps = list("steps", false);
  if (!steps.ok()) return steps.status();
  Json out_starts = Json::array(), out_stops = Json::array(), out_steps = Json::array();
  TensorType out;
  out.dtype = a.dtype;
  for (int d = 0; d < rank; ++d) {
    const int64_t n = a.dims[d].size;
    const int64_t step = (*steps)[d].is_null() ? 1 : (*steps)[d].get<int64_t>();
    if (step == 0) {
      return c.Error("bad-attribute",
                     std::string(op) + " step of axis " + std::to_string(d) + " is 0",
                     "a step is a non-zero integer; a negative step walks backwards");
    }
    // Python's clamping: with a positive step bounds lie in [0, n], with a negative one in
    // [-1, n - 1], where -1 stands before index 0.
    const int64_t low = step > 0 ? 0 : -1, high = step > 0 ? n : n - 1;
    auto bound = [&](const Json& v, int64_t absent) {
      if (v.is_null()) return absent;
      int64_t b = v.get<int64_t>();
      if (b < 0) b = std::max(b, -n - 1) + n;  // no overflow for the most negative values
      return std::clamp(b, low, high);
    };
    const int64_t start = bound((*starts)[d], step > 0 ? 0 : n - 1);
    const int64_t stop = bound((*stops)[d], step > 0 ? n : -1);
    const int64_t span = step > 0 ? stop - start : start - stop;
    const int64_t abs_step = step > 0 ? step : -step;
    const int64_t count = span <= 0 ? 0 : (span - 1) / abs_step + 1;
    if (count == 0) {
      out_starts.push_back(0);
      out_stops.push_back(0);
    } else {
      out_starts.push_back(start);
      const int64_t end = start + count * step;
      out_stops.push_back(end < 0 ? Json(nullptr) : Json(end));
    }
    out_steps.push_back(step);
    // A symbolic size survives only where the whole axis is kept in order.
    const bool whole = count == n && step == 1;
    out.dims.push_back(Dim{count, whole ? a.dims[d].symbol : ""});
  }
  c.attrs["starts"] = out_starts;
  c.attrs["stops"] = out_stops;
  c.attrs["steps"] = out_steps;
  return out;
}

Result<TensorType> InferSlice(InferContext& c) {
  return NormalizeSlice(c, c.args[0], "slice");
}

Result<TensorType> InferSliceScatter(InferContext& c) {
  const TensorType& a = c.args[0];
  const TensorType& src = c.args[1];
  if (a.dtype != src.dtype) {
    return c.Error("dtype-mismatch",
                   std::string("slice_scatter's a is ") + DTypeName(a.dtype) + " and src " +
                       DTypeName(src.dtype),
                   "convert one with cast{a, dtype}: no op mixes dtypes on its own");
  }
  auto region = NormalizeSlice(c, a, "slice_scatter");
  if (!region.ok()) return region.status();
  if (region->sizes() != src.sizes()) {
    return c.Error("shape-mismatch",
                   "slice_scatter's src is " + src.ShapeStringWithSizes() + ", the slice of " +
                       a.ShapeStringWithSizes() + " it replaces is " +
                       region->ShapeStringWithSizes(),
                   "src must have exactly the shape of a[starts:stops:steps]");
  }
  return a;
}

Result<TensorType> InferFlip(InferContext& c) {
  const TensorType& a = c.args[0];
  auto it = c.attrs.find("axes");
  if (it == c.attrs.end() || !it->is_array()) {
    return c.Error("missing-attribute", "flip needs \"axes\": the axes to reverse");
  }
  std::vector<bool> seen(a.rank(), false);
  for (Json& v : *it) {
    int64_t axis = v.get<int64_t>();
    if (axis < -a.rank() || axis >= a.rank()) {
      return c.Error("bad-axis", "the axis " + std::to_string(axis) + " is out of range for " +
                                     a.ShapeStringWithSizes());
    }
    if (axis < 0) axis += a.rank();
    if (seen[axis]) {
      return c.Error(
          "bad-attribute",
          "flip \"axes\" " + it->dump() + " names axis " + std::to_string(axis) + " twice",
          "name each axis once (as torch.flip)");
    }
    seen[axis] = true;
    v = axis;
  }
  return a;
}

Result<TensorType> InferPad(InferContext& c) {
  const TensorType& a = c.args[0];
  auto it = c.attrs.find("pads");
  if (it == c.attrs.end() || !it->is_array() || static_cast<int>(it->size()) != a.rank()) {
    return c.Error("bad-attribute", "pad needs \"pads\": one [before, after] pair per axis of " +
                                        a.ShapeStringWithSizes());
  }
  TensorType out = a;
  for (int d = 0; d < a.rank(); ++d) {
    const int64_t before = (*it)[d][0].get<int64_t>(), after = (*it)[d][1].get<int64_t>();
    if (before < 0 || after < 0) {
      return c.Error(
          "bad-attribute",
          "pad \"pads\" " + (*it)[d].dump() + " of axis " + std::to_string(d) + " is negative",
          "pads are non-negative; take a part of a tensor with slice");
    }
    if (before > kMaxElements || after > kMaxElements) {
      return c.Error("tensor-too-large",
                     "pad of " + (*it)[d].dump() + " gives more than 2^40 elements");
    }
    out.dims[d].size = a.dims[d].size + before + after;
    if (before || after) out.dims[d].symbol = "";
  }
  double value = 0;
  if (auto v = c.attrs.find("value"); v != c.attrs.end() && !v->is_null()) value = v->get<double>();
  // The value is stored in a's dtype: it must be one that dtype holds.
  bool fits = true;
  switch (a.dtype) {
    case DType::kF32:
      fits = std::fabs(value) <= std::numeric_limits<float>::max();
      break;
    case DType::kF16:
      fits = std::fabs(value) <= 65504.0;
      break;
    case DType::kI32:
      fits = value == std::trunc(value) && value >= -2147483648.0 && value <= 2147483647.0;
      break;
    case DType::kU32:
      fits = value == std::trunc(value) && value >= 0 && value <= 4294967295.0;
      break;
    case DType::kBool:
      fits = value == 0 || value == 1;
      break;
  }
  if (!fits) {
    return c.Error("bad-attribute",
                   "pad \"value\" " + CanonicalJson(Json(value)) + " is not a " +
                       DTypeName(a.dtype) + " value",
                   "give a value a's dtype holds, or cast a first");
  }
  c.attrs["value"] = value;
  return out;
}

std::vector<int> GradSlice(Graph& g, const Node& n, int gout) {
  int zeros = grad::Constant(g, 0.0, g.at(n.args[0]).type.sizes());
  return {grad::Emit(g, "slice_scatter", {zeros, gout}, n.attrs)};
}

// The replaced region takes none of the gradient for `a`; `src` takes exactly that region.
std::vector<int> GradSliceScatter(Graph& g, const Node& n, int gout) {
  int zeros = grad::Constant(g, 0.0, g.at(n.args[1]).type.sizes());
  int ga = grad::Emit(g, "slice_scatter", {gout, zeros}, n.attrs);
  int gsrc = grad::Emit(g, "slice", {gout}, n.attrs);
  return {ga, gsrc};
}

// The upstream gradient of the padded tensor, cut back to a's place in it.
std::vector<int> GradPad(Graph& g, const Node& n, int gout) {
  const std::vector<int64_t> sizes = g.at(n.args[0]).type.sizes();
  Json starts = Json::array(), stops = Json::array(), steps = Json::array();
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t before = n.attrs["pads"][d][0].get<int64_t>();
    starts.push_back(before);
    stops.push_back(before + sizes[d]);
    steps.push_back(1);
  }
  return {grad::Emit(g, "slice", {gout}, {{"starts", starts}, {"stops", stops}, {"steps", steps}})};
}

std::vector<int> GradFlip(Graph& g, const Node& n, int gout) {
  return {grad::Emit(g, "flip", {gout}, n.attrs)};
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
  r["slice"] = {InferSlice, GradSlice};
  r["slice_scatter"] = {InferSliceScatter, GradSliceScatter};
  r["flip"] = {InferFlip, GradFlip};
  r["pad"] = {InferPad, GradPad};
}

}  // namespace scellis::webir
