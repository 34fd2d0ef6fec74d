// One node typed on its own (webir/type_node.h): output shapes worked out by hand, the lowest
// protocol version of each form, and the diagnostics a whole document gets for the same node.
#include "webir/type_node.h"

#include <gtest/gtest.h>

#include "pipeline/compile.h"
#include "support/graph.h"

namespace scellis::webir {
namespace {

using scellis::testing::GraphDoc;
using scellis::testing::ProdOptions;

NodeInput In(const std::string& port, const std::vector<int64_t>& shape,
             DType dtype = DType::kF32) {
  return {port, MakeType(shape, dtype)};
}

OpNode MakeNode(const std::string& op, std::vector<NodeInput> inputs, Json attrs = Json::object()) {
  OpNode node;
  node.op = op;
  node.params = std::move(attrs);
  node.inputs = std::move(inputs);
  node.pointer = "/nodes/7";
  return node;
}

NodeTypes Infer(const OpNode& node) {
  auto r = InferNode(*ops::BuiltinOps(), node);
  EXPECT_TRUE(r.ok()) << r.errors().front().Format();
  return r.ok() ? r.value() : NodeTypes{};
}

// The first diagnostic as "code pointer".
std::string Refusal(const OpNode& node) {
  auto r = InferNode(*ops::BuiltinOps(), node);
  if (r.ok()) return "accepted";
  return r.errors().front().code + " " + r.errors().front().pointer;
}

TEST(InferNode, SameShapeArithmeticIsVersionOne) {
  NodeTypes t = Infer(MakeNode("add", {In("a", {2, 3}), In("b", {2, 3})}));
  EXPECT_EQ(t.type.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.type.dtype, DType::kF32);
  EXPECT_EQ(t.min_version, 1);
}

TEST(InferNode, TheScalarFormIsVersionOne) {
  NodeTypes t = Infer(MakeNode("mul", {In("a", {5}, DType::kI32)}, {{"scalar", 3}}));
  EXPECT_EQ(t.type.sizes(), (std::vector<int64_t>{5}));
  EXPECT_EQ(t.type.dtype, DType::kI32);
  EXPECT_EQ(t.min_version, 1);
}

TEST(InferNode, BroadcastingAlignsFromTheRightAndNeedsVersionTwo) {
  // [4, 1, 3] against [2, 1]: right-aligned as [1, 2, 1], so each axis takes its non-1 size.
  NodeTypes t = Infer(MakeNode("sub", {In("a", {4, 1, 3}), In("b", {2, 1})}));
  EXPECT_EQ(t.type.sizes(), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(t.min_version, 2);
  // A comparison broadcasts the same way and gives a mask.
  NodeTypes mask = Infer(MakeNode("lt", {In("a", {3, 1}), In("b", {1, 4})}));
  EXPECT_EQ(mask.type.sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(mask.type.dtype, DType::kBool);
  EXPECT_EQ(mask.min_version, 3);  // comparisons are version 3 ops
}

TEST(InferNode, MatmulBatchesBroadcastAndNeedVersionTwo) {
  NodeTypes plain = Infer(MakeNode("matmul", {In("a", {3, 4}), In("b", {4, 6})}));
  EXPECT_EQ(plain.type.sizes(), (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(plain.min_version, 1);
  // Batch dims [2, 1] and [5] broadcast to [2, 5]; the matrices are [3, 4] @ [4, 6].
  NodeTypes batched = Infer(MakeNode("matmul", {In("a", {2, 1, 3, 4}), In("b", {5, 4, 6})}));
  EXPECT_EQ(batched.type.sizes(), (std::vector<int64_t>{2, 5, 3, 6}));
  EXPECT_EQ(batched.min_version, 2);
}

TEST(InferNode, ConcatSumsTheJoinedAxis) {
  NodeTypes rows =
      Infer(MakeNode("concat", {In("inputs", {2, 3}), In("inputs", {4, 3})}, {{"axis", 0}}));
  EXPECT_EQ(rows.type.sizes(), (std::vector<int64_t>{6, 3}));
  EXPECT_EQ(rows.min_version, 4);
  NodeTypes cols =
      Infer(MakeNode("concat", {In("inputs", {2, 3}), In("inputs", {2, 5}), In("inputs", {2, 1})},
                     {{"axis", -1}}));
  EXPECT_EQ(cols.type.sizes(), (std::vector<int64_t>{2, 9}));
}

TEST(InferNode, StackInsertsANewAxisOfTheEntryCount) {
  std::vector<NodeInput> three = {In("inputs", {2, 4}), In("inputs", {2, 4}), In("inputs", {2, 4})};
  NodeTypes middle = Infer(MakeNode("stack", three, {{"axis", 1}}));
  EXPECT_EQ(middle.type.sizes(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(middle.min_version, 4);
  // axis -1 of rank-2 entries is the new last axis (rank 3).
  NodeTypes last = Infer(MakeNode("stack", three, {{"axis", -1}}));
  EXPECT_EQ(last.type.sizes(), (std::vector<int64_t>{2, 4, 3}));
}

TEST(InferNode, ReductionsDropOrKeepTheirAxis) {
  NodeTypes kept = Infer(MakeNode("sum", {In("a", {2, 3, 4})}, {{"axis", 1}, {"keepdim", true}}));
  EXPECT_EQ(kept.type.sizes(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(kept.min_version, 2);
  NodeTypes dropped = Infer(MakeNode("mean", {In("a", {2, 3, 4})}, {{"axis", -1}}));
  EXPECT_EQ(dropped.type.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(dropped.min_version, 2);
  NodeTypes whole = Infer(MakeNode("sum", {In("a", {2, 3, 4})}));
  EXPECT_EQ(whole.type.sizes(), std::vector<int64_t>{});
  EXPECT_EQ(whole.min_version, 1);
}

TEST(InferNode, TheOpsOwnVersionCounts) {
  // where is a version 3 op even on operands of one shape; arange a version 6 one.
  NodeTypes w =
      Infer(MakeNode("where", {In("cond", {3}, DType::kBool), In("a", {3}), In("b", {3})}));
  EXPECT_EQ(w.type.sizes(), (std::vector<int64_t>{3}));
  EXPECT_EQ(w.min_version, 3);
  NodeTypes r = Infer(MakeNode("arange", {}, {{"shape", {2, 5}}, {"axis", 1}, {"dtype", "u32"}}));
  EXPECT_EQ(r.type.sizes(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(r.type.dtype, DType::kU32);
  EXPECT_EQ(r.min_version, 6);
}

TEST(InferNode, ABadNodeGetsTheEngineDiagnosticAtItsPointer) {
  EXPECT_EQ(Refusal(MakeNode("add", {In("a", {2, 3}), In("b", {4})})), "shape-mismatch /nodes/7");
  EXPECT_EQ(Refusal(MakeNode("concat", {In("inputs", {2, 3}), In("inputs", {2, 3}, DType::kI32)},
                             {{"axis", 0}})),
            "dtype-mismatch /nodes/7/inputs/1");
  EXPECT_EQ(Refusal(MakeNode("frobnicate", {In("a", {2})})), "unknown-op /nodes/7");
  // A source of values used as an op says what it is and how to declare it.
  auto source = InferNode(*ops::BuiltinOps(), MakeNode("input", {In("a", {2})}));
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.errors().front().code, "unknown-op");
  EXPECT_NE(source.errors().front().message.find("\"input\" is a source of values"),
            std::string::npos)
      << source.errors().front().Format();
  EXPECT_NE(source.errors().front().help.find("Graph.input"), std::string::npos);
  EXPECT_EQ(Refusal(MakeNode("matmul", {In("a", {2, 3})})), "missing-input /nodes/7");
  EXPECT_EQ(Refusal(MakeNode("relu", {In("a", {2})}, {{"alpha", 1}})),
            "unknown-attribute /nodes/7/alpha");
  EXPECT_EQ(Refusal(MakeNode("sum", {In("a", {2, 3})}, {{"axis", 2}})), "bad-axis /nodes/7");
  OpNode empty = MakeNode("stack", {});
  empty.empty_lists = {"inputs"};
  EXPECT_EQ(Refusal(empty), "empty-input-list /nodes/7/inputs");
}

TEST(TypeOpNode, RefusesAFormNewerThanTheLabel) {
  const OpNode batched = MakeNode("matmul", {In("a", {2, 3, 4}), In("b", {4, 6})});
  auto old = TypeOpNode(*ops::BuiltinOps(), batched, 1);
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.errors().front().code, "op-newer-than-version");
  EXPECT_TRUE(TypeOpNode(*ops::BuiltinOps(), batched, 2).ok());
}

// The node on its own and the node in a document meet the same code: the same diagnostic, word
// for word, at the same pointer.
TEST(InferNode, ItsDiagnosticIsTheDocumentsOwn) {
  Json doc = GraphDoc({{{"id", 0}, {"op", "input"}, {"shape", {2, 3}}},
                       {{"id", 1}, {"op", "input"}, {"shape", {4}}},
                       {{"id", 2}, {"op", "add"}, {"a", 0}, {"b", 1}}},
                      {{"y", 2}}, 2);
  pipeline::CompileOptions o = ProdOptions();
  o.up_to = pipeline::Rung::kWebir;
  auto whole = pipeline::Compile(doc.dump(), o);
  ASSERT_FALSE(whole.ok());
  OpNode alone = MakeNode("add", {In("a", {2, 3}), In("b", {4})});
  alone.pointer = "/nodes/2";
  alone.where = whole.errors().front().where;
  auto r = InferNode(*ops::BuiltinOps(), alone);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().Format(), whole.errors().front().Format());
}

}  // namespace
}  // namespace scellis::webir
