// The roll-up of a traced loop and the document made from a trace, on traces worked by hand:
// which stretch is the loop, what it carries, what stays invariant, when an outside read shortens
// it, the document with its state and prologue, and the refusals.
#include "doc/traced_document.h"

#include <gtest/gtest.h>

#include <random>

namespace scellis::doc {
namespace {

Json Node(const std::string& op, Json fields = Json::object()) {
  fields["op"] = op;
  return fields;
}

// A trace with ids set to each node's place.
Json Trace(std::vector<Json> nodes, std::vector<int64_t> outputs, Json ports = Json::object()) {
  Json list = Json::array();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_object()) nodes[i]["id"] = i;
    list.push_back(nodes[i]);
  }
  return {{"nodes", list}, {"outputs", outputs}, {"ports", ports}};
}

std::optional<TracedLoop> Found(const Json& trace) {
  auto found = FindTracedLoop(trace);
  EXPECT_TRUE(found.ok()) << (found.ok() ? "" : found.errors().front().Format());
  return found.ok() ? *found : std::nullopt;
}

// Jacobi's shape: u = relu(u + q) `sweeps` times; u is carried, q read by every copy as it is.
Json Sweeps(int sweeps, bool read_middle_copy = false) {
  std::vector<Json> nodes = {Node("input", {{"name", "u"}}), Node("input", {{"name", "q"}})};
  int64_t u = 0;
  for (int s = 0; s < sweeps; ++s) {
    nodes.push_back(Node("add", {{"a", u}, {"b", 1}}));
    nodes.push_back(Node("relu", {{"a", static_cast<int64_t>(nodes.size()) - 1}}));
    u = static_cast<int64_t>(nodes.size()) - 1;
  }
  std::vector<int64_t> outputs = {u};
  // A second output reading the third sweep's result: the copies after it cannot be rolled in.
  if (read_middle_copy) {
    nodes.push_back(Node("mul", {{"a", 7}, {"b", 7}}));
    outputs.push_back(static_cast<int64_t>(nodes.size()) - 1);
  }
  return Trace(nodes, outputs);
}

TEST(TracedDocument, AnUnrolledLoopBecomesItsBodyWithWhatItCarries) {
  for (int sweeps : {2, 5, 40}) {
    auto loop = Found(Sweeps(sweeps));
    ASSERT_TRUE(loop) << sweeps;
    EXPECT_EQ(loop->start, 2);
    EXPECT_EQ(loop->length, 2);
    EXPECT_EQ(loop->count, sweeps);
    // The first copy's add reads u (node 0) as state, replaced by the previous copy's relu (3);
    // its read of q is invariant.
    EXPECT_EQ(loop->carry, (std::vector<std::pair<int64_t, int64_t>>{{0, 3}}));
    ASSERT_EQ(loop->carried.size(), 1u);
    EXPECT_EQ(loop->carried[0].first, 2);
    EXPECT_EQ(loop->carried[0].second, (PortSlot{"a", -1}));
    EXPECT_EQ(ToJson(loop),
              Json::parse(R"({"start": 2, "length": 2, "count": )" + std::to_string(sweeps) +
                          R"(, "carry": [[0, 3]], "carried": [[2, "a"]]})"));
  }
}

TEST(TracedDocument, AReadOfAMiddleCopyEndsTheLoopThere) {
  // Five sweeps; node 7 is the third sweep's relu (2 + 3 * 2 - 1), read after the loop, so no
  // copy before the one holding it may be rolled in. One sweep a copy, that is three copies (6
  // nodes); two sweeps a copy, two copies (8 nodes), the second holding the third sweep: the
  // longer cover wins, and the fifth sweep stays as it is.
  auto loop = Found(Sweeps(5, true));
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->start, 2);
  EXPECT_EQ(loop->length, 4);
  EXPECT_EQ(loop->count, 2);
  // Without that read the five sweeps roll up whole.
  EXPECT_EQ(Found(Sweeps(5))->count, 5);
}

TEST(TracedDocument, ATraceWithNoRepeatedBodyHasNoLoop) {
  auto none = Found(Trace(
      {Node("input", {{"name", "x"}}), Node("relu", {{"a", 0}}), Node("add", {{"a", 1}, {"b", 0}})},
      {2}));
  EXPECT_FALSE(none);
  EXPECT_TRUE(ToJson(none).is_null());
  // Equal ops whose attributes differ are not copies of one body.
  auto scales =
      Found(Trace({Node("input", {{"name", "x"}}), Node("mul", {{"a", 0}, {"b", 0}}),
                   Node("cast", {{"a", 1}, {"dtype", "f16"}}), Node("mul", {{"a", 2}, {"b", 2}}),
                   Node("cast", {{"a", 3}, {"dtype", "f32"}})},
                  {4}));
  EXPECT_FALSE(scales);
}

TEST(TracedDocument, TwoPiecesOfStateSwappedEachCopyAndAListPort) {
  // [u, v] = [v + u, concat([u, v])]: the body reads both as state; the concat's list entries
  // are read one by one.
  std::vector<Json> nodes = {Node("input", {{"name", "u"}}), Node("input", {{"name", "v"}})};
  int64_t u = 0, v = 1;
  for (int s = 0; s < 4; ++s) {
    nodes.push_back(Node("add", {{"a", v}, {"b", u}}));
    nodes.push_back(Node("concat", {{"inputs", {u, v}}, {"axis", 0}}));
    u = static_cast<int64_t>(nodes.size()) - 2;
    v = static_cast<int64_t>(nodes.size()) - 1;
  }
  auto loop = Found(Trace(nodes, {u, v}));
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->start, 2);
  EXPECT_EQ(loop->length, 2);
  EXPECT_EQ(loop->count, 4);
  // The add's ports in the table's order (a, then b): v (1) first, then u (0).
  EXPECT_EQ(loop->carry, (std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {0, 2}}));
  EXPECT_EQ(ToJson(loop).at("carried"),
            Json::parse(R"([[2, "a"], [2, "b"], [3, "inputs", 0], [3, "inputs", 1]])"));
}

TEST(TracedDocument, AUserOpsPortsComeWithTheTrace) {
  std::vector<Json> nodes = {Node("input", {{"name", "u"}})};
  for (int s = 0; s < 3; ++s) nodes.push_back(Node("stencil5", {{"u", s}, {"note", "kept"}}));
  auto loop = Found(Trace(nodes, {3}, {{"stencil5", {"u"}}}));
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->count, 3);
  EXPECT_EQ(loop->carry, (std::vector<std::pair<int64_t, int64_t>>{{0, 1}}));
  // Without its ports the op is unknown.
  auto unknown = FindTracedLoop(Trace(nodes, {3}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.errors()[0].code, "unknown-op");
  EXPECT_EQ(unknown.errors()[0].pointer, "/nodes/1/op");
}

TEST(TracedDocument, AMalformedTraceIsNamedAtItsNode) {
  auto refused = [](const Json& trace) {
    auto r = FindTracedLoop(trace);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.errors()[0].code + " " + r.errors()[0].pointer;
  };
  EXPECT_EQ(refused(Json::array()), "bad-trace ");
  EXPECT_EQ(refused(Trace({Node("input"), Node("relu", {{"a", 1}})}, {1})), "bad-trace /nodes/1/a");
  EXPECT_EQ(refused(Trace({Node("input"), Node("relu", {{"a", "0"}})}, {1})),
            "bad-trace /nodes/1/a");
  EXPECT_EQ(refused(Trace({Node("input"), Node("concat", {{"inputs", {0, 5}}})}, {1})),
            "bad-trace /nodes/1/inputs/1");
  EXPECT_EQ(refused(Trace({Node("input")}, {3})), "bad-trace /outputs/0");
  EXPECT_EQ(refused(Trace({Node("input"), Json::array()}, {0})), "bad-trace /nodes/1");
}

// A random chain of unary ops repeated a random number of times after a random prefix: the
// roll-up finds the body from its first copy, at its shortest period, and every copy.
TEST(TracedDocument, RandomBodiesAreFoundWhole) {
  std::mt19937 rng(std::random_device{}());
  const char* ops[] = {"relu", "neg", "exp", "tanh"};
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Json> nodes = {Node("input", {{"name", "x"}})};
    const int prefix = static_cast<int>(rng() % 3), length = 1 + static_cast<int>(rng() % 6);
    const int copies = 2 + static_cast<int>(rng() % 8);
    std::vector<std::string> body;
    for (int j = 0; j < length; ++j) body.push_back(ops[rng() % 4]);
    for (int p = 0; p < prefix; ++p)
      nodes.push_back(Node("sqrt", {{"a", static_cast<int64_t>(nodes.size()) - 1}}));
    for (int c = 0; c < copies; ++c)
      for (const std::string& op : body)
        nodes.push_back(Node(op, {{"a", static_cast<int64_t>(nodes.size()) - 1}}));
    const int64_t last = static_cast<int64_t>(nodes.size()) - 1;
    auto loop = Found(Trace(nodes, {last}));
    ASSERT_TRUE(loop) << trial;
    // The smallest period of the body decides the length found: a body that is one op repeated
    // rolls up as that op alone.
    int period = length;
    for (int p = 1; p < length; ++p) {
      bool repeats = length % p == 0;
      for (int j = p; repeats && j < length; ++j) repeats = body[j] == body[j - p];
      if (repeats) {
        period = p;
        break;
      }
    }
    EXPECT_EQ(loop->length, period) << trial;
    EXPECT_EQ(loop->count, length * copies / period) << trial;
    EXPECT_EQ(loop->start, 1 + prefix) << trial;
    EXPECT_EQ(loop->carry.size(), 1u) << trial;
  }
}

// The document of a trace: `types` all [2] f32, every node needing version 1.
Json Documented(Json trace, const std::string& name = "") {
  const size_t n = trace.at("nodes").size();
  trace["types"] = Json::array();
  trace["needs"] = Json::array();
  for (size_t i = 0; i < n; ++i) {
    trace["types"].push_back(Json::array({{2}, "f32"}));
    trace["needs"].push_back(1);
  }
  if (!name.empty()) trace["name"] = name;
  auto made = TracedDocument(trace);
  EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.errors().front().Format());
  return made.ok() ? *made : Json();
}

TEST(TracedDocument, TheDocumentCarriesTheStateAndComputesItsStartInAPrologue) {
  // total = u * u, then three times: u = u + q; total = total + u. Worked by hand: the body is
  // nodes 3-4; u (node 0) is read by the mul too, so its state is a param of its own ("u.state",
  // uploaded from the argument u); total starts from the mul, which the prologue computes.
  Json trace = Trace({Node("input", {{"name", "u"}}), Node("input", {{"name", "q"}}),
                      Node("mul", {{"a", 0}, {"b", 0}}), Node("add", {{"a", 0}, {"b", 1}}),
                      Node("add", {{"a", 2}, {"b", 3}}), Node("add", {{"a", 3}, {"b", 1}}),
                      Node("add", {{"a", 4}, {"b", 5}}), Node("add", {{"a", 5}, {"b", 1}}),
                      Node("add", {{"a", 6}, {"b", 7}})},
                     {});
  trace["returns"] = Json::parse(R"([["u", 7], ["total", 8]])");
  trace["inputs"] = {"u", "q"};
  const Json made = Documented(trace, "acc");
  EXPECT_EQ(made, Json::parse(R"({
    "doc": {"version": 5, "name": "acc", "repeat": 3, "nodes": [
      {"id": 0, "op": "param", "name": "u.state", "shape": [2], "dtype": "f32",
       "init": {"kind": "zeros"}, "carry": "u"},
      {"id": 1, "op": "param", "name": "start.0", "shape": [2], "dtype": "f32",
       "init": {"kind": "zeros"}, "carry": "total"},
      {"id": 2, "op": "input", "name": "q"},
      {"id": 3, "op": "add", "a": 0, "b": 2},
      {"id": 4, "op": "add", "a": 1, "b": 3}],
      "outputs": [{"name": "u", "id": 3}, {"name": "total", "id": 4}]},
    "repeat": 3, "fed": {"q": "q"}, "state": {"u.state": "u", "start.0": "start.0"},
    "prologue": {"doc": {"version": 1, "name": "acc",
                         "nodes": [{"id": 0, "op": "input", "name": "u"},
                                   {"id": 2, "op": "mul", "a": 0, "b": 0}],
                         "outputs": [{"name": "start.0", "id": 2}]},
                 "inputs": ["u"], "outputs": ["start.0"]}})"))
      << made.dump(1);
}

TEST(TracedDocument, ALoopTracedOnceAndATraceWithoutOne) {
  // loop(10, relu, u): the body (node 1) traced once; u is read only as state, so its param takes
  // the argument's name, and the input node goes.
  Json once = Trace({Node("input", {{"name", "u"}}), Node("relu", {{"a", 0}})}, {});
  once["returns"] = Json::parse(R"([["out", 1]])");
  once["inputs"] = {"u"};
  once["loop"] = Json::parse(R"({"start": 1, "length": 1, "count": 10, "carry": [[0, 1]]})");
  const Json made_once = Documented(once);
  // Its carried read, [1, "a"], found by the engine, is the one given explicitly.
  once["loop"]["carried"] = Json::parse(R"([[1, "a"]])");
  EXPECT_EQ(Documented(once), made_once);
  EXPECT_EQ(made_once, Json::parse(R"({
    "doc": {"version": 5, "repeat": 10, "nodes": [
      {"id": 0, "op": "param", "name": "u", "shape": [2], "dtype": "f32",
       "init": {"kind": "zeros"}, "carry": "out"},
      {"id": 1, "op": "relu", "a": 0}],
      "outputs": [{"name": "out", "id": 1}]},
    "repeat": 10, "fed": {}, "state": {"u": "u"}, "prologue": null})"));
  // relu(u) + u: nothing repeats, so the document is the trace, every input fed.
  Json plain = Trace(
      {Node("input", {{"name", "u"}}), Node("relu", {{"a", 0}}), Node("add", {{"a", 1}, {"b", 0}})},
      {});
  plain["returns"] = Json::parse(R"([["out", 2]])");
  plain["inputs"] = {"u"};
  const Json made = Documented(plain);
  EXPECT_EQ(made.at("doc").at("nodes"), plain.at("nodes"));
  EXPECT_EQ(made.at("doc").at("version"), 1);
  EXPECT_EQ(made.at("repeat"), 1);
  EXPECT_EQ(made.at("fed"), Json::parse(R"({"u": "u"})"));
  EXPECT_FALSE(made.at("doc").contains("repeat"));
}

TEST(TracedDocument, ADocumentsRefusals) {
  Json once = Trace({Node("input", {{"name", "u"}}), Node("relu", {{"a", 0}})}, {});
  once["returns"] = Json::parse(R"([["out", 1]])");
  once["inputs"] = {"u"};
  once["types"] = Json::parse(R"([[null, "f32"], [null, "f32"]])");
  once["needs"] = {1, 1};
  once["loop"] = Json::parse(
      R"({"start": 1, "length": 1, "count": 4, "carry": [[0, 1]], "carried": [[1, "a"]]})");
  auto code = [](const Json& trace) {
    auto r = TracedDocument(trace);
    return r.ok() ? std::string("ok") : r.errors()[0].code + " " + r.errors()[0].pointer;
  };
  EXPECT_EQ(code(once), "unknown-shape /nodes/0");
  Json wrong_read = once;
  wrong_read["types"] = Json::parse(R"([[[2], "f32"], [[2], "f32"]])");
  EXPECT_EQ(code(wrong_read), "ok");
  wrong_read["loop"]["carried"] = Json::parse(R"([[1, "b"]])");
  EXPECT_EQ(code(wrong_read), "bad-trace /loop/carried");
  Json no_returns = once;
  no_returns.erase("returns");
  EXPECT_EQ(code(no_returns), "bad-trace /returns");
  Json short_types = wrong_read;
  short_types["types"] = Json::parse(R"([[[2], "f32"]])");
  EXPECT_EQ(code(short_types), "bad-trace ");
}

}  // namespace
}  // namespace scellis::doc
