// Rung 2: the printer, broadcasting rules, version gating, the op registry's completeness and the
// verifier.
#include "support/graph.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "kernel/emit/wgsl/codegen.h"
#include "kernel/ref/ref.h"
#include "webir/graph.h"
#include "webir/op_rules.h"

namespace scellis::webir {
namespace {

using scellis::testing::CompileAndRun;
using scellis::testing::GraphDoc;
using scellis::testing::InputNode;
using scellis::testing::ProdOptions;

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Result<Graph> LowerToWebir(const std::string& text) {
  pipeline::CompileOptions o = ProdOptions();
  o.up_to = pipeline::Rung::kWebir;
  auto c = pipeline::Compile(text, o);
  if (!c.ok()) return c.status();
  return std::move(*c->graph);
}

TEST(WebirPrint, CenterColumns) {
  auto g = LowerToWebir(ReadExample("center_columns.json"));
  ASSERT_TRUE(g.ok()) << g.errors().front().Format();
  // Names are padded to the longest (%mean), right-hand sides to the longest (the sub); the
  // broadcast operand is marked; shapes keep the document's symbols.
  const char* expected =
      "graph \"center_columns\"  tier=prod  tolerance=default\n"
      "  %x    = input \"dataset\"          shape [N, D]  dtype f32\n"
      "  %w    = param \"weights\"          shape [D, K]  dtype f32\n"
      "  %mean = mean %x axis=0           shape [D]  dtype f32\n"
      "  %xc   = sub %x, broadcast %mean  shape [N, D]  dtype f32\n"
      "  %y    = matmul %xc, %w           shape [N, K]  dtype f32\n"
      "  output y = %y\n"
      "  output centered = %xc\n";
  EXPECT_EQ(Print(g.value()), expected);
  EXPECT_TRUE(Verify(g.value()).ok());
}

TEST(WebirPrint, ScalarFormBecomesARankZeroConstant) {
  auto g = LowerToWebir(
      GraphDoc({InputNode(0, {2}, {1, 2}), {{"id", 1}, {"op", "mul"}, {"a", 0}, {"scalar", 0.5}}},
               {{"y", 1}})
          .dump());
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->nodes.size(), 3u);
  const Node& c = g->nodes[1];
  EXPECT_EQ(c.op, "full");
  EXPECT_EQ(c.role, Role::kConst);
  EXPECT_EQ(c.type.rank(), 0);
  EXPECT_EQ(c.origin, "/nodes/1/scalar");
  EXPECT_EQ(g->nodes[2].args, (std::vector<int>{0, 1}));
  EXPECT_FALSE(g->nodes[2].attrs.contains("scalar"));
  std::string text = Print(g.value());
  EXPECT_NE(text.find("= full 0.5"), std::string::npos) << text;
  EXPECT_NE(text.find("mul %0, broadcast %t1"), std::string::npos) << text;
}

// ---- broadcasting ----

std::vector<Dim> Dims(std::vector<int64_t> sizes, std::vector<std::string> symbols = {}) {
  std::vector<Dim> d;
  for (size_t i = 0; i < sizes.size(); ++i)
    d.push_back({sizes[i], i < symbols.size() ? symbols[i] : ""});
  return d;
}

std::vector<int64_t> Sizes(const std::optional<std::vector<Dim>>& d) {
  std::vector<int64_t> s;
  for (const Dim& x : *d) s.push_back(x.size);
  return s;
}

TEST(Broadcast, NumpyRules) {
  EXPECT_EQ(Sizes(BroadcastDims(Dims({2, 3}), Dims({3}))), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Sizes(BroadcastDims(Dims({4, 1}), Dims({1, 5}))), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(Sizes(BroadcastDims(Dims({2, 1, 3}), Dims({4, 1}))), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(Sizes(BroadcastDims(Dims({}), Dims({7, 2}))), (std::vector<int64_t>{7, 2}));
  EXPECT_EQ(Sizes(BroadcastDims(Dims({1}), Dims({0}))), (std::vector<int64_t>{0}));
  EXPECT_EQ(Sizes(BroadcastDims(Dims({1, 1, 1, 1}), Dims({5}))),
            (std::vector<int64_t>{1, 1, 1, 5}));
  EXPECT_FALSE(BroadcastDims(Dims({2, 3}), Dims({2})).has_value());
  EXPECT_FALSE(BroadcastDims(Dims({3, 4}), Dims({4, 3})).has_value());
  EXPECT_FALSE(BroadcastDims(Dims({2}), Dims({0})).has_value());
}

TEST(Broadcast, KeepsSymbols) {
  auto d = BroadcastDims(Dims({4, 1}, {"N", ""}), Dims({1, 3}, {"", "D"}));
  ASSERT_TRUE(d);
  EXPECT_EQ((*d)[0].symbol, "N");
  EXPECT_EQ((*d)[1].symbol, "D");
}

TEST(Broadcast, Strides) {
  EXPECT_EQ(BroadcastStrides({3}, {2, 3}), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(BroadcastStrides({4, 1}, {4, 5}), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(BroadcastStrides({2, 1, 3}, {2, 4, 3}), (std::vector<int64_t>{3, 0, 1}));
  EXPECT_EQ(BroadcastStrides({}, {2, 2}), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(RowMajorStrides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
}

TEST(Broadcast, RunsLikeNumpy) {
  // [2,1,3] - [4,1] -> [2,4,3]: out[i][j][k] = a[i][0][k] - b[j][0].
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30, 40};
  auto r = CompileAndRun(GraphDoc({InputNode(0, {2, 1, 3}, a),
                                   InputNode(1, {4, 1}, b),
                                   {{"id", 2}, {"op", "sub"}, {"a", 0}, {"b", 1}}},
                                  {{"y", 2}}, 2)
                             .dump());
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].second.type.sizes(), (std::vector<int64_t>{2, 4, 3}));
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) want.push_back(a[i * 3 + k] - b[j]);
  EXPECT_EQ(r.outputs[0].second.ToFloats(), want);
}

TEST(Broadcast, GatedByVersion) {
  auto v1 = LowerToWebir(GraphDoc({InputNode(0, {2, 3}, {1, 2, 3, 4, 5, 6}),
                                   InputNode(1, {3}, {1, 2, 3}),
                                   {{"id", 2}, {"op", "add"}, {"a", 0}, {"b", 1}}},
                                  {{"y", 2}}, 1)
                             .dump());
  ASSERT_FALSE(v1.ok());
  EXPECT_EQ(v1.errors().front().code, "op-newer-than-version");
  EXPECT_NE(v1.errors().front().help.find("\"version\": 2"), std::string::npos);
  auto v2 = LowerToWebir(GraphDoc({InputNode(0, {2, 3}, {1, 2, 3, 4, 5, 6}),
                                   InputNode(1, {3}, {1, 2, 3}),
                                   {{"id", 2}, {"op", "add"}, {"a", 0}, {"b", 1}}},
                                  {{"y", 2}}, 2)
                             .dump());
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->nodes[2].type.sizes(), (std::vector<int64_t>{2, 3}));
}

// ---- the registry ----

TEST(OpTable, VersionOneIsTheProtocolsFixedSet) {
  std::set<std::string> v1;
  for (const ops::OpSpec& d : ops::BuiltinOps()->ops())
    if (d.min_version == 1) v1.insert(d.name);
  EXPECT_EQ(v1, (std::set<std::string>{"input", "param", "full", "add", "sub", "mul", "relu",
                                       "positive", "transpose", "matmul", "sum", "life"}));
}

TEST(OpTable, NamesAreUniqueAndDescribed) {
  std::set<std::string> names;
  for (const ops::OpSpec& d : ops::BuiltinOps()->ops()) {
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_FALSE(d.summary.empty()) << d.name;
    if (d.kind != OpKind::kSource) {
      EXPECT_NE(FindRule(d.name), nullptr) << d.name << " has no type rule";
      EXPECT_FALSE(d.determinism.empty()) << d.name;
    }
  }
}

// Three q4_k blocks with d = 1 (f16 0x3c00), every scale 1 and every quant 1: weights of 1.
std::vector<int> QuantBlocksOfOnes() {
  std::vector<int> bytes;
  for (int blk = 0; blk < 3; ++blk) {
    std::vector<int> b(144, 0);
    b[1] = 0x3c;
    for (int j = 0; j < 4; ++j) b[4 + j] = 1;        // sc of sub-blocks 0..3
    for (int j = 0; j < 4; ++j) b[12 + j] = 1;       // sc of sub-blocks 4..7 (low bits)
    for (int l = 0; l < 128; ++l) b[16 + l] = 0x11;  // q = 1 in both nibbles
    bytes.insert(bytes.end(), b.begin(), b.end());
  }
  return bytes;
}

// An example use of every non-source op; a new op without one fails this test, so it cannot land
// without a CPU reference and a WGSL kernel being exercised.
Json ExampleNode(const ops::OpSpec& d) {
  // Ports bind to: 0 and 1 (2x3 positive data), 3 (3x2), 4 (two labels), 5 (a scalar), 6 (a
  // step), 7 (a 2x3 bool mask), 8 (two i32 indices into axis 0 of a 2x3), 9 (a 2x3 of them).
  Json n = {{"id", 2}, {"op", d.name}};
  for (const ops::Port& p : d.ports) {
    const std::string& port = p.name;
    const bool list_index = d.name == "index_select" || d.name == "index_add";
    n[port] = p.role == ops::PortRole::kIndex                ? (list_index ? 8 : 9)
              : p.dtypes == std::vector<DType>{DType::kBool} ? 7
              : port == "a" || port == "param" || port == "m" || port == "velocity" ? 0
              : port == "target"                                                    ? 4
              : port == "t" || port == "step"                                       ? 6
              : port == "b" && d.kind == OpKind::kLoss                              ? 5
                                                                                    : 1;
  }
  for (const ops::Attr& a : d.attrs)
    if (a.as_operand) n[a.name] = 1.25;
  if (d.name == "cast") n["dtype"] = "bool";
  if (d.name == "uniform") n["shape"] = {2, 3};
  if (d.name == "matmul") n["b"] = 3;
  if (d.name == "matmul_fixed") {  // a 2x3 by a 3x2 of i32
    n["a"] = 9;
    n["b"] = 12;
    n["frac_bits"] = 1;
  }
  if (d.name == "matmul_q") {  // a 2x256 by three rows of q4_k blocks
    n["a"] = 10;
    n["b"] = 11;
  }
  if (d.name == "permute") n["dims"] = {1, 0};
  if (d.name == "reshape") n["shape"] = {3, 2};
  // The whole 2x3 tensor with its columns reversed, so slice_scatter's src (1) fits it.
  if (d.name == "slice" || d.name == "slice_scatter") {
    n["starts"] = {0, -1};
    n["steps"] = {1, -1};
  }
  if (d.name == "flip") n["axes"] = {1};
  for (const ops::Port& p : d.ports)
    if (p.list) n[p.name] = {0, 1, 0};  // a list port: two 2x3 tensors, one of them twice
  if (d.name == "shift") n["shifts"] = {1, -1};
  if (d.name == "butterfly") {  // the two rows swapped
    n["mask"] = 1;
    n["axis"] = 0;
  }
  if (d.name == "arange") n["shape"] = {2, 3};
  if (!d.ports.empty() && d.ports[0].dtypes == std::vector<DType>{DType::kI32, DType::kU32}) {
    n["a"] = 9;  // bit operations: 2x3 of i32
    n["b"] = 9;
  }
  if (d.name == "pad") n["pads"] = {{1, 0}, {0, 2}};
  if (d.name == "sum" || d.name == "mean" || d.name == "cumsum") n["axis"] = 1;
  if (d.kind == OpKind::kIndex) n["axis"] = 0;
  return n;
}

TEST(OpTable, EveryOpRunsThroughTheLadder) {
  int checked = 0;
  for (const ops::OpSpec& d : ops::BuiltinOps()->ops()) {
    if (d.kind == OpKind::kSource) continue;
    SCOPED_TRACE(d.name);
    const bool integer_only = !d.ports.empty() && d.ports[0].dtypes ==
                                                      std::vector<DType>{DType::kI32, DType::kU32};
    if (d.kind == OpKind::kElementwise && integer_only) {
      // Bit operations exist for integers only (the WGSL is checked by running the op below).
      EXPECT_NE(kernel::ref::FindIntegerScalar(d.name), nullptr) << "no CPU reference";
    } else if (d.kind == OpKind::kElementwise) {
      const kernel::ref::ScalarImpl* s = kernel::ref::FindScalar(d.name);
      ASSERT_NE(s, nullptr) << "no CPU reference";
      EXPECT_EQ(static_cast<size_t>(s->arity), d.Arity());
      EXPECT_FALSE(kernel::wgsl::ElementwiseExpr(d.name, "a", "b", "c").empty())
          << "no WGSL expression";
    } else if (d.kind == OpKind::kNeighbour || d.kind == OpKind::kPosition) {
      // Both fused-kernel generators (reference and WGSL) load permuted, or compute the index,
      // for these ops by name.
      EXPECT_TRUE(d.name == "shift" || d.name == "butterfly" || d.name == "arange")
          << "a positional op the fused kernels do not know";
    } else {
      EXPECT_NE(kernel::ref::FindOp(d.name), nullptr) << "no CPU reference";
    }
    // Positive inputs keep log and sqrt finite.
    Json doc =
        GraphDoc({InputNode(0, {2, 3}, {0.5f, 1, 1.5f, 2, 2.5f, 3}),
                  InputNode(1, {2, 3}, {3, 2.5f, 2, 1.5f, 1, 0.5f}),
                  InputNode(3, {3, 2}, {1, 2, 3, 4, 5, 6}),
                  InputNode(4, {2}, {0, 2}),
                  InputNode(5, {}, {1.5f}),
                  InputNode(6, {}, {2}),
                  {{"id", 7},
                   {"op", "input"},
                   {"shape", {2, 3}},
                   {"dtype", "bool"},
                   {"data", {1, 0, 0, 1, 1, 0}}},
                  {{"id", 8}, {"op", "input"}, {"shape", {2}}, {"dtype", "i32"}, {"data", {1, 0}}},
                  {{"id", 9},
                   {"op", "input"},
                   {"shape", {2, 3}},
                   {"dtype", "i32"},
                   {"data", {1, 0, 1, 0, 0, 1}}},
                  InputNode(10, {2, 256}, std::vector<float>(512, 0.5f)),
                  {{"id", 11}, {"op", "input"}, {"shape", {3, 256}}, {"dtype", "q4_k"},
                   {"data", QuantBlocksOfOnes()}},
                  {{"id", 12}, {"op", "input"}, {"shape", {3, 2}}, {"dtype", "i32"},
                   {"data", {1, -2, 3, 4, -5, 6}}},
                  ExampleNode(d)},
                 {{"y", 2}}, std::max(2, d.min_version));
    auto c = pipeline::Compile(doc.dump(), ProdOptions());
    ASSERT_TRUE(c.ok()) << c.errors().front().Format();
    ASSERT_FALSE(c->module->kernels.empty());
    for (const kernel::Kernel& k : c->module->kernels) {
      EXPECT_NE(k.Wgsl().source.find("@compute"), std::string::npos) << k.name;
      EXPECT_NE(k.Wgsl().source.find("fn main"), std::string::npos) << k.name;
    }
    runtime::cpu::CpuExecutor exec({.threads = 1});
    auto r = exec.Run(*c->plan, {});
    ASSERT_TRUE(r.ok()) << r.errors().front().Format();
    for (float v : r->outputs[0].second.ToFloats()) EXPECT_TRUE(std::isfinite(v));
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

// A list longer than one kernel binds is lowered as a tree of list ops of at most kMaxListArgs
// entries each; the elements still come out in list order (hand-checked: entry k holds 2k, 2k+1).
TEST(ListOps, LongListsBecomeATreeOfKernelsThatFit) {
  for (const char* op : {"concat", "stack"}) {
    SCOPED_TRACE(op);
    const bool stack = std::string(op) == "stack";
    std::vector<Json> nodes;
    std::vector<int> entries;
    for (int k = 0; k < 17; ++k) {
      nodes.push_back(InputNode(k, stack ? std::vector<int64_t>{2} : std::vector<int64_t>{1, 2},
                                {2.0f * k, 2.0f * k + 1}));
      entries.push_back(k);
    }
    nodes.push_back({{"id", 17}, {"op", op}, {"inputs", entries}, {"axis", 0}});
    const std::string text = GraphDoc(nodes, {{"y", 17}}, 4).dump();
    auto g = LowerToWebir(text);
    ASSERT_TRUE(g.ok()) << g.errors().front().Format();
    int list_nodes = 0;
    for (const Node& n : g->nodes) {
      if (n.op != "concat" && n.op != "stack") continue;
      ++list_nodes;
      EXPECT_LE(n.args.size(), kMaxListArgs) << n.name;
    }
    EXPECT_EQ(list_nodes, 4);  // runs of 7, 7 and 3 entries, then one joining the three
    EXPECT_EQ(g->at(g->outputs[0].node).type.sizes(), (std::vector<int64_t>{17, 2}));
    runtime::RunResult r = CompileAndRun(text);
    ASSERT_EQ(r.outputs.size(), 1u);
    std::vector<float> want;
    for (int v = 0; v < 34; ++v) want.push_back(static_cast<float>(v));
    EXPECT_EQ(r.outputs[0].second.ToFloats(), want);
  }
}

// ---- the verifier ----

TEST(WebirVerify, CatchesCorruptedGraphs) {
  auto g = LowerToWebir(ReadExample("center_columns.json"));
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(Verify(g.value()).ok());

  Graph forward = g.value();
  forward.nodes[2].args[0] = 4;  // mean reads the matmul after it
  Status s = Verify(forward);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.first().kind, ErrorKind::kInternal);
  EXPECT_NE(s.first().message.find("webir.Verify"), std::string::npos);

  Graph self = g.value();
  self.nodes[3].args[1] = 3;  // reads itself
  EXPECT_FALSE(Verify(self).ok());

  Graph wrong_type = g.value();
  wrong_type.nodes[4].type = MakeType({4, 3});  // matmul's rule says [4, 2]
  EXPECT_FALSE(Verify(wrong_type).ok());

  Graph unknown = g.value();
  unknown.nodes[3].op = "frobnicate";
  EXPECT_FALSE(Verify(unknown).ok());

  Graph arity = g.value();
  arity.nodes[4].args.pop_back();
  EXPECT_FALSE(Verify(arity).ok());

  Graph ids = g.value();
  ids.nodes[1].id = 7;
  EXPECT_FALSE(Verify(ids).ok());

  Graph dangling = g.value();
  dangling.outputs[0].node = 99;
  EXPECT_FALSE(Verify(dangling).ok());

  // The next rung refuses a corrupted graph instead of lowering it.
  EXPECT_FALSE(kernel::FromWebir(std::make_shared<const Graph>(forward)).ok());
}

}  // namespace
}  // namespace scellis::webir
