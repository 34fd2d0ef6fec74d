// assign-buffers: values whose lifetimes do not overlap share a buffer of their class.
#include <gtest/gtest.h>

#include "execplan/passes/passes.h"
#include "support/graph.h"

namespace scellis::execplan {
namespace {

using scellis::testing::GraphDoc;
using scellis::testing::InputNode;

// x -> exp -> neg -> relu -> tanh (the output), four kernels with fusion off.
Plan ChainBeforeBuffers() {
  Json doc = GraphDoc({InputNode(0, {4}, {1, 2, 3, 4}),
                       {{"id", 1}, {"op", "exp"}, {"a", 0}},
                       {{"id", 2}, {"op", "neg"}, {"a", 1}},
                       {{"id", 3}, {"op", "relu"}, {"a", 2}},
                       {{"id", 4}, {"op", "tanh"}, {"a", 3}}},
                      {{"y", 4}}, 2);
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.print_after = "memory-classes";
  o.disabled_passes = {"fuse-elementwise"};
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return *c->plan;
}

TEST(AssignBuffersPass, NonOverlappingLifetimesShareABuffer) {
  Plan p = ChainBeforeBuffers();
  ASSERT_EQ(p.steps.size(), 4u);
  ASSERT_TRUE(AssignBuffers(p).ok());
  // %1 lives over steps 0..1, %2 over 1..2, %3 over 2..3: %3 takes %1's buffer, freed after step
  // 1; %2 overlaps both. x and the output y are pinned.
  ASSERT_EQ(p.buffers.size(), 4u) << Print(p);
  EXPECT_EQ(p.buffers[0].values, (std::vector<int>{0}));
  EXPECT_TRUE(p.buffers[0].pinned);
  EXPECT_EQ(p.buffers[1].values, (std::vector<int>{1, 3}));
  EXPECT_EQ(p.buffers[2].values, (std::vector<int>{2}));
  EXPECT_EQ(p.buffers[3].values, (std::vector<int>{4}));
  EXPECT_TRUE(p.buffers[3].pinned);
  EXPECT_EQ(p.steps[2].reads, (std::vector<int>{2}));
  EXPECT_EQ(p.steps[2].write, 1);
  // 16 bytes each: x plus at most two intermediates live at once.
  EXPECT_EQ(p.memory.allocated, 64);
  EXPECT_EQ(p.memory.peak_live, 48);
  EXPECT_EQ(p.memory.by_class[static_cast<int>(MemClass::kInputs)], 16);
  EXPECT_EQ(p.memory.by_class[static_cast<int>(MemClass::kWorking)], 48);
  EXPECT_TRUE(Verify(p).ok());
}

TEST(AssignBuffersPass, ReuseStaysWithinAClass) {
  Plan p = ChainBeforeBuffers();
  p.class_of[3] = MemClass::kGradients;  // %3 may no longer take %1's working buffer
  ASSERT_TRUE(AssignBuffers(p).ok());
  ASSERT_EQ(p.buffers.size(), 5u) << Print(p);
  EXPECT_EQ(p.buffers[1].values, (std::vector<int>{1}));
  EXPECT_EQ(p.buffers[3].values, (std::vector<int>{3}));
  EXPECT_EQ(p.buffers[3].cls, MemClass::kGradients);
}

TEST(AssignBuffersPass, NeedsLivenessFirst) {
  Plan p = ChainBeforeBuffers();
  p.lifetimes.clear();
  EXPECT_FALSE(AssignBuffers(p).ok());
}

}  // namespace
}  // namespace scellis::execplan
