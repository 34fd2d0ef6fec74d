// Ops whose values come from element positions: arange (each element's index along an axis) and
// butterfly (each element read at its index with some bits flipped, the bitonic partner). Both are
// computed in the kernel that reads them — an index expression, a permuted load — never as a
// buffer of their own unless a non-elementwise op reads them.
#include "webir/autodiff/autodiff.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

Result<TensorType> InferArange(InferContext& c) {
  const Json& shape = c.attrs.at("shape");
  std::vector<int64_t> sizes;
  for (const Json& s : shape) {
    if (!s.is_number_integer() || s.get<int64_t>() < 0)
      return c.Error("bad-attribute",
                     "the shape is " + shape.dump() + ", expected sizes that are integers >= 0");
    sizes.push_back(s.get<int64_t>());
  }
  if (sizes.empty() || static_cast<int>(sizes.size()) > kMaxRank)
    return c.Error("bad-rank", "arange's shape " + shape.dump() + " has rank " +
                                   std::to_string(sizes.size()) + ", expected 1 to " +
                                   std::to_string(kMaxRank) + " (a ramp runs along an axis)");
  if (!CheckedElements(sizes))
    return c.Error("tensor-too-large", "the shape " + shape.dump() + " has more than 2^40 elements");
  if (!c.attrs.contains("axis") || c.attrs["axis"].is_null()) c.attrs["axis"] = 0;
  SCELLIS_ASSIGN_OR_RETURN(int axis, AxisAttr(c, "axis", static_cast<int>(sizes.size())));
  if (!c.attrs.contains("dtype") || c.attrs["dtype"].is_null()) c.attrs["dtype"] = "i32";
  const Json& name = c.attrs["dtype"];
  const std::optional<DType> dtype =
      name.is_string() ? ParseDType(name.get<std::string>()) : std::nullopt;
  if (!dtype || (*dtype != DType::kI32 && *dtype != DType::kU32 && *dtype != DType::kF32))
    return c.Error("bad-dtype", "arange gives i32, u32 or f32, not " + name.dump());
  // Every index must be a value of the dtype (f32 holds every one, rounded past 2^24).
  const int64_t last = sizes[axis] - 1;
  if (*dtype == DType::kI32 && last > int64_t{0x7fffffff})
    return c.Error("bad-attribute",
                   "arange along an axis of " + std::to_string(sizes[axis]) +
                       " elements has indices past i32's 2^31 - 1",
                   "use dtype u32");
  return MakeType(sizes, *dtype);
}

// The first index i of an axis of `size` whose partner i XOR mask lies outside it, or -1 when
// every partner lies inside. Inside exactly when mask is 0 or size is a multiple of 2^(b + 1), b
// the highest set bit of mask: XOR with mask keeps i within its aligned block of 2^(b + 1), and
// a partial last block holds unequal numbers of indices with bit b clear and set, which XOR with
// mask swaps, so one of them has its partner past the end.
int64_t FirstOutsidePartner(int64_t size, int64_t mask) {
  if (mask == 0 || size == 0) return -1;
  int64_t block = 1;
  while (block <= mask) block <<= 1;
  if (size % block == 0) return -1;
  for (int64_t i = size - size % block; i < size; ++i)
    if ((i ^ mask) >= size) return i;
  return -1;  // unreachable, by the counting argument above
}

Result<TensorType> InferButterfly(InferContext& c) {
  const TensorType& a = c.args[0];
  if (a.rank() == 0)
    return c.Error("bad-rank", "butterfly permutes along an axis; the operand is a scalar");
  if (!c.attrs.contains("axis") || c.attrs["axis"].is_null()) c.attrs["axis"] = -1;
  SCELLIS_ASSIGN_OR_RETURN(int axis, AxisAttr(c, "axis", a.rank()));
  const int64_t mask = c.attrs.at("mask").get<int64_t>();
  const std::vector<int64_t> sizes = a.sizes();
  const int64_t size = sizes[axis];
  if (mask < 0)
    return c.Error("butterfly-out-of-range", "butterfly's mask is " + std::to_string(mask) +
                                                 ", expected an integer >= 0");
  if (const int64_t i = FirstOutsidePartner(size, mask); i >= 0)
    return c.Error("butterfly-out-of-range",
                   "butterfly with mask " + std::to_string(mask) + " along axis " +
                       std::to_string(axis) + " of " + a.ShapeStringWithSizes() +
                       " pairs index " + std::to_string(i) + " with " +
                       std::to_string(i ^ mask) + ", past the axis' " + std::to_string(size) +
                       " elements",
                   "the axis' size must be a multiple of the power of 2 above the mask (pad "
                   "the axis to a power of 2)");
  return a;
}

// A permutation that is its own inverse: the gradient moves back by the same butterfly.
std::vector<int> GradButterfly(Graph& g, const Node& n, int gout) {
  return {grad::Emit(g, "butterfly", {gout}, n.attrs)};
}

}  // namespace

void AddPositionRules(RuleSet& r) {
  r["arange"] = {InferArange, nullptr};  // a ramp of indices: nothing to differentiate
  r["butterfly"] = {InferButterfly, GradButterfly};
}

}  // namespace scellis::webir
