// The op table: lookups, copies that add ops, and attribute checking against declared types.
#include "ops/op_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace scellis::ops {
namespace {

OpSpec Unary(const std::string& name) {
  OpSpec s;
  s.name = name;
  s.ports = {Port("a")};
  s.summary = "an op of this test";
  return s;
}

std::string PointerOf(const std::string& key) {
  return "/nodes/1/" + key;
}

std::vector<std::string> Codes(const std::vector<Diagnostic>& ds) {
  std::vector<std::string> out;
  for (const Diagnostic& d : ds) out.push_back(d.code + " " + d.pointer);
  return out;
}

TEST(OpTable, BuiltinIsSharedAndCopiesAreIndependent) {
  EXPECT_EQ(BuiltinOps().get(), BuiltinOps().get());
  OpTable copy = *BuiltinOps();
  size_t before = BuiltinOps()->ops().size();
  EXPECT_TRUE(copy.Add(Unary("mine")));
  EXPECT_EQ(copy.ops().size(), before + 1);
  EXPECT_EQ(BuiltinOps()->ops().size(), before);
  EXPECT_FALSE(copy.Add(Unary("add"))) << "add is already there";
  EXPECT_EQ(copy.Find("add")->ports.size(), 2u) << "the first add is kept";
}

TEST(OpTable, PortNamesAndVersions) {
  const OpTable& t = *BuiltinOps();
  for (const char* port : {"a", "b", "target", "param", "grad", "m", "v", "velocity", "t"})
    EXPECT_TRUE(t.IsPortName(port)) << port;
  EXPECT_FALSE(t.IsPortName("axis"));
  EXPECT_FALSE(t.IsPortName("shape"));
  std::string v1 = t.NamesUpTo(1);
  EXPECT_NE(v1.find("matmul"), std::string::npos);
  EXPECT_EQ(v1.find("softmax"), std::string::npos) << "softmax is version 2";
  EXPECT_EQ(v1.find("input"), std::string::npos) << "sources are not listed as ops";
}

TEST(OpTable, AttributesAreCheckedAgainstTheirDeclaredTypes) {
  const OpSpec& sum = *BuiltinOps()->Find("sum");
  EXPECT_TRUE(
      CheckAttributes(sum, {{"axis", -1}, {"keepdim", true}}, "/nodes/1", PointerOf, "").empty());
  EXPECT_TRUE(CheckAttributes(sum, {{"axis", nullptr}}, "/nodes/1", PointerOf, "").empty())
      << "null means not given";
  EXPECT_EQ(Codes(CheckAttributes(sum, {{"keepdim", "yes"}}, "/nodes/1", PointerOf, "")),
            std::vector<std::string>{"bad-attribute /nodes/1/keepdim"});
  EXPECT_EQ(Codes(CheckAttributes(sum, {{"axis", 0.5}}, "/nodes/1", PointerOf, "")),
            std::vector<std::string>{"bad-attribute /nodes/1/axis"});
  EXPECT_EQ(Codes(CheckAttributes(sum, {{"alpha", 1}}, "/nodes/1", PointerOf, "")),
            std::vector<std::string>{"unknown-attribute /nodes/1/alpha"});

  const OpSpec& permute = *BuiltinOps()->Find("permute");
  EXPECT_EQ(Codes(CheckAttributes(permute, Json::object(), "/nodes/1", PointerOf, "")),
            std::vector<std::string>{"missing-attribute /nodes/1"});
  EXPECT_EQ(Codes(CheckAttributes(permute, {{"dims", {1, "0"}}}, "/nodes/1", PointerOf, "")),
            std::vector<std::string>{"bad-attribute /nodes/1/dims"});
  EXPECT_TRUE(CheckAttributes(permute, {{"dims", {1, 0}}}, "/nodes/1", PointerOf, "").empty());

  const OpSpec& add = *BuiltinOps()->Find("add");
  EXPECT_EQ(Codes(CheckAttributes(add, {{"scalar", "2"}}, "/nodes/1", PointerOf, "")),
            std::vector<std::string>{"bad-attribute /nodes/1/scalar"});
}

TEST(OpTable, EveryEntryIsComplete) {
  for (const OpSpec& s : BuiltinOps()->ops()) {
    SCOPED_TRACE(s.name);
    EXPECT_FALSE(s.summary.empty());
    EXPECT_FALSE(s.determinism.empty());
    EXPECT_GE(s.min_version, 1);
    for (const Port& p : s.ports) EXPECT_FALSE(p.dtypes.empty()) << p.name;
    // A list port is the last port, so every other argument keeps its place.
    for (size_t i = 0; i + 1 < s.ports.size(); ++i) EXPECT_FALSE(s.ports[i].list) << i;
    if (s.kind == OpKind::kSource) {
      EXPECT_TRUE(s.ports.empty());
      EXPECT_FALSE(s.differentiable);
    } else if (s.kind != OpKind::kPosition) {  // arange computes from indices alone
      EXPECT_FALSE(s.ports.empty());
    }
  }
}

// docs/ops.md is the table's Markdown; regenerate it with `scellis ops --markdown > docs/ops.md`.
TEST(OpTable, CommittedReferenceMatchesTheTable) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/docs/ops.md", std::ios::binary);
  ASSERT_TRUE(in) << "docs/ops.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), ToMarkdown(*BuiltinOps()))
      << "docs/ops.md is stale: scellis ops --markdown > docs/ops.md";
}

TEST(OpTable, NumberRangesHoldTheirEnds) {
  NumberRange open_low{0, 1, true, false};
  EXPECT_FALSE(open_low.Contains(0));
  EXPECT_TRUE(open_low.Contains(1e-300));
  EXPECT_TRUE(open_low.Contains(1));
  EXPECT_FALSE(open_low.Contains(1.0000001));
  EXPECT_FALSE(open_low.Contains(std::nan("")));
  EXPECT_EQ(open_low.Text(), "(0, 1]");
  // CheckAttributes refuses a value outside the range, at the attribute's pointer.
  const OpSpec* adam = BuiltinOps()->Find("adam_update");
  ASSERT_NE(adam, nullptr);
  auto errors = CheckAttributes(
      *adam, Json::parse(R"({"beta1": 1.0, "lr": 0.1})"), "/nodes/3",
      [](const std::string& a) { return "/nodes/3/attrs/" + a; }, "test");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code, "bad-attribute");
  EXPECT_EQ(errors[0].pointer, "/nodes/3/attrs/beta1");
}

TEST(OpTable, MarkdownNamesEveryOpPortAndAttribute) {
  std::string md = ToMarkdown(*BuiltinOps());
  EXPECT_NE(md.find("\n## cross_entropy\n"), std::string::npos);
  EXPECT_NE(md.find("| `target` | labels | f32 |"), std::string::npos);
  EXPECT_NE(md.find("| `keepdim` | boolean | — | `false` | no |"), std::string::npos);
  EXPECT_NE(md.find("| `dims` | integer array | — | — | yes |"), std::string::npos);
  EXPECT_NE(md.find("| [`exp`](#exp) | 2 | elementwise | yes | default |"), std::string::npos);
}

}  // namespace
}  // namespace scellis::ops

namespace scellis::ops {
namespace {

// docs/ops.md states each op's NaN rule; an op added without one would leave users guessing.
TEST(OpTable, EveryBuiltinOpStatesItsNanRule) {
  for (const OpSpec& s : BuiltinOps()->ops()) EXPECT_FALSE(s.nan.empty()) << s.name;
}

TEST(OpTable, JsonHasEveryOpOnceWithItsPortsAndAttributes) {
  Json j = ToJson(*BuiltinOps());
  ASSERT_TRUE(j["ops"].is_array());
  ASSERT_TRUE(j["node_types"].is_array());
  std::set<std::string> names;
  for (const Json& e : j["ops"]) EXPECT_TRUE(names.insert(e["name"]).second) << e["name"];
  for (const Json& e : j["node_types"]) EXPECT_TRUE(names.insert(e["name"]).second) << e["name"];
  EXPECT_EQ(names.size(), BuiltinOps()->ops().size()) << "every op once, in one of the lists";

  auto find = [&](const char* list, const std::string& name) -> Json {
    for (const Json& e : j[list])
      if (e["name"] == name) return e;
    return nullptr;
  };
  Json matmul = find("ops", "matmul");
  ASSERT_TRUE(matmul.is_object());
  ASSERT_EQ(matmul["inputs"].size(), 2u);
  EXPECT_EQ(matmul["inputs"][0]["name"], "a");
  EXPECT_EQ(matmul["inputs"][1]["name"], "b");
  EXPECT_EQ(matmul["inputs"][0]["dtypes"], Json::array({"f32", "f16"}));
  EXPECT_EQ(matmul["outputs"], Json::parse(R"([{"name": "out"}])"));
  EXPECT_EQ(matmul["family"], "matmul");
  EXPECT_TRUE(matmul["differentiable"].get<bool>());
  EXPECT_FALSE(matmul["inputs"][0]["list"].get<bool>());
  Json concat = find("ops", "concat");
  ASSERT_EQ(concat["inputs"].size(), 1u);
  EXPECT_EQ(concat["inputs"][0]["name"], "inputs");
  EXPECT_TRUE(concat["inputs"][0]["list"].get<bool>());

  Json sum = find("ops", "sum");
  bool has_axis = false;
  for (const Json& a : sum["attrs"])
    if (a["name"] == "axis") {
      has_axis = true;
      EXPECT_EQ(a["type"], "integer");
      EXPECT_FALSE(a["required"].get<bool>());
    }
  EXPECT_TRUE(has_axis);

  // A number attribute with a range carries it (the optimizers' learning rate).
  bool saw_range = false;
  for (const OpSpec& s : BuiltinOps()->ops())
    for (const Attr& a : s.attrs)
      if (a.range) {
        Json e = find(s.kind == OpKind::kSource ? "node_types" : "ops", s.name);
        for (const Json& ja : e["attrs"])
          if (ja["name"] == a.name) {
            saw_range = true;
            EXPECT_EQ(ja["range"]["text"], a.range->Text());
            EXPECT_EQ(ja["range"]["low_open"], a.range->low_open);
          }
      }
  EXPECT_TRUE(saw_range);

  // The sources are node types, not ops: input, param and full, with their params.
  Json input = find("node_types", "input");
  ASSERT_TRUE(input.is_object());
  EXPECT_TRUE(input["inputs"].empty());
  std::set<std::string> input_attrs;
  for (const Json& a : input["attrs"]) input_attrs.insert(a["name"]);
  EXPECT_EQ(input_attrs,
            (std::set<std::string>{"shape", "data", "dtype", "name", "carry", "stream"}));
  Json param = find("node_types", "param");
  ASSERT_TRUE(param.is_object());
  for (const Json& a : param["attrs"])
    if (a["name"] == "init") EXPECT_TRUE(a["required"].get<bool>());
  EXPECT_TRUE(find("node_types", "full").is_object());
  EXPECT_TRUE(find("ops", "input").is_null());
  // It is plain JSON: it survives a round trip through text.
  EXPECT_EQ(Json::parse(j.dump()), j);
}

}  // namespace
}  // namespace scellis::ops
