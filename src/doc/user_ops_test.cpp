// A document's own ops: the "ops" section read into table entries, and every way a definition can
// be wrong refused by name at its JSON pointer before anything is planned.
#include "doc/user_ops.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "doc/document.h"

namespace scellis::doc {
namespace {

Json Example() {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/user_ops/jacobi5.json");
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

// The first diagnostic of parsing `j`, as "code pointer".
std::string FirstError(const Json& j) {
  auto d = Parse(j.dump());
  if (d.ok()) return "parsed";
  return d.errors().front().code + " " + d.errors().front().pointer;
}

TEST(UserOpDefinitions, TheExampleDefinesItsOpAndUsesIt) {
  auto d = Parse(Example().dump());
  ASSERT_TRUE(d.ok()) << d.errors().front().Format();
  ASSERT_NE(d->ops, nullptr);
  const ops::OpSpec* spec = d->ops->Find("jacobi5");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->kind, ops::OpKind::kUser);
  ASSERT_NE(spec->user, nullptr);
  EXPECT_EQ(spec->user->shape_of, "u");
  EXPECT_EQ(spec->user->pointer, "/ops/jacobi5");
  EXPECT_EQ(spec->tolerance, policy::ToleranceClass::kTight);
  ASSERT_EQ(spec->ports.size(), 1u);
  EXPECT_EQ(spec->ports[0].name, "u");
  EXPECT_EQ(spec->user->definition_hash.rfind("sha256:", 0), 0u);
  // The built-in table is left as it was: the document's ops live in its own copy.
  EXPECT_EQ(ops::BuiltinOps()->Find("jacobi5"), nullptr);
  // A document without ops keeps the table it was given.
  Json plain = Example();
  plain.erase("ops");
  plain["nodes"][1] = {{"id", 1}, {"op", "relu"}, {"a", 0}};
  auto p = Parse(plain.dump());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ops, nullptr);
}

TEST(UserOpDefinitions, NeedsProtocolVersionSix) {
  Json j = Example();
  j["version"] = 5;
  j.erase("repeat");
  EXPECT_EQ(FirstError(j), "field-newer-than-version /ops");
}

TEST(UserOpDefinitions, ANameClashWithABuiltInIsRefused) {
  Json j = Example();
  j["ops"]["add"] = j["ops"]["jacobi5"];
  EXPECT_EQ(FirstError(j), "op-name-taken /ops/add");
  Json main = Example();
  main["ops"]["main"] = main["ops"]["jacobi5"];
  EXPECT_EQ(FirstError(main), "bad-op-name /ops/main");
}

TEST(UserOpDefinitions, DtypesArePointedAt) {
  Json j = Example();
  j["ops"]["jacobi5"]["inputs"][0]["dtype"] = "float";
  EXPECT_EQ(FirstError(j), "unknown-dtype /ops/jacobi5/inputs/0/dtype");
  j["ops"]["jacobi5"]["inputs"][0]["dtype"] = "i32";
  EXPECT_EQ(FirstError(j), "unsupported-dtype /ops/jacobi5/inputs/0/dtype");
  Json out = Example();
  out["ops"]["jacobi5"]["dtype"] = "f64";
  EXPECT_EQ(FirstError(out), "unknown-dtype /ops/jacobi5/dtype");
}

TEST(UserOpDefinitions, SignatureMistakes) {
  Json shape = Example();
  shape["ops"]["jacobi5"]["shape"] = "v";
  EXPECT_EQ(FirstError(shape), "bad-shape-rule /ops/jacobi5/shape");
  Json port = Example();
  port["ops"]["jacobi5"]["inputs"][0]["name"] = "op";
  EXPECT_EQ(FirstError(port), "bad-port-name /ops/jacobi5/inputs/0/name");
  Json twice = Example();
  twice["ops"]["jacobi5"]["inputs"].push_back({{"name", "U"}});
  EXPECT_EQ(FirstError(twice), "bad-port-name /ops/jacobi5/inputs/1/name");
  Json rank = Example();
  rank["ops"]["jacobi5"]["inputs"][0]["rank"] = -1;
  EXPECT_EQ(FirstError(rank), "bad-rank /ops/jacobi5/inputs/0/rank");
  Json field = Example();
  field["ops"]["jacobi5"]["backward"] = "none";
  EXPECT_EQ(FirstError(field), "unknown-field /ops/jacobi5/backward");
}

TEST(UserOpDefinitions, WgslMistakes) {
  Json missing = Example();
  missing["ops"]["jacobi5"].erase("wgsl");
  EXPECT_EQ(FirstError(missing), "missing-wgsl /ops/jacobi5/wgsl");

  Json binding = Example();
  binding["ops"]["jacobi5"]["wgsl"] =
      "@group(0) @binding(0) var<storage, read> u: array<f32>;\n"
      "fn jacobi5(index: u32) -> f32 { return u[index]; }\n";
  auto b = Parse(binding.dump());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.errors().front().code, "user-wgsl-binding");
  EXPECT_EQ(b.errors().front().pointer, "/ops/jacobi5/wgsl");
  EXPECT_NE(b.errors().front().message.find("line 1"), std::string::npos);

  Json entry = Example();
  entry["ops"]["jacobi5"]["wgsl"] =
      "fn jacobi5(index: u32) -> f32 { return 1.0; }\n"
      "@compute @workgroup_size(64)\nfn go() {}\n";
  auto e = Parse(entry.dump());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.errors().front().code, "user-wgsl-entry-point");
  EXPECT_NE(e.errors().front().message.find("line 2"), std::string::npos);

  // A word inside a comment is no declaration; a missing function is named.
  Json comment = Example();
  comment["ops"]["jacobi5"]["wgsl"] =
      "// no @binding here\nfn jacobi(index: u32) -> f32 { return 1.0; }\n";
  EXPECT_EQ(FirstError(comment), "user-wgsl-missing-function /ops/jacobi5/wgsl");
}

TEST(UserOpDefinitions, ReferenceMistakes) {
  Json missing = Example();
  missing["ops"]["jacobi5"].erase("reference");
  EXPECT_EQ(FirstError(missing), "missing-reference /ops/jacobi5/reference");

  // A reference is made of built-in ops only, checked as any graph's nodes are.
  Json unknown = Example();
  unknown["ops"]["jacobi5"]["reference"]["nodes"][3]["op"] = "plus";
  EXPECT_EQ(FirstError(unknown), "unknown-op /ops/jacobi5/reference/nodes/3");
  Json dangling = Example();
  dangling["ops"]["jacobi5"]["reference"]["nodes"][3]["b"] = 42;
  EXPECT_EQ(FirstError(dangling), "dangling-reference /ops/jacobi5/reference/nodes/3/b");
  Json output = Example();
  output["ops"]["jacobi5"]["reference"]["output"] = 42;
  auto o = Parse(output.dump());
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.errors().front().pointer, "/ops/jacobi5/reference/output");

  Json input = Example();
  input["ops"]["jacobi5"]["reference"]["nodes"][0]["name"] = "v";
  EXPECT_EQ(FirstError(input), "bad-reference-input /ops/jacobi5/reference/nodes/0");
  Json shaped = Example();
  shaped["ops"]["jacobi5"]["reference"]["nodes"][0]["shape"] = {3, 3};
  EXPECT_EQ(FirstError(shaped), "bad-reference-input /ops/jacobi5/reference/nodes/0/shape");
}

}  // namespace
}  // namespace scellis::doc
