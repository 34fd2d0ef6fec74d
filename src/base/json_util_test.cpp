// ParseUntrustedJson's fast path against nlohmann's parser, the content id against a canonical
// form hashed independently (Python's json and hashlib), and the refusals of untrusted text.
#include "base/json_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

namespace scellis {
namespace {

// Canonical forms and digests below were computed with Python 3: json.loads, integral floats below
// 2^53 turned into ints, json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False),
// hashlib.sha256 over the UTF-8 bytes.
TEST(ContentId, MatchesAnIndependentCanonicalForm) {
  struct Case {
    const char* text;
    const char* canonical;
    const char* digest;
  };
  const Case cases[] = {
      // Plain ASCII and plain numbers: the fast path.
      {R"({"version": 1, "b": [1, 2.5, -0.1, 1e-05, 3.0, 0.0001, -7, -0, 1e+22, 123456.789e3,)"
       R"( 18446744073709551615, 0.30000000000000004], "a": {"z": "x y", "w": [true, false,)"
       R"( null, {}, []]}})",
       R"({"a":{"w":[true,false,null,{},[]],"z":"x y"},"b":[1,2.5,-0.1,1e-05,3,0.0001,-7,0,)"
       R"(1e+22,123456789,18446744073709551615,0.30000000000000004],"version":1})",
       "38763086478835aa57df2c4e64a24d79f7b7b3e05197dd5b5c4e120ac835038c"},
      // Escapes and non-ASCII: nlohmann's parser.
      {"{\"version\": 1, \"b\": [1, 2.5, -0.1, 1e-05, 3.0, 0.0001, -7, 1e+22, 123456.789e3, "
       "18446744073709551615], \"a\": {\"z\": \"x y\", \"\xc3\xa9t\xc3\xa9\": [true, false, "
       "null], \"q\": \"say \\\"hi\\\"\"}}",
       "{\"a\":{\"q\":\"say \\\"hi\\\"\",\"z\":\"x y\",\"\xc3\xa9t\xc3\xa9\":[true,false,null]},"
       "\"b\":[1,2.5,-0.1,1e-05,3,0.0001,-7,1e+22,123456789,18446744073709551615],\"version\":1}",
       "7c50c3c66827c5858676dd9a5aa6a188d24be7cb35291a415950fe00bd338747"},
  };
  for (const Case& c : cases) {
    auto j = ParseUntrustedJson(c.text);
    ASSERT_TRUE(j.ok()) << j.errors().front().Format();
    EXPECT_EQ(CanonicalJson(*j), c.canonical);
    EXPECT_EQ(ContentId(*j), std::string("sha256:") + c.digest);
  }
}

// Random documents of every JSON type, written compactly: the fast path must build exactly the
// DOM (types included: unsigned, signed, float) that nlohmann's own parser builds.
class RandomDoc {
 public:
  explicit RandomDoc(uint32_t seed) : rng_(seed) {}

  std::string Value(int depth) {
    int kind = Pick(depth < 4 ? 9 : 6);
    switch (kind) {
      case 0:
        return "true";
      case 1:
        return "null";
      case 2:
        return std::to_string(static_cast<int64_t>(rng_()) - (int64_t{1} << 31));
      case 3: {
        std::uniform_real_distribution<double> d(-1e6, 1e6);
        char buf[64];
        int form = Pick(3);
        if (form == 2)
          std::snprintf(buf, sizeof buf, "%.*f", Pick(10), d(rng_));
        else
          std::snprintf(buf, sizeof buf, form ? "%.17g" : "%.6e", d(rng_));
        return buf;
      }
      case 4:
        return std::to_string(rng_()) + "e" + std::to_string(Pick(40) - 20);
      case 5:
        return "\"" + Key() + "\"";
      case 6: {
        std::string s = "[";
        for (int i = 0, n = Pick(6); i < n; ++i) s += (i ? ", " : "") + Value(depth + 1);
        return s + "]";
      }
      default: {
        std::string s = "{";
        for (int i = 0, n = Pick(5); i < n; ++i)
          s += std::string(i ? ",\n " : "") + "\"" + Key() + std::to_string(i) +
               "\": " + Value(depth + 1);
        return s + "}";
      }
    }
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  std::string Key() {
    std::string k;
    for (int i = 0, n = Pick(6); i < n; ++i) k += static_cast<char>('a' + Pick(26));
    return k;
  }
  std::mt19937 rng_;
};

TEST(ParseUntrustedJson, FastPathBuildsNlohmannsDom) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::string text = RandomDoc(seed).Value(0);
    SCOPED_TRACE(text);
    auto ours = ParseUntrustedJson(text);
    ASSERT_TRUE(ours.ok()) << ours.errors().front().Format();
    Json theirs = Json::parse(text);
    ASSERT_EQ(*ours, theirs);
    EXPECT_EQ(ours->dump(), theirs.dump());  // the same types, so the same text
  }
}

// Plain decimals of every length around the 15-digit fast path, against the C library's strtod.
TEST(ParseUntrustedJson, DecimalsRoundLikeStrtod) {
  std::mt19937_64 rng(20261201);
  for (int i = 0; i < 200000; ++i) {
    int int_digits = static_cast<int>(rng() % 9), frac_digits = 1 + static_cast<int>(rng() % 12);
    std::string token = rng() % 2 ? "-" : "";
    if (rng() % 10 == 0) {
      token += '0';  // JSON allows no other leading zero
    } else {
      token += static_cast<char>('1' + rng() % 9);
      for (int d = 1; d < int_digits; ++d) token += static_cast<char>('0' + rng() % 10);
    }
    token += '.';
    for (int d = 0; d < frac_digits; ++d) token += static_cast<char>('0' + rng() % 10);
    auto j = ParseUntrustedJson("[" + token + "]");
    ASSERT_TRUE(j.ok()) << token;
    const double want = std::strtod(token.c_str(), nullptr);
    const double got = (*j)[0].get<double>();
    ASSERT_EQ(std::memcmp(&want, &got, sizeof want), 0) << token;  // bits, so -0.0 too
  }
}

TEST(ParseUntrustedJson, RefusalsAreNamed) {
  auto code = [](std::string_view text) {
    auto r = ParseUntrustedJson(text, {.max_bytes = 1 << 20, .max_depth = 8});
    return r.ok() ? std::string("ok") : r.errors().front().code;
  };
  EXPECT_EQ(code(""), "empty-document");
  EXPECT_EQ(code(" \n"), "empty-document");
  EXPECT_EQ(code(std::string(2 << 20, ' ') + "1"), "document-too-large");
  EXPECT_EQ(code("[[[[[[[[[1]]]]]]]]]"), "nesting-too-deep");
  EXPECT_EQ(code("[[[[[[[[1]]]]]]]]"), "ok");
  EXPECT_EQ(code(R"({"a": 1, "b": 2, "a": 3})"), "duplicate-key");
  EXPECT_EQ(code(R"({"a": {"x": 1, "x": 1}})"), "duplicate-key");
  // The empty string is a key like any other: repeating it is ambiguous too (found by fuzzing).
  EXPECT_EQ(code(R"({"": 0, "": 1})"), "duplicate-key");
  EXPECT_EQ(code(R"({"v": {"": 0, "": "op"}})"), "duplicate-key");
  EXPECT_EQ(code(R"({"a": {"x": 1}, "b": {"x": 1}})"), "ok");  // one key per object
  for (const char* bad :
       {"[1,]", "[01]", "[1.]", "[.5]", "[+1]", "[1e]", "[-]", "{\"a\" 1}", "{\"a\": 1,}", "[1] x",
        "[\"a\nb\"]", "[1e400]", "[tru]", "nul", "[NaN]", "[\"\\x\"]", "[\"\xff\"]", "{1: 2}"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(code(bad), "malformed-json");
  }
  // Beyond the fast path but valid: escapes, UTF-8, integers beyond 64 bits, huge exponents.
  for (const char* good : {"[\"\\u00e9\\n\"]", "[\"\xc3\xa9\"]", "[-9223372036854775809]",
                           "[18446744073709551616]", "[1e-400]"}) {
    SCOPED_TRACE(good);
    auto r = ParseUntrustedJson(good);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, Json::parse(good));
  }
}

TEST(ParseUntrustedJson, MalformedJsonNamesThePosition) {
  auto r = ParseUntrustedJson("{\"version\": 1,\n \"nodes\": [1, 2,, 3]}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().code, "malformed-json");
  EXPECT_NE(r.errors().front().message.find("line 2"), std::string::npos)
      << r.errors().front().message;
}

}  // namespace
}  // namespace scellis
