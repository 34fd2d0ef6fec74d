#include "store/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "base/atomic_file.h"

namespace scellis::store {
namespace {

using json = nlohmann::json;

// Root object, tensor entry, shape or offsets array: nothing in a valid header nests deeper.
constexpr int kMaxDepth = 3;

// A JSON pointer token: '~' and '/' escaped as RFC 6901 says.
std::string Escape(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// (Built by appending: GCC 12 misreports `"/" + std::string` under -Wrestrict.)
std::string Pointer(std::string_view key) {
  std::string out = "/";
  out += Escape(key);
  return out;
}
std::string Pointer(std::string_view key, std::string_view field) {
  return Pointer(key) + "/" + std::string(field);
}

std::string Quote(std::string_view s) {
  std::string out = "'";
  out += s;
  out += '\'';
  return out;
}

bool ValidUtf8(const std::string& s) {
  try {
    (void)json(s).dump();  // the strict error handler throws on invalid UTF-8
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

// A JSON number that is a non-negative integer.
bool AsIndex(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(v.get<int64_t>());
    return true;
  }
  return false;
}

// Elements times element size, or false if that overflows 64 bits.
bool ByteSize(const std::vector<uint64_t>& dims, int elem, uint64_t* out) {
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) {
    *out = 0;
    return true;
  }
  uint64_t n = static_cast<uint64_t>(elem);
  for (uint64_t d : dims) {
    if (n > std::numeric_limits<uint64_t>::max() / d) return false;
    n *= d;
  }
  *out = n;
  return true;
}

std::string ShapeText(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

constexpr const char* kDtypeHelp = "supported dtypes are F32, F16, F64, I32, U32, I64, U8 and BOOL";

// A tensor entry whose fields have been checked, before the layout check.
struct Entry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin;
  uint64_t end;
};

// Checks one tensor entry of the header; on success appends it to `entries`.
void CheckEntry(const std::string& name, const json& value, uint64_t data_size,
                std::vector<Entry>* entries, std::vector<Diagnostic>* errors) {
  const std::string ptr = Pointer(name);
  auto bad = [&](const char* code, const std::string& p, const std::string& message,
                 const std::string& help = "") {
    errors->push_back(UserError(code, p, message, help));
  };
  if (!value.is_object()) {
    bad("safetensors-bad-entry", ptr, "tensor " + Quote(name) + " is not an object",
        "each tensor maps to {\"dtype\", \"shape\", \"data_offsets\"}");
    return;
  }
  bool fields_ok = true;
  for (const auto& [field, unused] : value.items()) {
    if (field != "dtype" && field != "shape" && field != "data_offsets") {
      bad("safetensors-bad-entry", Pointer(name, Escape(field)),
          "tensor " + Quote(name) + " has an unknown field " + Quote(field));
      fields_ok = false;
    }
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(field)) {
      bad("safetensors-bad-entry", ptr,
          "tensor " + Quote(name) + " has no " + Quote(field) + " field");
      fields_ok = false;
    }
  }
  if (!fields_ok) return;

  const json& dtype = value["dtype"];
  int elem = dtype.is_string() ? SafetensorsDtypeSize(dtype.get_ref<const std::string&>()) : 0;
  if (elem == 0) {
    bad("safetensors-bad-dtype", Pointer(name, "dtype"),
        "tensor " + Quote(name) + " has dtype " + dtype.dump() + ", which is not supported",
        kDtypeHelp);
  }

  const json& shape = value["shape"];
  std::vector<uint64_t> dims;
  bool shape_ok = shape.is_array();
  if (shape_ok) {
    for (const json& d : shape) {
      uint64_t v = 0;
      if (!AsIndex(d, &v) || v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        shape_ok = false;
        break;
      }
      dims.push_back(v);
    }
  }
  if (!shape_ok) {
    bad("safetensors-bad-shape", Pointer(name, "shape"),
        "tensor " + Quote(name) + " has shape " + shape.dump() +
            ", not a list of non-negative integers");
  }
  uint64_t nbytes = 0;
  if (shape_ok && elem != 0 && !ByteSize(dims, elem, &nbytes)) {
    bad("safetensors-bad-shape", Pointer(name, "shape"),
        "tensor " + Quote(name) + " with shape " + ShapeText(dims) + " and dtype " +
            dtype.get<std::string>() + " would take more than 2^64 bytes");
    shape_ok = false;
  }

  const json& offsets = value["data_offsets"];
  uint64_t begin = 0, end = 0;
  if (!offsets.is_array() || offsets.size() != 2 || !AsIndex(offsets[0], &begin) ||
      !AsIndex(offsets[1], &end) || begin > end) {
    bad("safetensors-bad-offsets", Pointer(name, "data_offsets"),
        "tensor " + Quote(name) + " has data_offsets " + offsets.dump() +
            ", not [begin, end] with 0 <= begin <= end");
    return;
  }
  if (end > data_size) {
    bad("safetensors-bad-offsets", Pointer(name, "data_offsets"),
        "tensor " + Quote(name) + " ends at byte " + std::to_string(end) +
            " of a data section of " + std::to_string(data_size) + " bytes");
    return;
  }
  if (elem == 0 || !shape_ok) return;
  if (end - begin != nbytes) {
    bad("safetensors-bad-offsets", Pointer(name, "data_offsets"),
        "tensor " + Quote(name) + " spans " + std::to_string(end - begin) + " bytes but shape " +
            ShapeText(dims) + " of " + dtype.get<std::string>() + " takes " +
            std::to_string(nbytes));
    return;
  }
  entries->push_back(Entry{name, dtype.get<std::string>(),
                           std::vector<int64_t>(dims.begin(), dims.end()), begin, end});
}

}  // namespace

int SafetensorsDtypeSize(std::string_view dtype) {
  if (dtype == "U8" || dtype == "BOOL") return 1;
  if (dtype == "F16") return 2;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F64" || dtype == "I64") return 8;
  return 0;
}

const char* SafetensorsDtypeName(DType t) {
  switch (t) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kI32:
      return "I32";
    case DType::kU32:
      return "U32";
    case DType::kBool:
      return "BOOL";
  }
  return "F32";
}

NamedTensor ToNamedTensor(std::string name, const HostTensor& t) {
  NamedTensor nt{std::move(name), SafetensorsDtypeName(t.type.dtype), t.type.sizes(), {}};
  if (t.type.dtype == DType::kBool) {
    // One byte per element in the file, a 4-byte 0/1 in the engine.
    std::span<const uint32_t> v = t.view<uint32_t>();
    nt.bytes.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) nt.bytes[i] = v[i] != 0 ? '\x01' : '\x00';
    return nt;
  }
  nt.bytes.assign(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return nt;
}

Result<HostTensor> ToHostTensor(const NamedTensor& nt) {
  const std::string pointer = Pointer(nt.name);
  std::optional<DType> dtype;
  for (DType t : {DType::kF32, DType::kF16, DType::kI32, DType::kU32, DType::kBool})
    if (nt.dtype == SafetensorsDtypeName(t)) dtype = t;
  if (!dtype) {
    return UserError("safetensors-bad-dtype", pointer,
                     "tensor " + Quote(nt.name) + " is " + nt.dtype + ", which no engine dtype is",
                     "the engine's dtypes are stored as F32, F16, I32, U32 and BOOL");
  }
  std::optional<int64_t> elements = CheckedElements(nt.shape);
  const int width = SafetensorsDtypeSize(nt.dtype);
  if (!elements || nt.shape.size() > static_cast<size_t>(kMaxRank) ||
      static_cast<uint64_t>(*elements) * static_cast<uint64_t>(width) != nt.bytes.size()) {
    return UserError("safetensors-bad-shape", pointer,
                     "tensor " + Quote(nt.name) + " of shape " +
                         ShapeText(std::vector<uint64_t>(nt.shape.begin(), nt.shape.end())) +
                         " does not fit an engine tensor (rank up to " + std::to_string(kMaxRank) +
                         ", at most 2^40 elements) of its " + std::to_string(nt.bytes.size()) +
                         " bytes");
  }
  HostTensor t = HostTensor::Zeros(MakeType(nt.shape, *dtype));
  if (*dtype != DType::kBool) {
    if (!nt.bytes.empty()) std::memcpy(t.bytes.data(), nt.bytes.data(), nt.bytes.size());
    return t;
  }
  std::span<uint32_t> v = t.view<uint32_t>();
  for (size_t i = 0; i < nt.bytes.size(); ++i) {
    const unsigned char b = static_cast<unsigned char>(nt.bytes[i]);
    if (b > 1) {
      return UserError("safetensors-bad-value", pointer,
                       "tensor " + Quote(nt.name) + " is BOOL and holds the byte " +
                           std::to_string(b) + " at element " + std::to_string(i) +
                           "; a BOOL byte is 0 or 1");
    }
    v[i] = b;
  }
  return t;
}

Status CheckTensors(const std::vector<NamedTensor>& tensors,
                    const std::map<std::string, std::string>& metadata) {
  std::vector<Diagnostic> errors;
  std::set<std::string> seen;
  for (const NamedTensor& t : tensors) {
    const std::string ptr = Pointer(t.name);
    if (t.name.empty() || t.name == "__metadata__" || !ValidUtf8(t.name)) {
      errors.push_back(UserError("safetensors-bad-entry", ptr,
                                 "tensor name " + Quote(t.name) + " cannot be stored",
                                 "names must be non-empty UTF-8 other than \"__metadata__\""));
    }
    if (!seen.insert(t.name).second) {
      errors.push_back(
          UserError("safetensors-duplicate-key", ptr, "two tensors are named " + Quote(t.name)));
    }
    int elem = SafetensorsDtypeSize(t.dtype);
    if (elem == 0) {
      errors.push_back(UserError(
          "safetensors-bad-dtype", Pointer(t.name, "dtype"),
          "tensor " + Quote(t.name) + " has dtype " + Quote(t.dtype) + ", which is not supported",
          kDtypeHelp));
      continue;
    }
    std::vector<uint64_t> dims;
    bool negative = false;
    for (int64_t d : t.shape) {
      negative = negative || d < 0;
      dims.push_back(static_cast<uint64_t>(d));
    }
    uint64_t nbytes = 0;
    if (negative || !ByteSize(dims, elem, &nbytes)) {
      errors.push_back(UserError("safetensors-bad-shape", Pointer(t.name, "shape"),
                                 "tensor " + Quote(t.name) + " has an invalid shape"));
    } else if (nbytes != t.bytes.size()) {
      errors.push_back(UserError("safetensors-bad-shape", Pointer(t.name, "shape"),
                                 "tensor " + Quote(t.name) + " holds " +
                                     std::to_string(t.bytes.size()) + " bytes but shape " +
                                     ShapeText(dims) + " of " + t.dtype + " takes " +
                                     std::to_string(nbytes)));
    }
  }
  for (const auto& [key, value] : metadata) {
    if (!ValidUtf8(key) || !ValidUtf8(value)) {
      errors.push_back(UserError("safetensors-bad-metadata", "/__metadata__/" + Escape(key),
                                 "metadata " + Quote(key) + " is not valid UTF-8"));
    }
  }
  return Status(std::move(errors));
}

std::string EncodeSafetensors(const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  std::vector<const NamedTensor*> sorted;
  for (const NamedTensor& t : tensors) sorted.push_back(&t);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const NamedTensor* a, const NamedTensor* b) { return a->name < b->name; });
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const NamedTensor* t : sorted) {
    uint64_t end = offset + t->bytes.size();
    header[t->name] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += text;
  for (const NamedTensor* t : sorted) out += t->bytes;
  return out;
}

Status SaveSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  SCELLIS_TRY(CheckTensors(tensors, metadata));
  return WriteFileAtomic(path, EncodeSafetensors(tensors, metadata));
}

namespace {

// What a header declares, checked against the size of the data section it describes.
struct Header {
  uint64_t text_bytes = 0;
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
};

// Decodes and checks the header at the start of `head` against `file_size`, the length of the
// whole file: `head` need only hold the length and the header, so a file is judged before its
// data section is read.
Result<Header> DecodeHeader(std::string_view head, uint64_t file_size) {
  if (file_size < 8 || head.size() < 8) {
    return UserError("safetensors-truncated", "",
                     "the file holds " + std::to_string(file_size) +
                         " bytes, fewer than the 8 of the header length");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(head[i]);
  if (n > kSafetensorsMaxHeaderBytes) {
    return UserError("safetensors-header-too-large", "",
                     "the header length is " + std::to_string(n) + " bytes, more than the " +
                         std::to_string(kSafetensorsMaxHeaderBytes) + " allowed",
                     "is this a safetensors file?");
  }
  if (n > file_size - 8 || n > head.size() - 8) {
    return UserError("safetensors-truncated", "",
                     "the header length is " + std::to_string(n) + " bytes but only " +
                         std::to_string(file_size - 8) + " follow");
  }
  std::string_view text = head.substr(8, n);
  const uint64_t data_size = file_size - 8 - n;
  if (text.empty() || text[0] != '{') {
    return UserError("safetensors-bad-header", "", "the header does not start with '{'",
                     "is this a safetensors file?");
  }
  // A raw NUL is never valid JSON, and the JSON library reads it as the end of its input: caught
  // here so that nothing can hide behind one.
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return UserError("safetensors-bad-header", "",
                     "the header holds a NUL byte at offset " + std::to_string(nul),
                     "headers may be padded with spaces only");
  }

  // Parse, catching what the JSON library lets through: duplicate keys (it keeps the last) and
  // deep nesting (which no valid header has, and which is not built, only skipped).
  std::vector<std::set<std::string>> open_objects;
  std::vector<std::string> key_path;
  std::string duplicate;  // pointer to the first duplicate key
  bool too_deep = false;
  json::parser_callback_t callback = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxDepth) {
          too_deep = true;
          return false;
        }
        if (event == json::parse_event_t::object_start) open_objects.emplace_back();
        return true;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        return true;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (open_objects.empty()) return true;
        key_path.resize(open_objects.size());
        key_path.back() = key;
        if (!open_objects.back().insert(key).second && duplicate.empty()) {
          for (const std::string& k : key_path) duplicate += Pointer(k);
        }
        return true;
      }
      default:
        return true;
    }
  };
  json root;
  try {
    root = json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                       /*ignore_comments=*/false);
  } catch (const json::exception& e) {
    return UserError("safetensors-bad-header", "",
                     std::string("the header is not valid JSON: ") + e.what());
  }
  if (too_deep) {
    return UserError("safetensors-bad-header", "",
                     "the header nests deeper than the " + std::to_string(kMaxDepth) +
                         " levels of a safetensors header");
  }
  if (!duplicate.empty()) {
    return UserError("safetensors-duplicate-key", duplicate,
                     "the key " + Quote(duplicate.substr(duplicate.rfind('/') + 1)) +
                         " appears twice in one object",
                     "a JSON reader would silently keep only one of them");
  }
  if (!root.is_object()) {
    return UserError("safetensors-bad-header", "", "the header is not a JSON object");
  }

  std::vector<Diagnostic> errors;
  std::vector<Entry> entries;
  std::map<std::string, std::string> meta;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) {
        errors.push_back(UserError(
            "safetensors-bad-metadata", "/__metadata__",
            "__metadata__ is " + std::string(value.type_name()) + ", not an object of strings"));
        continue;
      }
      for (const auto& [mkey, mvalue] : value.items()) {
        if (!mvalue.is_string()) {
          errors.push_back(UserError("safetensors-bad-metadata", "/__metadata__/" + Escape(mkey),
                                     "metadata " + Quote(mkey) + " is " +
                                         std::string(mvalue.type_name()) + ", not a string"));
        } else {
          meta[mkey] = mvalue.get<std::string>();
        }
      }
      continue;
    }
    CheckEntry(key, value, data_size, &entries, &errors);
  }
  if (!errors.empty()) return Status(std::move(errors));

  // The layout: sorted by position, each tensor starts where the previous ended, and the last
  // ends with the data section. Empty tensors sort before non-empty ones at the same offset.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t cursor = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != cursor) {
      std::string what = e->begin < cursor ? "overlaps the tensor before it, which ends at "
                                           : "leaves a gap after the tensor before it, which "
                                             "ends at ";
      return UserError("safetensors-bad-offsets", Pointer(e->name, "data_offsets"),
                       "tensor " + Quote(e->name) + " starting at byte " +
                           std::to_string(e->begin) + " " + what + std::to_string(cursor));
    }
    cursor = e->end;
  }
  if (cursor != data_size) {
    return UserError("safetensors-bad-offsets", "",
                     "the tensors cover " + std::to_string(cursor) +
                         " bytes of a data section of " + std::to_string(data_size) + " bytes");
  }
  return Header{n, std::move(entries), std::move(meta)};
}

}  // namespace

Result<std::vector<NamedTensor>> DecodeSafetensors(std::string_view file,
                                                   std::map<std::string, std::string>* metadata) {
  SCELLIS_ASSIGN_OR_RETURN(Header h, DecodeHeader(file, file.size()));

  std::string_view data = file.substr(8 + h.text_bytes);
  std::vector<NamedTensor> out;
  out.reserve(h.entries.size());
  for (Entry& e : h.entries) {  // in name order, as the JSON object keeps its keys sorted
    out.push_back(NamedTensor{std::move(e.name), std::move(e.dtype), std::move(e.shape),
                              std::string(data.substr(e.begin, e.end - e.begin))});
  }
  if (metadata != nullptr) *metadata = std::move(h.metadata);
  return out;
}

Result<std::vector<NamedTensor>> LoadSafetensors(const std::string& path,
                                                 std::map<std::string, std::string>* metadata,
                                                 uint64_t max_bytes) {
  Result<std::vector<NamedTensor>> r = [&]() -> Result<std::vector<NamedTensor>> {
    // The length and header first, judged against the file's size: a file whose header does not
    // describe it exactly is refused before its data section is read.
    SCELLIS_ASSIGN_OR_RETURN(FileHead length, ReadFileHead(path, 8));
    if (length.size > max_bytes) {
      return UserError("file-too-large", "",
                       "the file holds " + std::to_string(length.size) + " bytes, more than the " +
                           std::to_string(max_bytes) + " accepted here");
    }
    uint64_t n = 0;
    for (int i = static_cast<int>(length.bytes.size()) - 1; i >= 0; --i)
      n = (n << 8) | static_cast<unsigned char>(length.bytes[i]);
    SCELLIS_ASSIGN_OR_RETURN(FileHead head,
                             ReadFileHead(path, 8 + std::min(n, kSafetensorsMaxHeaderBytes)));
    SCELLIS_TRY(DecodeHeader(head.bytes, head.size).status());
    SCELLIS_ASSIGN_OR_RETURN(std::string file, ReadFile(path, max_bytes));
    return DecodeSafetensors(file, metadata);
  }();
  if (r.ok()) return r;
  std::vector<Diagnostic> errors = r.errors();
  for (Diagnostic& d : errors) d.message = Quote(path) + ": " + d.message;
  return Status(std::move(errors));
}

}  // namespace scellis::store
