#include "typed_flags.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace scellis::cli {

std::optional<int64_t> ParseInteger(const std::string& text, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  // from_chars takes no '+', no space and no base prefix; a '-' only where lo admits one.
  if (text.empty() || (text[0] == '-' && lo >= 0)) return std::nullopt;
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<uint64_t> ParseUnsigned(const std::string& text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  if (text.empty() || text[0] == '-') return std::nullopt;
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

std::optional<int64_t> ParseByteSize(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  std::string suffix = text.substr(digits);
  static const std::vector<std::pair<std::string, std::string>> kSuffixes = {
      {"K", "KiB"}, {"M", "MiB"}, {"G", "GiB"}, {"T", "TiB"}};
  int shift = 0;
  if (!suffix.empty()) {
    auto it = std::find_if(kSuffixes.begin(), kSuffixes.end(),
                           [&](const auto& s) { return s.first == suffix || s.second == suffix; });
    if (it == kSuffixes.end()) return std::nullopt;
    shift = 10 * static_cast<int>(it - kSuffixes.begin() + 1);
  }
  std::optional<int64_t> count =
      ParseInteger(text.substr(0, digits), 1, std::numeric_limits<int64_t>::max());
  if (!count || *count > (std::numeric_limits<int64_t>::max() >> shift)) return std::nullopt;
  return *count << shift;
}

void TypedFlags::Add(const std::string& name, const std::string& help, Rule rule) {
  Flag& f = flags_.emplace_back();
  f.name = name;
  f.rule = std::move(rule);
  f.option = cmd_->add_option(name, f.text, help);
}

void TypedFlags::Unsigned(const std::string& name, std::optional<uint64_t>* out,
                          const std::string& help) {
  Add(name, help, [=](const std::string& flag, const std::string& text) {
    *out = ParseUnsigned(text);
    return *out ? "" : flag + " takes a non-negative integer below 2^64, got \"" + text + "\"";
  });
}

void TypedFlags::Bytes(const std::string& name, std::optional<int64_t>* out,
                       const std::string& help) {
  Add(name, help, [=](const std::string& flag, const std::string& text) {
    *out = ParseByteSize(text);
    return *out ? ""
                : flag +
                      " takes a whole, positive number of bytes with an optional suffix K, M, G "
                      "or T (powers of 1024), such as 512M or 2G; got \"" +
                      text + "\"";
  });
}

std::vector<Diagnostic> TypedFlags::Convert() const {
  std::vector<Diagnostic> errors;
  for (const Flag& f : flags_) {
    if (f.option->count() == 0) continue;
    std::string message = f.rule(f.name, f.text);
    if (!message.empty()) errors.push_back(UserError("bad-flag", "", message));
  }
  return errors;
}

}  // namespace scellis::cli
