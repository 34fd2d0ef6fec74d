// liveness and memory-classes: lifetimes and classes of a small graph, worked by hand.
#include <gtest/gtest.h>

#include "base/atomic_file.h"
#include "execplan/passes/passes.h"
#include "support/graph.h"

namespace scellis::execplan {
namespace {

using scellis::testing::GraphDoc;
using scellis::testing::InputNode;

// The plan of `doc` before any plan pass ran.
Plan Unplanned(const std::string& text, std::set<std::string> disabled = {}) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.print_after = "emit-wgsl";
  o.disabled_passes = std::move(disabled);
  auto c = pipeline::Compile(text, o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return FromKernel(c->module, o.plan).value();
}

// A loop (repeat 4): %2 = matmul(q, q) reads nothing carried, so it is hoisted and computed once;
// the body is %3 = matmul(u, %2), %4 = matmul(%3, %3), %5 = neg(%4) carried back into u.
std::string LoopDocument() {
  Json u = InputNode(0, {2, 2}, {1, 2, 3, 4});
  u["name"] = "u";
  u["carry"] = "u_next";
  Json doc = GraphDoc({u, InputNode(1, {2, 2}, {0.5, 0, 0, 0.5}),
                       {{"id", 2}, {"op", "matmul"}, {"a", 1}, {"b", 1}},
                       {{"id", 3}, {"op", "matmul"}, {"a", 0}, {"b", 2}},
                       {{"id", 4}, {"op", "matmul"}, {"a", 3}, {"b", 3}},
                       {{"id", 5}, {"op", "neg"}, {"a", 4}}},
                      {{"u_next", 5}}, 5);
  doc["repeat"] = 4;
  return doc.dump();
}

TEST(LivenessPass, AHoistedValueLivesThroughTheWholeBody) {
  for (bool hoisted : {true, false}) {
    SCOPED_TRACE(hoisted ? "hoisted" : "not hoisted");
    // Unfused, so that every matmul and the neg are steps of their own.
    Plan p = Unplanned(LoopDocument(), hoisted ? std::set<std::string>{"fuse-matmul-epilogue"}
                                               : std::set<std::string>{"hoist-loop-invariants",
                                                                       "fuse-matmul-epilogue"});
    ASSERT_EQ(p.steps.size(), 4u);
    EXPECT_EQ(p.module().HoistedKernels(), hoisted ? 1 : 0);
    ASSERT_TRUE(Liveness(p).ok());
    // Read by step 1 only; hoisted, the next iteration's step 1 reads it again.
    EXPECT_EQ(p.lifetimes[2].last_read, hoisted ? 3 : 1);
    ASSERT_TRUE(MemoryClasses(p).ok());
    ASSERT_TRUE(AssignBuffers(p).ok());
    // Recomputed every iteration, its buffer is free for %4 once step 1 read it; hoisted, never.
    EXPECT_EQ(p.buffer_of[4] == p.buffer_of[2], !hoisted);
    EXPECT_TRUE(Verify(p).ok());
    if (hoisted) {
      // Had %4 taken the hoisted value's buffer, the second iteration would read it clobbered.
      p.steps[2].write = p.buffer_of[4] = p.buffer_of[2];
      p.steps[3].reads = {p.buffer_of[2]};
      EXPECT_FALSE(Verify(p).ok());
    }
  }
}

TEST(LivenessPass, LifetimesOfASmallGraph) {
  // step 0: %1 = relu(x); step 1: %2 = matmul(%1, x); step 2: %3 = neg(%2), the output.
  Json doc = GraphDoc({InputNode(0, {2, 2}, {1, -2, 3, -4}),
                       {{"id", 1}, {"op", "relu"}, {"a", 0}},
                       {{"id", 2}, {"op", "matmul"}, {"a", 1}, {"b", 0}},
                       {{"id", 3}, {"op", "neg"}, {"a", 2}}},
                      {{"y", 3}}, 2);
  Plan p = Unplanned(doc.dump(), {"fuse-matmul-epilogue"});
  ASSERT_EQ(p.steps.size(), 3u);
  ASSERT_TRUE(Liveness(p).ok());
  ASSERT_EQ(p.lifetimes.size(), 4u);
  auto is = [&](int node, int written, int last_read) {
    EXPECT_TRUE(p.lifetimes[node].stored) << node;
    EXPECT_EQ(p.lifetimes[node].written, written) << node;
    EXPECT_EQ(p.lifetimes[node].last_read, last_read) << node;
  };
  is(0, -1, 1);  // a source, read by steps 0 and 1
  is(1, 0, 1);
  is(2, 1, 2);
  is(3, 2, -1);  // the output, read by no step
}

TEST(LivenessPass, FoldedValuesAreNotStored) {
  // exp(x) is folded into neg's kernel: it never needs a buffer.
  Json doc = GraphDoc({InputNode(0, {3}, {1, 2, 3}),
                       {{"id", 1}, {"op", "exp"}, {"a", 0}},
                       {{"id", 2}, {"op", "neg"}, {"a", 1}}},
                      {{"y", 2}}, 2);
  Plan p = Unplanned(doc.dump());
  ASSERT_TRUE(Liveness(p).ok());
  EXPECT_FALSE(p.lifetimes[1].stored);
  EXPECT_EQ(p.lifetimes[0].last_read, 0);
  EXPECT_EQ(p.lifetimes[2].written, 0);

  Plan unfused = Unplanned(doc.dump(), {"fuse-elementwise"});
  ASSERT_TRUE(Liveness(unfused).ok());
  EXPECT_TRUE(unfused.lifetimes[1].stored);
  EXPECT_EQ(unfused.lifetimes[1].written, 0);
  EXPECT_EQ(unfused.lifetimes[1].last_read, 1);
}

TEST(MemoryClassesPass, ClassesOfATrainingStep) {
  auto text = ReadFile(std::string(SCELLIS_SOURCE_DIR) + "/examples/mlp_step.json", 1 << 20);
  ASSERT_TRUE(text.ok());
  Plan p = Unplanned(text.value());
  ASSERT_TRUE(MemoryClasses(p).ok());
  const webir::Graph& g = p.graph();
  auto class_of = [&](const std::string& name) {
    for (const webir::Node& n : g.nodes)
      if (n.name == name) return p.class_of[n.id];
    ADD_FAILURE() << "no node %" << name;
    return MemClass::kWorking;
  };
  EXPECT_EQ(class_of("w1"), MemClass::kParameters);
  EXPECT_EQ(class_of("x"), MemClass::kInputs);
  EXPECT_EQ(class_of("w1@m"), MemClass::kOptimizerState);  // moments fed back each step
  EXPECT_EQ(class_of("hidden"), MemClass::kActivations);   // relu's output, read by its gradient
  EXPECT_EQ(class_of("xw1"), MemClass::kWorking);          // read only by the forward add
  EXPECT_EQ(class_of("d_w1"), MemClass::kGradients);
}

}  // namespace
}  // namespace scellis::execplan
