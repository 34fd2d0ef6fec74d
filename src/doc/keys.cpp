#include "doc/keys.h"

#include <algorithm>
#include <cctype>

namespace scellis::doc {
namespace {

// Levenshtein distance, two rows.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitute = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitute});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// "beta_1", "Beta1" and "beta-1" spell the same key.
std::string Folded(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::optional<std::string> ClosestKey(std::string_view key, const std::vector<std::string>& known) {
  // Keys beyond this length are not misspellings worth a quadratic comparison.
  constexpr size_t kLongest = 256;
  if (key.size() > kLongest) return std::nullopt;
  const std::string folded = Folded(key);
  std::optional<std::string> best;
  size_t best_distance = 3;
  for (const std::string& k : known) {
    if (Folded(k) == folded) return k;
    size_t d = EditDistance(key, k);
    if (d < best_distance && d < std::max(key.size(), k.size())) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

void CheckKeys(const Json& obj, const std::string& pointer, const std::vector<std::string>& known,
               std::string_view what, std::vector<Diagnostic>& errors, std::string_view code,
               const std::string& where) {
  if (!obj.is_object()) return;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& key = it.key();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string help;
    if (auto close = ClosestKey(key, known)) {
      help = "did you mean \"" + *close + "\"?";
    } else if (known.empty()) {
      help = "it takes no fields";
    } else {
      help = "its fields are ";
      for (size_t i = 0; i < known.size(); ++i) help += (i ? ", " : "") + known[i];
    }
    Diagnostic d = UserError(std::string(code), PointerJoin(pointer, key),
                             std::string(what) + " has no field \"" + key + "\"", help);
    d.where = where;
    errors.push_back(std::move(d));
  }
}

}  // namespace scellis::doc
