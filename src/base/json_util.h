// JSON helpers shared by every rung: canonical form, JSON pointers, and bounded parsing of
// untrusted documents.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/result.h"

namespace scellis {

using Json = nlohmann::json;

// Canonical JSON: keys sorted, no insignificant whitespace, integral numbers written as integers,
// other numbers in their shortest round-trip form. Two documents that mean the same thing have the
// same canonical bytes, so the same content id.
std::string CanonicalJson(const Json& j);

// SHA-256 of the canonical form, as `sha256:<hex>`.
std::string ContentId(const Json& j);

// Appends a reference token to a JSON pointer, escaping `~` and `/`.
std::string PointerJoin(const std::string& base, const std::string& token);
std::string PointerJoin(const std::string& base, size_t index);

struct ParseLimits {
  size_t max_bytes = size_t{256} << 20;
  int max_depth = 64;
};

// Parses untrusted text. Rejects (with named diagnostics) empty input, input over the size cap,
// nesting deeper than the cap (checked before parsing so the parser never recurses deeply),
// malformed JSON and duplicate object keys.
Result<Json> ParseUntrustedJson(std::string_view text, const ParseLimits& limits = {});

}  // namespace scellis
