// Rung 0: parsing, canonical JSON and content ids, both document forms, dependency order, and the
// verifier.
#include "doc/document.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "base/json_util.h"

namespace scellis::doc {
namespace {

const char* kSeedGraph = R"({"version":1,"nodes":[{"id":0,"op":"input","shape":[3],"data":[-2,3,4]},
    {"id":1,"op":"input","shape":[3],"data":[10,20,30]},{"id":2,"op":"mul","a":0,"b":1},
    {"id":3,"op":"relu","a":2}],"outputs":[{"name":"values","id":3}]})";

TEST(Document, ParsesSeedGraph) {
  auto d = Parse(kSeedGraph);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->form, Form::kGraph);
  EXPECT_EQ(d->version, 1);
  ASSERT_EQ(d->nodes.size(), 4u);
  EXPECT_EQ(d->outputs[0].source, "3");
  EXPECT_EQ(d->outputs[0].name, "values");
  const Node* mul = d->Find("2");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->op, "mul");
  ASSERT_EQ(mul->inputs.size(), 2u);
  EXPECT_EQ(mul->inputs[0].port, "a");
  EXPECT_EQ(mul->inputs[0].source, "0");
  EXPECT_EQ(mul->inputs[0].pointer, "/nodes/2/a");
  EXPECT_EQ(mul->inputs[1].source, "1");
  EXPECT_EQ(mul->pointer, "/nodes/2");
  // Reference fields are inputs, everything else a parameter.
  EXPECT_FALSE(mul->params.contains("a"));
  EXPECT_EQ(d->Find("0")->params["shape"], Json::parse("[3]"));
  EXPECT_TRUE(Verify(d.value()).ok());
}

// ---- canonical JSON and content ids ----

TEST(Canonical, KnownBytesAndHash) {
  Json j = Json::parse(R"({ "b": {"d": true, "c": null}, "a": [1, 2.5, "x"] })");
  EXPECT_EQ(CanonicalJson(j), R"({"a":[1,2.5,"x"],"b":{"c":null,"d":true}})");
  // SHA-256 of those bytes, computed independently.
  EXPECT_EQ(ContentId(j),
            "sha256:3f2209c9470486da010ac643a0abb7892811de0d5da1cca29f5c5a88356dce1d");
  EXPECT_EQ(ContentId(Json::object()),
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
}

TEST(Canonical, IntegralFloatsAreWrittenAsIntegers) {
  EXPECT_EQ(CanonicalJson(Json::parse("[1.0, -3.0, 0.0, 2.5, 1e3]")), "[1,-3,0,2.5,1000]");
  EXPECT_EQ(ContentId(Json::parse(R"({"v": 2.0})")), ContentId(Json::parse(R"({"v": 2})")));
}

TEST(Canonical, ContentIdIgnoresKeyOrderAndWhitespace) {
  const char* a = R"({"version":1,"nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2]}],
                     "outputs":[{"name":"x","id":0}]})";
  const char* b =
      "{\n  \"outputs\" : [ { \"id\" : 0 , \"name\" : \"x\" } ] ,\n"
      "\t\"nodes\": [ {\"data\": [1.0, 2], \"shape\": [ 2 ], \"op\": \"input\", \"id\": 0} ],\r\n"
      "  \"version\": 1 }\n";
  auto da = Parse(a), db = Parse(b);
  ASSERT_TRUE(da.ok() && db.ok());
  EXPECT_EQ(da->content_id, db->content_id);
  EXPECT_EQ(CanonicalJson(ToJson(da.value())), CanonicalJson(ToJson(db.value())));
  EXPECT_EQ(da->content_id.rfind("sha256:", 0), 0u);
  EXPECT_EQ(da->content_id.size(), 7u + 64u);

  // Any change of meaning changes the id: a value, an array order, a key.
  auto dc = Parse(R"({"version":1,"nodes":[{"id":0,"op":"input","shape":[2],"data":[2,1]}],
                     "outputs":[{"name":"x","id":0}]})");
  auto dd = Parse(R"({"version":1,"nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2]}],
                     "outputs":[{"name":"y","id":0}]})");
  ASSERT_TRUE(dc.ok() && dd.ok());
  EXPECT_NE(da->content_id, dc->content_id);
  EXPECT_NE(da->content_id, dd->content_id);
}

TEST(Canonical, NodeOrderIsMeaningButNotIdentity) {
  // Reordering nodes changes the document's bytes (so its id) but not the dependency order.
  auto a = Parse(kSeedGraph);
  Json j = Json::parse(kSeedGraph);
  std::swap(j["nodes"][0], j["nodes"][3]);
  auto b = Parse(j.dump());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->content_id, b->content_id);
  EXPECT_EQ(b->nodes.back().id, "3");
}

TEST(Canonical, PointerEscaping) {
  EXPECT_EQ(PointerJoin("/dims", "a/b~c"), "/dims/a~1b~0c");
  EXPECT_EQ(PointerJoin("/nodes", size_t{12}), "/nodes/12");
}

// ---- untrusted parsing ----

TEST(Untrusted, BracketsInsideStringsDoNotCountAsNesting) {
  std::string brackets(500, '[');
  std::string text = R"({"version":1,"name":")" + brackets + R"(\"{{{","nodes":[],"outputs":[]})";
  auto j = ParseUntrustedJson(text);
  ASSERT_TRUE(j.ok()) << j.errors().front().Format();
}

TEST(Untrusted, DepthLimitIsExact) {
  ParseLimits limits;
  limits.max_depth = 4;
  EXPECT_TRUE(ParseUntrustedJson("[[[[1]]]]", limits).ok());
  auto deep = ParseUntrustedJson("[[[[[1]]]]]", limits);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.errors().front().code, "nesting-too-deep");
}

TEST(Untrusted, DuplicateKeyInANestedObject) {
  auto j = ParseUntrustedJson(R"({"a": {"x": 1, "y": 2, "x": 3}})");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.errors().front().code, "duplicate-key");
  EXPECT_NE(j.errors().front().message.find("\"x\""), std::string::npos);
  // The same key in sibling objects is fine.
  EXPECT_TRUE(ParseUntrustedJson(R"([{"x": 1}, {"x": 2}])").ok());
}

// Parsing is linear in the number of objects: a large array of small objects (a 100,000-node
// document is one) must not cost time quadratic in its length.
TEST(Untrusted, ManyObjectsParseInLinearTime) {
  std::string text = "[{}";
  for (int i = 1; i < 400000; ++i) text += ",{\"k\":1}";
  text += "]";
  auto start = std::chrono::steady_clock::now();
  auto j = ParseUntrustedJson(text);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->size(), 400000u);
  EXPECT_LT(seconds, 10.0) << "quadratic parsing is back";
}

TEST(Untrusted, SizeCap) {
  ParseLimits limits;
  limits.max_bytes = 10;
  auto j = ParseUntrustedJson(R"({"version": 1})", limits);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.errors().front().code, "document-too-large");
}

// ---- both forms ----

const char* kWorkflow = R"({
  "format": "scellis.workflow/1", "name": "demo",
  "determinism": {"tier": "debug", "override": false}, "tolerance": "tight",
  "budget": {"memory_bytes": 4096}, "dims": {"N": 4},
  "nodes": [
    {"id": "y", "type": "add", "label": "sum of two"},
    {"id": "x", "type": "input", "params": {"name": "features", "shape": ["N"], "data": [1, 2, 3, 4]}},
    {"id": "w", "type": "full", "determinism": "fast", "params": {"shape": ["N"], "value": 2}}
  ],
  "wires": [{"from": "x.out", "to": "y.a"}, {"from": "w", "to": "y.b"}],
  "outputs": [{"name": "out", "from": "y.out"}]
})";

TEST(Workflow, ParsesEveryDeclaration) {
  auto d = Parse(kWorkflow);
  ASSERT_TRUE(d.ok()) << d.errors().front().Format();
  EXPECT_EQ(d->form, Form::kWorkflow);
  EXPECT_EQ(d->name, "demo");
  EXPECT_EQ(d->tier, policy::Tier::kDebug);
  EXPECT_FALSE(d->tier_override);
  EXPECT_EQ(d->tolerance, policy::ToleranceClass::kTight);
  EXPECT_EQ(d->budget_bytes, 4096);
  EXPECT_EQ(d->dims.at("N"), 4);
  const Node* y = d->Find("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->label, "sum of two");
  EXPECT_EQ(y->Describe(), "add \"sum of two\"");
  ASSERT_EQ(y->inputs.size(), 2u);
  EXPECT_EQ(y->inputs[0].port, "a");
  EXPECT_EQ(y->inputs[0].source, "x");
  EXPECT_EQ(y->inputs[0].pointer, "/wires/0/from");
  EXPECT_EQ(y->inputs[1].source, "w");
  EXPECT_EQ(d->Find("x")->label, "features");  // from params.name
  EXPECT_EQ(d->Find("w")->tier, policy::Tier::kFast);
  EXPECT_EQ(d->Find("w")->pointer, "/nodes/2");
  EXPECT_EQ(d->outputs[0].source, "y");
  std::string printed = Print(d.value());
  EXPECT_NE(printed.find("workflow \"demo\""), std::string::npos) << printed;
  EXPECT_NE(printed.find(d->content_id), std::string::npos);
  EXPECT_NE(printed.find("determinism debug"), std::string::npos);
  EXPECT_NE(printed.find("dim N = 4"), std::string::npos);
}

// ---- dependency order ----

TEST(Order, EveryNodeAfterItsInputsStableInDocumentOrder) {
  // Written consumers first; independent sources keep their document order.
  auto d = Parse(R"({"version":1,"nodes":[
      {"id":5,"op":"add","a":3,"b":4},
      {"id":4,"op":"relu","a":1},
      {"id":3,"op":"relu","a":2},
      {"id":2,"op":"input","shape":[1],"data":[1]},
      {"id":1,"op":"input","shape":[1],"data":[2]}],
    "outputs":[{"name":"o","id":5}]})");
  ASSERT_TRUE(d.ok());
  std::vector<std::string> order;
  for (const Node& n : d->nodes) order.push_back(n.id);
  // Each pick is the ready node written first. Ready: 2 (index 3), 1 (index 4) -> 2. Now 3
  // (index 2) is ready and written before 1 -> 3. Then 1, which readies 4, then 5.
  EXPECT_EQ(order, (std::vector<std::string>{"2", "3", "1", "4", "5"}));
  // Pointers still name where each node was written.
  EXPECT_EQ(d->Find("5")->pointer, "/nodes/0");
  EXPECT_TRUE(Verify(d.value()).ok());
}

TEST(Order, ReportsEveryProblemNotJustTheFirst) {
  auto d = Parse(R"({"version":1,"nodes":[
      {"id":0,"op":"input","shape":[1],"data":[1]},
      {"id":0,"op":"input","shape":[1],"data":[1]},
      {"id":1,"op":"relu","a":"x"},
      {"id":1,"op":"relu","a":0}],
    "outputs":[{"name":"o","id":0}]})");
  ASSERT_FALSE(d.ok());
  std::vector<std::string> codes;
  for (const Diagnostic& e : d.errors()) codes.push_back(e.code + " " + e.pointer);
  EXPECT_EQ(codes, (std::vector<std::string>{"duplicate-id /nodes/1", "bad-reference /nodes/2/a",
                                             "duplicate-id /nodes/3"}));
}

// ---- the verifier catches what Parse would never produce ----

TEST(DocVerify, CatchesCorruptedDocuments) {
  auto d = Parse(kSeedGraph);
  ASSERT_TRUE(d.ok());
  Document forward = d.value();
  std::swap(forward.nodes[2], forward.nodes[3]);  // relu before the mul it reads
  EXPECT_FALSE(Verify(forward).ok());
  EXPECT_EQ(Verify(forward).first().kind, ErrorKind::kInternal);

  Document dup = d.value();
  dup.nodes[1].id = "0";
  EXPECT_FALSE(Verify(dup).ok());

  Document dangling = d.value();
  dangling.outputs[0].source = "42";
  EXPECT_FALSE(Verify(dangling).ok());
}

// The table is a value a session may extend: its copy knows the op, and reads the op's own port
// names as references; the built-in table does not know it.
TEST(DocOps, AnExtendedTableParsesItsOwnOp) {
  const char* text = R"({"version":2,"nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2]},
    {"id":1,"op":"double_it","x":0,"factor":2}],"outputs":[{"name":"y","id":1}]})";
  ops::OpTable mine = *ops::BuiltinOps();
  ops::OpSpec twice;
  twice.name = "double_it";
  twice.min_version = 2;
  twice.ports = {ops::Port("x")};
  twice.attrs = {ops::Attr("factor", ops::AttrType::kNumber)};
  twice.summary = "x * factor";
  ASSERT_TRUE(mine.Add(twice));
  EXPECT_FALSE(mine.Add(twice)) << "a second op of one name";

  auto d = Parse(text, mine);
  ASSERT_TRUE(d.ok()) << d.errors().front().Format();
  const Node* n = d->Find("1");
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(n->inputs.size(), 1u);
  EXPECT_EQ(n->inputs[0].port, "x");
  EXPECT_EQ(n->inputs[0].source, "0");
  EXPECT_EQ(n->params, Json({{"factor", 2}}));

  auto builtin = Parse(text);
  ASSERT_FALSE(builtin.ok());
  EXPECT_EQ(builtin.errors().front().code, "unknown-op");
  EXPECT_EQ(builtin.errors().front().pointer, "/nodes/1");
  EXPECT_EQ(ops::BuiltinOps()->Find("double_it"), nullptr) << "the copy leaked into the built-in";
}

// Fields that are ports of the node's op are references; port names of other ops still are (the op
// refuses them one rung down); everything else is a parameter.
TEST(DocOps, PortsComeFromTheTable) {
  auto d = Parse(R"({"version":2,"nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2]},
    {"id":1,"op":"sum","a":0,"axis":0},{"id":2,"op":"relu","a":0,"b":1}],
    "outputs":[{"name":"y","id":2}]})");
  ASSERT_TRUE(d.ok()) << d.errors().front().Format();
  const Node* sum = d->Find("1");
  ASSERT_EQ(sum->inputs.size(), 1u);
  EXPECT_EQ(sum->params, Json({{"axis", 0}}));
  const Node* relu = d->Find("2");
  ASSERT_EQ(relu->inputs.size(), 2u);
  EXPECT_EQ(relu->inputs[1].port, "b");
}

// A list port (concat's `inputs`) gives one input per entry, in list order, each at its entry.
TEST(DocOps, AListPortGivesOneInputPerEntry) {
  auto d = Parse(R"({"version":4,"nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2]},
    {"id":1,"op":"input","shape":[1],"data":[3]},{"id":2,"op":"concat","inputs":[1,0,1]}],
    "outputs":[{"name":"y","id":2}]})");
  ASSERT_TRUE(d.ok()) << d.errors().front().Format();
  const Node* concat = d->Find("2");
  ASSERT_EQ(concat->inputs.size(), 3u);
  const char* sources[] = {"1", "0", "1"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(concat->inputs[i].port, "inputs");
    EXPECT_EQ(concat->inputs[i].source, sources[i]);
    EXPECT_EQ(concat->inputs[i].pointer, "/nodes/2/inputs/" + std::to_string(i));
  }
  EXPECT_FALSE(concat->params.contains("inputs"));
  std::string printed = Print(d.value());
  EXPECT_NE(printed.find("node 2 = concat inputs=[1, 0, 1]"), std::string::npos) << printed;

  // A workflow wires a list port once per entry, in wire order; a plain port still takes one.
  auto w = Parse(R"({"format":"scellis.workflow/1","determinism":{"tier":"prod"},
    "nodes":[{"id":"a","type":"input","params":{"shape":[2]}},
             {"id":"b","type":"input","params":{"shape":[3]}},
             {"id":"c","type":"concat","params":{"axis":0}},
             {"id":"r","type":"relu"}],
    "wires":[{"from":"b","to":"c.inputs"},{"from":"a","to":"c.inputs"},
             {"from":"c","to":"r.a"},{"from":"a","to":"r.a"}],
    "outputs":[{"name":"y","from":"c"}]})");
  ASSERT_FALSE(w.ok());
  ASSERT_EQ(w.errors().size(), 1u) << w.errors().front().Format();
  EXPECT_EQ(w.errors().front().code, "duplicate-wire");
  EXPECT_EQ(w.errors().front().pointer, "/wires/3/to");
}

TEST(DocOps, AListPortTakesANonEmptyListOfIds) {
  auto d = Parse(R"({"version":4,"nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2]},
    {"id":1,"op":"concat","inputs":[]},{"id":2,"op":"stack","inputs":0},
    {"id":3,"op":"stack","inputs":[0,-1]}],"outputs":[{"name":"y","id":1}]})");
  ASSERT_FALSE(d.ok());
  std::vector<std::string> got;
  for (const Diagnostic& e : d.errors()) got.push_back(e.code + " " + e.pointer);
  EXPECT_EQ(got, (std::vector<std::string>{"empty-input-list /nodes/1/inputs",
                                           "bad-reference /nodes/2/inputs",
                                           "bad-reference /nodes/3/inputs/1"}));
}

// Graph documents declare determinism and tolerance as workflows do, at the top and on nodes.
TEST(GraphDeclarations, DeterminismAndToleranceAreRead) {
  auto d = Parse(R"({"version":2,"determinism":{"tier":"debug","bit_exact_across_devices":true},
    "tolerance":"tight","nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2]},
    {"id":1,"op":"relu","a":0,"determinism":"prod","tolerance":"exact"}],
    "outputs":[{"name":"y","id":1}]})");
  ASSERT_TRUE(d.ok()) << d.errors().front().Format();
  EXPECT_EQ(d->tier, policy::Tier::kDebug);
  EXPECT_EQ(d->tier_pointer, "/determinism");
  EXPECT_TRUE(d->bit_exact_across_devices);
  EXPECT_EQ(d->tolerance, policy::ToleranceClass::kTight);
  const Node* relu = d->Find("1");
  EXPECT_EQ(relu->tier, policy::Tier::kProd);
  EXPECT_EQ(relu->tolerance, policy::ToleranceClass::kExact);
  EXPECT_TRUE(relu->params.empty()) << relu->params.dump();

  auto o = Parse(R"({"version":1,"determinism":{"tier":"fast","override":true},
    "nodes":[{"id":0,"op":"input","shape":[1],"data":[1]}],"outputs":[{"name":"y","id":0}]})");
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->tier_override);
  EXPECT_FALSE(o->bit_exact_across_devices);
}

TEST(GraphDeclarations, MistakesAreNamed) {
  auto code_at = [](const char* text) {
    auto d = Parse(text);
    if (d.ok()) return std::string("ok");
    return d.errors().front().code + " " + d.errors().front().pointer;
  };
  EXPECT_EQ(code_at(R"({"version":1,"nodes":[],"outputs":[],"determinsm":"prod"})"),
            "unknown-field /determinsm");
  EXPECT_EQ(code_at(R"({"version":1,"nodes":[{"id":0,"op":"input","shape":[1],
    "determinism":"strict"}],"outputs":[]})"),
            "bad-determinism-tier /nodes/0/determinism");
  EXPECT_EQ(code_at(R"({"version":1,"nodes":[{"id":0,"op":"input","shape":[1],
    "determinism":{"tier":"debug","override":true}}],"outputs":[]})"),
            "bad-determinism-tier /nodes/0/determinism/override");
  EXPECT_EQ(code_at(R"({"version":1,"nodes":[],"outputs":[],"tolerance":"tiny"})"),
            "bad-tolerance-class /tolerance");
  EXPECT_EQ(code_at(R"({"version":1,"nodes":[],"outputs":[],
    "determinism":{"tier":"debug","bit_exact":true}})"),
            "unknown-field /determinism/bit_exact");
}

TEST(Document, PaletteHasTheSourcesAndTheDatasetBlockWithTheirParams) {
  Json p = PaletteJson();
  std::map<std::string, Json> types;
  for (const Json& t : p["node_types"]) types[t["name"]] = t;
  ASSERT_TRUE(types.count("input") && types.count("param") && types.count("dataset"));
  std::vector<std::string> params;
  for (const Json& a : types["dataset"]["attrs"]) params.push_back(a["name"]);
  EXPECT_EQ(params, (std::vector<std::string>{"source", "name"}));
  EXPECT_TRUE(types["dataset"]["outputs"].empty());
  // The parser holds a dataset to the same params: another one is refused, by name.
  auto d = Parse(R"({"format": "scellis.workflow/1", "determinism": "prod",
    "nodes": [{"id": "d", "type": "dataset", "params": {"source": "fashion-mnist", "sauce": 1}}],
    "outputs": []})");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.errors().front().code, "unknown-attribute");
  EXPECT_EQ(d.errors().front().pointer, "/nodes/0/params/sauce");
  bool matmul = false;
  for (const Json& o : p["ops"]) matmul |= o["name"] == "matmul";
  EXPECT_TRUE(matmul);
}

}  // namespace
}  // namespace scellis::doc
