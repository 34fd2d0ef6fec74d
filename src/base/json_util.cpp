#include "base/json_util.h"

#include "base/sha256.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace scellis {
namespace {

// Strings made only of printable ASCII other than `"` and `\\` are written as they are; any other
// goes through nlohmann's escaping.
bool NeedsEscaping(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') return true;
  }
  return false;
}

// Writes the canonical form of `j` to `sink`, a callable taking a std::string_view. Numbers are
// written without a temporary string each: nlohmann's own shortest round-trip digits for
// non-integral floats, so the bytes are those its dump() writes.
template <class Sink>
class CanonicalWriter {
 public:
  explicit CanonicalWriter(Sink& sink) : sink_(sink) {}

  void Write(const Json& j) {
    switch (j.type()) {
      case Json::value_t::object: {
        Put("{");
        bool first = true;
        for (auto it = j.begin(); it != j.end(); ++it) {  // nlohmann keeps object keys sorted
          if (!first) Put(",");
          first = false;
          String(it.key());
          Put(":");
          Write(it.value());
        }
        Put("}");
        break;
      }
      case Json::value_t::array: {
        Put("[");
        const auto& a = j.get_ref<const Json::array_t&>();
        for (size_t i = 0; i < a.size(); ++i) {
          if (i) Put(",");
          Write(a[i]);
        }
        Put("]");
        break;
      }
      case Json::value_t::number_float: {
        double v = j.get<double>();
        if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
          Integer(static_cast<int64_t>(v));
        } else if (!std::isfinite(v)) {
          Put("null");
        } else {
          char* end = nlohmann::detail::to_chars(buf_, buf_ + sizeof buf_, v);
          Put(std::string_view(buf_, end - buf_));
        }
        break;
      }
      case Json::value_t::number_integer:
        Integer(j.get<int64_t>());
        break;
      case Json::value_t::number_unsigned: {
        auto r = std::to_chars(buf_, buf_ + sizeof buf_, j.get<uint64_t>());
        Put(std::string_view(buf_, r.ptr - buf_));
        break;
      }
      case Json::value_t::string:
        String(j.get_ref<const std::string&>());
        break;
      default:
        Put(j.dump());
    }
  }

 private:
  void Put(std::string_view s) { sink_(s); }
  void Integer(int64_t v) {
    auto r = std::to_chars(buf_, buf_ + sizeof buf_, v);
    Put(std::string_view(buf_, r.ptr - buf_));
  }
  void String(const std::string& s) {
    if (NeedsEscaping(s)) {
      Put(Json(s).dump());
      return;
    }
    Put("\"");
    Put(s);
    Put("\"");
  }

  Sink& sink_;
  char buf_[64];
};

// Feeds the canonical form to SHA-256 as it is written, so a large document's is never held whole.
class Sha256Sink {
 public:
  void operator()(std::string_view s) { sha_.Update(s); }
  std::string HexDigest() { return sha_.FinalHex(); }

 private:
  Sha256 sha_;
};

// Reads all of [first, last) as a double, rounded as strtod rounds. Where the C++ library has no
// floating-point std::from_chars (libc++ before LLVM 20, which the WebAssembly build links), strtod
// itself reads a NUL-terminated copy: musl's rounds correctly too, and the program never leaves
// the "C" locale.
bool DoubleFromChars(const char* first, const char* last, double& v) {
#if defined(__cpp_lib_to_chars)
  auto r = std::from_chars(first, last, v);
  return r.ec == std::errc() && r.ptr == last;
#else
  const std::string copy(first, last);
  char* end = nullptr;
  v = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size();
#endif
}

// A fast path for the common shape of documents: strings of printable ASCII without escapes and
// numbers in plain JSON form, which is most of a large document's bytes (its `data` arrays). It
// builds the DOM nlohmann's parser would build (non-negative integers unsigned, negative ones
// signed, the rest doubles, all correctly rounded by std::from_chars as by strtod) at a fraction
// of the cost. On anything else — an escape, a non-ASCII byte, a number out of range, any syntax
// error, nesting over the cap — it declines, and the checked path decides (and names the error).
class FastParser {
 public:
  FastParser(std::string_view text, int max_depth)
      : p_(text.data()), end_(text.data() + text.size()), depth_left_(max_depth) {}

  // False when declined.
  bool Parse(Json& out) {
    if (!Value(out)) return false;
    SkipSpace();
    return p_ == end_;
  }

  // The first key repeated within one object; optional because "" is a key like any other.
  std::optional<std::string> duplicate;

 private:
  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool Value(Json& out) {
    SkipSpace();
    if (p_ == end_) return false;
    switch (*p_) {
      case '{':
      case '[': {
        if (depth_left_-- == 0) return false;
        bool ok = *p_ == '{' ? Object(out) : Array(out);
        ++depth_left_;
        return ok;
      }
      case '"': {
        std::string_view s;
        if (!String(s)) return false;
        out = std::string(s);
        return true;
      }
      case 't':
        return Literal("true", out, Json(true));
      case 'f':
        return Literal("false", out, Json(false));
      case 'n':
        return Literal("null", out, Json(nullptr));
      default:
        return Number(out);
    }
  }

  bool Literal(std::string_view word, Json& out, Json value) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
      return false;
    p_ += word.size();
    out = std::move(value);
    return true;
  }

  bool String(std::string_view& s) {
    const char* start = ++p_;
    while (p_ < end_) {
      auto u = static_cast<unsigned char>(*p_);
      if (u == '"') {
        s = std::string_view(start, p_ - start);
        ++p_;
        return true;
      }
      if (u < 0x20 || u >= 0x80 || u == '\\') return false;
      ++p_;
    }
    return false;
  }

  bool Digits() {
    const char* start = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ > start;
  }

  bool Number(Json& out) {
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (!Digits()) {
      return false;
    }
    bool integral = true;
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      integral = false;
      if (!Digits()) return false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      integral = false;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!Digits()) return false;
    }
    if (integral && *start == '-') {
      int64_t v;
      auto r = std::from_chars(start, p_, v);
      if (r.ec != std::errc() || r.ptr != p_) return false;
      out = v;
    } else if (integral) {
      uint64_t v;
      auto r = std::from_chars(start, p_, v);
      if (r.ec != std::errc() || r.ptr != p_) return false;
      out = v;
    } else {
      double v;
      if (!ExactDecimal(start, p_, v)) {
        if (!DoubleFromChars(start, p_, v) || !std::isfinite(v)) return false;
      }
      out = v;
    }
    return true;
  }

  // A plain decimal `[-]int.frac` of at most 15 digits is m / 10^k with m < 2^53 and k <= 15, both
  // exact doubles, so one IEEE division rounds it correctly: the value strtod gives (Clinger's
  // fast path). Longer numbers and exponents go to std::from_chars.
  static bool ExactDecimal(const char* p, const char* end, double& v) {
    static constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    bool negative = *p == '-';
    if (negative) ++p;
    int64_t m = 0;
    int digits = 0, fraction = -1;
    for (; p < end; ++p) {
      if (*p == '.') {
        fraction = 0;
        continue;
      }
      if (*p < '0' || *p > '9' || ++digits > 15) return false;
      m = m * 10 + (*p - '0');
      if (fraction >= 0) ++fraction;
    }
    if (fraction < 0) return false;
    v = static_cast<double>(m) / kPow10[fraction];
    if (negative) v = -v;
    return true;
  }

  bool Array(Json& out) {
    ++p_;
    out = Json::array();
    auto& items = out.get_ref<Json::array_t&>();
    SkipSpace();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    items.reserve(FlatNumbersAhead());
    while (true) {
      items.emplace_back();
      if (!Value(items.back())) return false;
      SkipSpace();
      if (p_ == end_) return false;
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      if (*p_++ != ',') return false;
    }
  }

  // The length of the flat array of numbers starting at p_, or 0 when it is anything else: a
  // large `data` array is then allocated once rather than grown by doubling.
  size_t FlatNumbersAhead() const {
    size_t commas = 0;
    for (const char* q = p_; q < end_; ++q) {
      char c = *q;
      if (c == ',') {
        ++commas;
      } else if (c == ']') {
        return commas + 1;
      } else if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' ||
                   c == 'E' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
        return 0;
      }
    }
    return 0;
  }

  bool Object(Json& out) {
    ++p_;
    out = Json::object();
    auto& members = out.get_ref<Json::object_t&>();
    SkipSpace();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    while (true) {
      SkipSpace();
      std::string_view key;
      if (p_ == end_ || *p_ != '"' || !String(key)) return false;
      SkipSpace();
      if (p_ == end_ || *p_++ != ':') return false;
      Json value;
      if (!Value(value)) return false;
      auto [it, inserted] = members.emplace(std::string(key), Json());
      if (!inserted && !duplicate) duplicate = key;
      it->second = std::move(value);  // the last value wins, as in nlohmann's parser
      SkipSpace();
      if (p_ == end_) return false;
      if (*p_ == '}') {
        ++p_;
        return true;
      }
      if (*p_++ != ',') return false;
    }
  }

  const char* p_;
  const char* end_;
  int depth_left_;  // containers that may still open, so recursion stays within the cap
};

// Builds the DOM exactly as nlohmann's own parser does and also remembers the first key repeated
// within one object. (nlohmann's callback parser would do this too, but it rescans the enclosing
// container at the end of every object: quadratic in the length of an array of objects.)
class CheckedDomSax : public nlohmann::detail::json_sax_dom_parser<Json> {
 public:
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;
  explicit CheckedDomSax(Json& root) : Base(root, /*allow_exceptions_=*/false) {}

  bool start_object(std::size_t n) {
    keys_.emplace_back();
    return Base::start_object(n);
  }
  bool end_object() {
    keys_.pop_back();
    return Base::end_object();
  }
  bool key(std::string& k) {
    if (!duplicate && !keys_.empty() && !keys_.back().insert(k).second) duplicate = k;
    return Base::key(k);
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& ex) {
    error = ex.what();
    return Base::parse_error(position, token, ex);
  }

  std::optional<std::string> duplicate;
  std::string error;

 private:
  std::vector<std::set<std::string>> keys_;
};

Diagnostic DuplicateKey(const std::string& key) {
  return UserError("duplicate-key", "", "the key \"" + key + "\" appears twice in one object",
                   "JSON objects with repeated keys are ambiguous; keep one");
}

}  // namespace

std::string CanonicalJson(const Json& j) {
  std::string out;
  auto append = [&out](std::string_view s) { out.append(s); };
  CanonicalWriter<decltype(append)>(append).Write(j);
  return out;
}

std::string ContentId(const Json& j) {
  Sha256Sink sink;
  CanonicalWriter<Sha256Sink>(sink).Write(j);
  return "sha256:" + sink.HexDigest();
}

std::string PointerJoin(const std::string& base, const std::string& token) {
  std::string escaped;
  for (char c : token) {
    if (c == '~')
      escaped += "~0";
    else if (c == '/')
      escaped += "~1";
    else
      escaped += c;
  }
  return base + "/" + escaped;
}

std::string PointerJoin(const std::string& base, size_t index) {
  return base + "/" + std::to_string(index);
}

Result<Json> ParseUntrustedJson(std::string_view text, const ParseLimits& limits) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return UserError("empty-document", "", "the document is empty",
                     "a document is a JSON object such as {\"version\": 1, \"nodes\": [...]}");
  }
  if (text.size() > limits.max_bytes) {
    return UserError("document-too-large", "",
                     "the document is " + std::to_string(text.size()) +
                         " bytes, over the limit of " + std::to_string(limits.max_bytes),
                     "keep large tensors in dataset files rather than inline data");
  }
  Json j;
  FastParser fast(text, limits.max_depth);
  if (fast.Parse(j)) {
    if (fast.duplicate) return DuplicateKey(*fast.duplicate);
    return j;
  }
  j = Json();
  // Depth is checked before parsing so hostile nesting never reaches nlohmann's recursive parser.
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth) {
        return UserError("nesting-too-deep", "",
                         "the document nests deeper than " + std::to_string(limits.max_depth) +
                             " levels (at byte " + std::to_string(i) + ")");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }

  CheckedDomSax sax(j);
  bool ok = Json::sax_parse(text.begin(), text.end(), &sax);
  if (!ok || sax.is_errored()) {
    const std::string& what = sax.error;
    size_t colon = what.find("] ");
    return UserError("malformed-json", "",
                     what.empty()
                         ? "the document is not valid JSON"
                         : "the document is not valid JSON: " +
                               (colon == std::string::npos ? what : what.substr(colon + 2)));
  }
  if (sax.duplicate) return DuplicateKey(*sax.duplicate);
  return j;
}

}  // namespace scellis
