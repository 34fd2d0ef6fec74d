#include "base/tensor_type.h"

#include "base/enum_table.h"

namespace scellis {

namespace {
constexpr EnumTable<DType, 7> kDTypes({{{DType::kF32, "f32"},
                                        {DType::kF16, "f16"},
                                        {DType::kI32, "i32"},
                                        {DType::kU32, "u32"},
                                        {DType::kBool, "bool"},
                                        {DType::kQ4K, "q4_k"},
                                        {DType::kQ6K, "q6_k"}}});
}  // namespace

const char* DTypeName(DType t) {
  return kDTypes.Name(t);
}
std::optional<DType> ParseDType(const std::string& s) {
  return kDTypes.Parse(s);
}
std::string DTypeChoices() {
  return kDTypes.Choices();
}

int64_t TensorType::elements() const {
  int64_t n = 1;
  for (const Dim& d : dims) n *= d.size;
  return n;
}

std::optional<int64_t> CheckedElements(const std::vector<int64_t>& sizes) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t s : sizes) {
    if (s < 0) return std::nullopt;
    if (s == 0) {
      empty = true;
      continue;
    }
    if (s > kMaxElements / nonzero) return std::nullopt;
    nonzero *= s;
  }
  return empty ? 0 : nonzero;
}

std::optional<int64_t> CheckedElements(const std::vector<Dim>& dims) {
  std::vector<int64_t> sizes;
  sizes.reserve(dims.size());
  for (const Dim& d : dims) sizes.push_back(d.size);
  return CheckedElements(sizes);
}

std::optional<int64_t> CheckedBytes(const TensorType& t) {
  auto n = CheckedElements(t.dims);
  if (!n) return std::nullopt;
  return StorageBytes(*n, t.dtype);  // at most 2^40 * 4: no overflow
}

std::vector<int64_t> TensorType::sizes() const {
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (const Dim& d : dims) out.push_back(d.size);
  return out;
}

bool TensorType::SameShape(const TensorType& o) const {
  return sizes() == o.sizes();
}

std::string TensorType::ShapeString() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i].symbol.empty() ? std::to_string(dims[i].size) : dims[i].symbol;
  }
  return s + "]";
}

std::string TensorType::ShapeStringWithSizes() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    if (!dims[i].symbol.empty()) s += dims[i].symbol + "=";
    s += std::to_string(dims[i].size);
  }
  return s + "]";
}

TensorType MakeType(const std::vector<int64_t>& sizes, DType dtype) {
  TensorType t;
  t.dtype = dtype;
  for (int64_t s : sizes) t.dims.push_back(Dim{s, ""});
  return t;
}

std::string PositionText(int64_t flat, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    idx[d] = sizes[d] ? flat % sizes[d] : 0;
    flat = sizes[d] ? flat / sizes[d] : 0;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (int i = static_cast<int>(sizes.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * sizes[i + 1];
  return strides;
}

std::optional<std::vector<Dim>> BroadcastDims(const std::vector<Dim>& a,
                                              const std::vector<Dim>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da)
      out[i] = *db;
    else if (!db)
      out[i] = *da;
    else if (da->size == db->size)
      out[i] = da->symbol.empty() ? *db : *da;
    else if (da->size == 1)
      out[i] = *db;
    else if (db->size == 1)
      out[i] = *da;
    else
      return std::nullopt;
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in,
                                      const std::vector<int64_t>& out) {
  std::vector<int64_t> in_strides = RowMajorStrides(in);
  std::vector<int64_t> strides(out.size(), 0);
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    strides[offset + i] = in[i] == 1 && out[offset + i] != 1 ? 0 : in_strides[i];
  return strides;
}

}  // namespace scellis
