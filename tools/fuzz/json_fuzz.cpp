// Fuzz target: ParseUntrustedJson's fast path against nlohmann's own parser. Whatever the bytes,
// both must agree on acceptance (ours also refuses repeated keys and nesting over the cap) and,
// when they accept, on the tree, types included, and on its canonical form.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>
#include <vector>

#include "base/json_util.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "json fuzz: %s\n", what);
  std::abort();
}

// nlohmann's parser with repeated keys noticed.
struct Reference {
  bool ok = false;
  bool duplicate = false;
  scellis::Json tree;
};

Reference Parse(std::string_view text) {
  Reference r;
  std::vector<std::set<std::string>> keys;
  r.tree = scellis::Json::parse(
      text.begin(), text.end(),
      [&](int, scellis::Json::parse_event_t event, scellis::Json& parsed) {
        if (event == scellis::Json::parse_event_t::object_start) keys.emplace_back();
        if (event == scellis::Json::parse_event_t::object_end) keys.pop_back();
        if (event == scellis::Json::parse_event_t::key && !keys.empty() &&
            !keys.back().insert(parsed.get<std::string>()).second)
          r.duplicate = true;
        return true;
      },
      /*allow_exceptions=*/false);
  r.ok = !r.tree.is_discarded();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scellis;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ours = ParseUntrustedJson(text);
  if (!ours.ok()) {
    const std::string& code = ours.errors().front().code;
    if (code == "nesting-too-deep" || code == "empty-document" || code == "document-too-large")
      return 0;
    Reference ref = Parse(text);
    if (code == "duplicate-key" && !(ref.ok && ref.duplicate))
      Fail("refused a repeated key nlohmann's parser does not see");
    if (code == "malformed-json" && ref.ok) Fail("refused JSON nlohmann's parser accepts");
    return 0;
  }
  Reference ref = Parse(text);
  if (!ref.ok || ref.duplicate) Fail("accepted what nlohmann's parser refuses");
  if (*ours != ref.tree || ours->dump() != ref.tree.dump()) Fail("built a different tree");
  if (CanonicalJson(*ours) != CanonicalJson(ref.tree)) Fail("canonical forms differ");
  return 0;
}
