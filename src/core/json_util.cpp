#include "core/json_util.h"

#include <cmath>
#include <set>
#include <vector>

#include "core/sha256.h"

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

}  // namespace

std::string CanonicalJson(const Json& j) {
  std::string out;
  WriteCanonical(j, out);
  return out;
}

std::string ContentId(const Json& j) { return "sha256:" + Sha256Hex(CanonicalJson(j)); }

std::string PointerJoin(const std::string& base, const std::string& token) {
  std::string escaped;
  for (char c : token) {
    if (c == '~') escaped += "~0";
    else if (c == '/') escaped += "~1";
    else escaped += c;
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
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
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

  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto callback = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) keys.emplace_back();
    else if (event == Json::parse_event_t::object_end) keys.pop_back();
    else if (event == Json::parse_event_t::key && duplicate.empty() && !keys.empty()) {
      std::string k = parsed.get<std::string>();
      if (!keys.back().insert(k).second) duplicate = k;
    }
    return true;
  };
  Json j = Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    try {
      Json again = Json::parse(text.begin(), text.end());  // throws with the position
      (void)again;
    } catch (const Json::parse_error& e) {
      std::string what = e.what();
      size_t colon = what.find("] ");
      return UserError("malformed-json", "",
                       "the document is not valid JSON: " +
                           (colon == std::string::npos ? what : what.substr(colon + 2)));
    }
    return UserError("malformed-json", "", "the document is not valid JSON");
  }
  if (!duplicate.empty()) {
    return UserError("duplicate-key", "",
                     "the key \"" + duplicate + "\" appears twice in one object",
                     "JSON objects with repeated keys are ambiguous; keep one");
  }
  return j;
}

}  // namespace scellis
