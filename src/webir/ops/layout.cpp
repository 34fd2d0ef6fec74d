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
    case DType::kQ4K:  // pad takes no blocks (the ops table)
    case DType::kQ6K:
      fits = false;
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

// concat and stack: every entry of one dtype; the axis (default 0) in range for `rank`, the
// output's rank for stack, written back non-negative.
Result<int> ListAxis(InferContext& c, const char* op, int rank, int entry_rank) {
  const TensorType& first = c.args[0];
  for (size_t i = 1; i < c.args.size(); ++i) {
    if (c.args[i].dtype != first.dtype) {
      return c.ArgError(i, "dtype-mismatch",
                        std::string(op) + "'s entry " + std::to_string(i) + " is " +
                            DTypeName(c.args[i].dtype) + ", entry 0 is " + DTypeName(first.dtype),
                        "convert it with cast{a, dtype}: no op mixes dtypes on its own");
    }
    if (c.args[i].rank() != entry_rank) {
      return c.ArgError(i, "shape-mismatch",
                        std::string(op) + "'s entry " + std::to_string(i) + " is " +
                            c.args[i].ShapeStringWithSizes() + ", of rank " +
                            std::to_string(c.args[i].rank()) + "; entry 0 is " +
                            first.ShapeStringWithSizes(),
                        "every entry has the same rank");
    }
  }
  int64_t axis = 0;
  if (auto it = c.attrs.find("axis"); it != c.attrs.end() && !it->is_null())
    axis = it->get<int64_t>();
  if (axis < -rank || axis >= rank) {
    return c.Error(
        "bad-axis",
        std::string(op) + "'s axis " + std::to_string(axis) + " is out of range for " +
            std::to_string(rank) + (std::string(op) == "stack" ? " axes of output" : " axes"),
        "an axis is in [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
  }
  if (axis < 0) axis += rank;
  c.attrs["axis"] = axis;
  return static_cast<int>(axis);
}

// torch.cat: sizes agree on every axis but `axis`, where they add up.
Result<TensorType> InferConcat(InferContext& c) {
  const TensorType& first = c.args[0];
  if (first.rank() == 0) {
    return c.ArgError(0, "shape-mismatch", "concat's entry 0 is a scalar, which has no axis",
                      "stack scalars instead");
  }
  auto axis = ListAxis(c, "concat", first.rank(), first.rank());
  if (!axis.ok()) return axis.status();
  TensorType out = first;
  int64_t total = 0;
  for (size_t i = 0; i < c.args.size(); ++i) {
    for (int d = 0; d < first.rank(); ++d) {
      if (d != *axis && c.args[i].dims[d].size != first.dims[d].size) {
        return c.ArgError(i, "shape-mismatch",
                          "concat's entry " + std::to_string(i) + " is " +
                              c.args[i].ShapeStringWithSizes() + ", entry 0 is " +
                              first.ShapeStringWithSizes() + ": they differ on axis " +
                              std::to_string(d) + ", not the concat axis " + std::to_string(*axis),
                          "entries agree on every axis but the one they are joined along");
      }
    }
    total += c.args[i].dims[*axis].size;
  }
  out.dims[*axis].size = total;
  if (c.args.size() > 1) out.dims[*axis].symbol = "";
  return out;
}

// torch.stack: equal shapes, a new axis of the list's length inserted at `axis`.
Result<TensorType> InferStack(InferContext& c) {
  const TensorType& first = c.args[0];
  auto axis = ListAxis(c, "stack", first.rank() + 1, first.rank());
  if (!axis.ok()) return axis.status();
  for (size_t i = 1; i < c.args.size(); ++i) {
    if (c.args[i].sizes() != first.sizes()) {
      return c.ArgError(i, "shape-mismatch",
                        "stack's entry " + std::to_string(i) + " is " +
                            c.args[i].ShapeStringWithSizes() + ", entry 0 is " +
                            first.ShapeStringWithSizes(),
                        "stacked entries have the same shape");
    }
  }
  if (first.rank() + 1 > kMaxRank) {
    return c.ArgError(0, "bad-rank",
                      "stack of " + first.ShapeStringWithSizes() + " would have rank " +
                          std::to_string(first.rank() + 1) + ", the largest supported rank is " +
                          std::to_string(kMaxRank));
  }
  TensorType out = first;
  Dim added;
  added.size = static_cast<int64_t>(c.args.size());
  added.symbol = "";
  out.dims.insert(out.dims.begin() + *axis, added);
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

// Entry i's gradient is its slice of the upstream along the axis: for concat the run of its own
// size at its offset, for stack position i of the new axis, reshaped back to the entry's shape.
std::vector<int> GradList(Graph& g, const Node& n, int gout, bool stack) {
  const int axis = n.attrs.at("axis").get<int>();
  const std::vector<int64_t> out_sizes = g.at(n.id).type.sizes();
  std::vector<int> grads;
  int64_t offset = 0;
  for (int a : n.args) {
    const std::vector<int64_t> sizes = g.at(a).type.sizes();
    const int64_t length = stack ? 1 : sizes[axis];
    Json starts = Json::array(), stops = Json::array(), steps = Json::array();
    for (size_t d = 0; d < out_sizes.size(); ++d) {
      const bool along = static_cast<int>(d) == axis;
      starts.push_back(along ? offset : 0);
      stops.push_back(along ? offset + length : out_sizes[d]);
      steps.push_back(1);
    }
    offset += length;
    int part =
        grad::Emit(g, "slice", {gout}, {{"starts", starts}, {"stops", stops}, {"steps", steps}});
    if (stack) {
      Json shape = Json::array();
      for (int64_t s : sizes) shape.push_back(s);
      part = grad::Emit(g, "reshape", {part}, {{"shape", shape}});
    }
    grads.push_back(part);
  }
  return grads;
}

std::vector<int> GradConcat(Graph& g, const Node& n, int gout) {
  return GradList(g, n, gout, false);
}

std::vector<int> GradStack(Graph& g, const Node& n, int gout) {
  return GradList(g, n, gout, true);
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
  r["concat"] = {InferConcat, GradConcat};
  r["stack"] = {InferStack, GradStack};
}

}  // namespace scellis::webir
