// Strict keys: the "did you mean" heuristic and that every object of a document is checked with it.
#include "doc/keys.h"

#include <gtest/gtest.h>

#include "doc/document.h"

namespace scellis::doc {
namespace {

const std::vector<std::string> kKnown = {"tolerance", "determinism", "beta1", "lr", "batch"};

TEST(ClosestKey, MisspellingsWithinTwoEdits) {
  EXPECT_EQ(ClosestKey("tolerence", kKnown), "tolerance");     // one substitution
  EXPECT_EQ(ClosestKey("determinsm", kKnown), "determinism");  // one deletion
  EXPECT_EQ(ClosestKey("betta11", kKnown), "beta1");           // two insertions
  EXPECT_EQ(ClosestKey("bacth", kKnown), "batch");             // a transposition is two edits
  EXPECT_EQ(ClosestKey("bxxxh", kKnown), std::nullopt);        // three edits
}

TEST(ClosestKey, CaseAndSeparatorVariantsAtAnyDistance) {
  EXPECT_EQ(ClosestKey("Beta_1", kKnown), "beta1");
  EXPECT_EQ(ClosestKey("TOLERANCE", kKnown), "tolerance");
  EXPECT_EQ(ClosestKey("l-r", kKnown), "lr");
}

TEST(ClosestKey, ShortKeysDoNotMatchEverything) {
  // A key as short as the edit budget would match anything: no suggestion.
  EXPECT_EQ(ClosestKey("x", {"a", "lr"}), std::nullopt);
  EXPECT_EQ(ClosestKey("memory", {"memory_bytes"}), std::nullopt);
  EXPECT_EQ(ClosestKey("", kKnown), std::nullopt);
}

TEST(ClosestKey, NearestWinsThenEarliest) {
  EXPECT_EQ(ClosestKey("ab", {"abcd", "abc"}), "abc");
  EXPECT_EQ(ClosestKey("abx", {"aby", "abz"}), "aby");
}

TEST(CheckKeys, OneDiagnosticPerUnknownKeyWithItsPointer) {
  std::vector<Diagnostic> errors;
  Json obj = {{"lr", 1}, {"tolerence", 2}, {"zzz", 3}};
  CheckKeys(obj, "/train", kKnown, "the section", errors);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].code, "unknown-field");
  EXPECT_EQ(errors[0].pointer, "/train/tolerence");
  EXPECT_EQ(errors[0].help, "did you mean \"tolerance\"?");
  EXPECT_EQ(errors[1].pointer, "/train/zzz");
  EXPECT_EQ(errors[1].help, "its fields are tolerance, determinism, beta1, lr, batch");
}

TEST(CheckKeys, KeysArePointerEscapedAndCodesChosen) {
  std::vector<Diagnostic> errors;
  CheckKeys(Json{{"a/b~", 1}}, "", {}, "x", errors, "unknown-attribute");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code, "unknown-attribute");
  EXPECT_EQ(errors[0].pointer, "/a~1b~0");
  EXPECT_EQ(errors[0].help, "it takes no fields");
  errors.clear();
  CheckKeys(Json::array({1, 2}), "", {}, "x", errors);  // not an object: another check's concern
  EXPECT_TRUE(errors.empty());
}

// Every object of a workflow goes through the checker, so a misspelled key anywhere is named with
// its pointer.
TEST(StrictDocument, UnknownKeysAnywhereInAWorkflow) {
  const std::string head = R"({"format": "scellis.workflow/1", "determinism": "prod",)";
  const std::string node =
      R"({"id": "x", "type": "input", "params": {"shape": [2], "data": [1, 2]}})";
  const std::string tail = R"(, "outputs": [{"name": "o", "from": "x"}]})";
  struct Case {
    std::string text, code, pointer;
  } cases[] = {
      {head + R"("tolerence": "tight", "nodes": [)" + node + "]" + tail, "unknown-field",
       "/tolerence"},
      {head + R"("budget": {"memory": 5}, "nodes": [)" + node + "]" + tail, "unknown-field",
       "/budget/memory"},
      {head + R"("nodes": [{"id": "x", "type": "input", "lable": "a", "params": {"shape": [2]}}])" +
           tail,
       "unknown-field", "/nodes/0/lable"},
      {head +
           R"("nodes": [{"id": "x", "type": "input", "params": {"shape": [2], "dtpye": "f32"}}])" +
           tail,
       "unknown-attribute", "/nodes/0/params/dtpye"},
      {head + R"("nodes": [)" + node + R"(], "outputs": [{"name": "o", "from": "x", "form": 1}]})",
       "unknown-field", "/outputs/0/form"},
      {head + R"("nodes": [)" + node + R"(], "wires": [{"from": "x", "to": "x.a", "too": 1}])" +
           tail,
       "unknown-field", "/wires/0/too"},
  };
  for (const Case& c : cases) {
    auto d = Parse(c.text);
    ASSERT_FALSE(d.ok()) << c.text;
    bool found = false;
    for (const Diagnostic& e : d.errors()) found |= e.code == c.code && e.pointer == c.pointer;
    EXPECT_TRUE(found) << c.pointer << ": " << d.errors()[0].Format("");
  }
}

TEST(StrictDocument, GraphNodeAttributesComeFromTheOpTable) {
  auto d = Parse(R"({"version": 1, "nodes": [{"id": 0, "op": "input", "shape": [2], "data": [1, 2]},
    {"id": 1, "op": "sum", "a": 0, "axes": 0}], "outputs": [{"name": "o", "id": 1}]})");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.errors()[0].code, "unknown-attribute");
  EXPECT_EQ(d.errors()[0].pointer, "/nodes/1/axes");
  EXPECT_EQ(d.errors()[0].help, "did you mean \"axis\"?");
}

}  // namespace
}  // namespace scellis::doc
