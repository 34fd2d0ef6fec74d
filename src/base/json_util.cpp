#include "base/json_util.h"

#include <cmath>
#include <set>
#include <vector>

#include "base/sha256.h"

namespace scellis {
namespace {

void WriteCanonical(const Json& j, std::string& out) {
  switch (j.type()) {
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = j.begin(); it != j.end(); ++it) {  // nlohmann keeps object keys sorted
        if (!first) out += ',';
        first = false;
        out += Json(it.key()).dump();
        out += ':';
        WriteCanonical(it.value(), out);
      }
      out += '}';
      break;
    }
    case Json::value_t::array: {
      out += '[';
      for (size_t i = 0; i < j.size(); ++i) {
        if (i) out += ',';
        WriteCanonical(j[i], out);
      }
      out += ']';
      break;
    }
    case Json::value_t::number_float: {
      double v = j.get<double>();
      if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
        out += std::to_string(static_cast<int64_t>(v));
      } else {
        out += j.dump();
      }
      break;
    }
    default:
      out += j.dump();
  }
}

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
    if (duplicate.empty() && !keys_.empty() && !keys_.back().insert(k).second) duplicate = k;
    return Base::key(k);
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& ex) {
    error = ex.what();
    return Base::parse_error(position, token, ex);
  }

  std::string duplicate;
  std::string error;

 private:
  std::vector<std::set<std::string>> keys_;
};

}  // namespace

std::string CanonicalJson(const Json& j) {
  std::string out;
  WriteCanonical(j, out);
  return out;
}

std::string ContentId(const Json& j) {
  return "sha256:" + Sha256Hex(CanonicalJson(j));
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
  // Depth is checked before parsing so hostile nesting never reaches the recursive parser.
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

  Json j;
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
  if (!sax.duplicate.empty()) {
    return UserError("duplicate-key", "",
                     "the key \"" + sax.duplicate + "\" appears twice in one object",
                     "JSON objects with repeated keys are ambiguous; keep one");
  }
  return j;
}

}  // namespace scellis
