// Arrays across the boundary: a caller's CPU array copied once into a host tensor (feeds, uploads,
// a Python reference's result) and a host tensor handed back as a NumPy array that owns its bytes.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <string>
#include <vector>

#include "module_support.h"

namespace nb = nanobind;

namespace scellis::python {
namespace {

std::optional<DType> DTypeOfArray(const nb::dlpack::dtype& t) {
  using Code = nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  if (t.code == static_cast<uint8_t>(Code::Float) && t.bits == 32) return DType::kF32;
  if (t.code == static_cast<uint8_t>(Code::Float) && t.bits == 16) return DType::kF16;
  if (t.code == static_cast<uint8_t>(Code::Int) && t.bits == 32) return DType::kI32;
  if (t.code == static_cast<uint8_t>(Code::UInt) && t.bits == 32) return DType::kU32;
  if (t.code == static_cast<uint8_t>(Code::Bool) && t.bits == 8) return DType::kBool;
  return std::nullopt;
}

// "float64", "int8", ...: the dtype of an array the engine does not store, for the diagnostic.
std::string DTypeText(const nb::dlpack::dtype& t) {
  using Code = nb::dlpack::dtype_code;
  std::string kind = "dlpack code " + std::to_string(t.code) + " of ";
  if (t.code == static_cast<uint8_t>(Code::Int)) kind = "int";
  if (t.code == static_cast<uint8_t>(Code::UInt)) kind = "uint";
  if (t.code == static_cast<uint8_t>(Code::Float)) kind = "float";
  if (t.code == static_cast<uint8_t>(Code::Bool)) kind = "bool";
  if (t.code == static_cast<uint8_t>(Code::Complex)) kind = "complex";
  if (t.code == static_cast<uint8_t>(Code::Bfloat)) kind = "bfloat";
  return kind + std::to_string(t.bits);
}

}  // namespace

// The bytes of a C-contiguous array as a host tensor: one copy out of the caller's buffer (bool
// widened to the engine's 4-byte storage). A dtype the engine has no storage for is a `bad-feed`,
// never a silent conversion.
// Writes the array `value` into `out`, reusing out's storage: a prepared session feeds the same
// shapes step after step, and fresh buffers of a batch's size would be page-faulted in each time.
void ToHostInto(const std::string& what, const nb::handle& value, HostTensor& out) {
  InArray a;
  if (!nb::try_cast(value, a, /*convert=*/false)) {
    throw EngineError(
        {UserError("bad-feed", "", what + " is not a C-contiguous array in CPU memory",
                   "pass a NumPy array (numpy.ascontiguousarray(value))")});
  }
  std::optional<DType> dtype = DTypeOfArray(a.dtype());
  if (!dtype) {
    throw EngineError({UserError(
        "bad-feed", "",
        what + " has the dtype " + DTypeText(a.dtype()) + ", which the engine does not store",
        "convert it to float32 (or float16, int32, uint32, bool) first")});
  }
  if (a.ndim() > static_cast<size_t>(kMaxRank)) {
    throw EngineError({UserError("bad-feed", "",
                                 what + " has rank " + std::to_string(a.ndim()) + ", at most " +
                                     std::to_string(kMaxRank) + " is supported")});
  }
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < a.ndim(); ++i) sizes.push_back(static_cast<int64_t>(a.shape(i)));
  out.type = MakeType(sizes, *dtype);
  if (*dtype == DType::kBool) {
    out.bytes.resize(static_cast<size_t>(out.type.bytes()));
    const auto* src = static_cast<const uint8_t*>(a.data());
    auto dst = out.view<uint32_t>();
    for (size_t i = 0; i < a.size(); ++i) dst[i] = src[i] ? 1u : 0u;
    return;
  }
  const auto* src = static_cast<const std::byte*>(a.data());
  out.bytes.assign(src, src + out.type.bytes());
}

HostTensor ToHost(const std::string& what, const nb::handle& value) {
  HostTensor t;
  ToHostInto(what, value, t);
  return t;
}

runtime::Feeds ToFeeds(const nb::dict& feeds) {
  runtime::Feeds out;
  for (auto [key, value] : feeds) {
    std::string name = nb::cast<std::string>(key);
    out.emplace(name, ToHost("the feed \"" + name + "\"", value));
  }
  return out;
}

// A NumPy array that owns the host tensor's bytes (moved, not copied); bool is narrowed to
// NumPy's one byte per element.
nb::object ToNumpy(HostTensor t) {
  std::vector<size_t> shape;
  for (int64_t s : t.type.sizes()) shape.push_back(static_cast<size_t>(s));
  if (t.type.dtype == DType::kBool) {
    auto* bools = new std::vector<uint8_t>(static_cast<size_t>(t.elements()));
    auto src = t.view<uint32_t>();
    for (size_t i = 0; i < bools->size(); ++i) (*bools)[i] = src[i] ? 1 : 0;
    nb::capsule owner(bools,
                      [](void* p) noexcept { delete static_cast<std::vector<uint8_t>*>(p); });
    return OutArray(bools->data(), shape.size(), shape.data(), owner, nullptr, nb::dtype<bool>())
        .cast();
  }
  nb::dlpack::dtype dtype;
  switch (t.type.dtype) {
    case DType::kF16:
      dtype = {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
      break;
    case DType::kI32:
      dtype = nb::dtype<int32_t>();
      break;
    case DType::kU32:
      dtype = nb::dtype<uint32_t>();
      break;
    default:
      dtype = nb::dtype<float>();
      break;
  }
  auto* held = new HostTensor(std::move(t));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<HostTensor*>(p); });
  return OutArray(held->bytes.data(), shape.size(), shape.data(), owner, nullptr, dtype).cast();
}

}  // namespace scellis::python
