// A folded row gather in a kernel's WGSL (ReadRowGathers): reads of the gathered value become
// calls that load the table's row, nested indexing included; the index binding goes after the
// inputs and the output's moves past it; any use of the value other than an element read is
// refused rather than left reading the table as if it were the gathered value.
#include <gtest/gtest.h>

#include <set>

#include "kernel/emit/wgsl/codegen.h"
#include "pipeline/compile.h"
#include "support/examples.h"

namespace scellis::kernel {
namespace {

// rows [4] (i32) pick rows of table [6, 8]; y = picked @ w. After fold-row-gathers the matmul
// binds the table (0), w (1), the index as a uniform (2) and its output (3).
struct Folded {
  std::shared_ptr<const Module> module;
  const Kernel* matmul = nullptr;
};

Folded Compile() {
  const Json doc = {
      {"version", 4},
      {"nodes",
       {{{"id", 0}, {"op", "input"}, {"name", "table"}, {"shape", {6, 8}}},
        {{"id", 1}, {"op", "input"}, {"name", "rows"}, {"shape", {4}}, {"dtype", "i32"}},
        {{"id", 2}, {"op", "index_select"}, {"a", 0}, {"index", 1}, {"axis", 0}},
        {{"id", 3}, {"op", "input"}, {"name", "w"}, {"shape", {8, 3}}},
        {{"id", 4}, {"op", "matmul"}, {"a", 2}, {"b", 3}}}},
      {"outputs", {{{"name", "y"}, {"id", 4}}}}};
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kProd;
  o.up_to = pipeline::Rung::kKernel;
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  Folded f;
  if (!c.ok()) return f;
  f.module = c->module;
  for (const Kernel& k : f.module->kernels)
    if (k.op == "matmul") f.matmul = &k;
  return f;
}

TEST(RowGathersWgsl, ReadsBecomeRowLoadsAndBindingsMovePastTheIndex) {
  Folded f = Compile();
  ASSERT_NE(f.matmul, nullptr);
  ASSERT_EQ(f.module->kernels.size(), 1u) << Print(*f.module);
  const Kernel& k = *f.matmul;
  ASSERT_EQ(k.row_gathers.size(), 1u);
  EXPECT_EQ(k.row_gathers[0].input, 0);
  EXPECT_EQ(k.row_gathers[0].index, 2);
  EXPECT_TRUE(k.UniformInput(2));

  const std::string source =
      "@group(0) @binding(0) var<storage, read> in0: array<f32>;\n"
      "@group(0) @binding(1) var<storage, read> in1: array<f32>;\n"
      "@group(0) @binding(2) var<storage, read_write> out: array<f32>;\n"
      "fn f(i: u32) -> f32 { return in0[u32(in1[i])] + in0[in0_x[i]] + rein0[1u]; }\n";
  auto read = wgsl::ReadRowGathers(*f.module, k, source);
  ASSERT_TRUE(read.ok()) << read.errors().front().Format();
  const std::string& s = *read;
  EXPECT_NE(s.find("@group(0) @binding(2) var<uniform> row_index2: array<vec4<i32>, 1>;"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("@group(0) @binding(3) var<storage, read_write> out"), std::string::npos) << s;
  // Only in0 is rewritten (not in0_x or rein0), nested brackets closing where they opened.
  EXPECT_NE(s.find("return gathered_in0(u32(in1[i])) + gathered_in0(in0_x[i]) + rein0[1u];"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("return in0[u32(row_index2[p / 4u][p % 4u]) * 8u + e % 8u];"), std::string::npos)
      << s;

  // The gathered value used as a whole (its length, a pointer) cannot be read from the table.
  auto whole = wgsl::ReadRowGathers(*f.module, k,
                                    "@group(0) @binding(0) var<storage, read> in0: array<f32>;\n"
                                    "fn n() -> u32 { return arrayLength(&in0); }\n");
  EXPECT_FALSE(whole.ok());
}

// The main job's step with its train split held on the device, under each way its readers may be
// emitted — the loss in row stages with the gradient's product (the default), the loss merged with
// its gradient, the two apart, the products without epilogues or updates — folds every gather and
// emits every reader: the rewrite refuses a source it cannot read through, so each compile that
// succeeds emitted them all.
TEST(RowGathersWgsl, EveryReaderOfTheStepReadsThroughItsGathers) {
  const std::vector<std::set<std::string>> variants = {
      {},
      {"fuse-gradient-product-into-loss"},
      {"fuse-gradient-product-into-loss", "merge-loss-gradient"},
      {"fuse-matmul-epilogue", "fuse-optimizer-into-gradient"}};
  for (const std::set<std::string>& disabled : variants) {
    pipeline::CompileOptions o;
    o.lower.tier = policy::Tier::kProd;
    o.lower.dataset_examples_on_device = 1000;
    o.up_to = pipeline::Rung::kKernel;
    o.disabled_passes = disabled;
    auto c = pipeline::Compile(scellis::testing::FashionMlp(), o);
    ASSERT_TRUE(c.ok()) << c.errors().front().Format();
    size_t gathers = 0;
    for (const Kernel& k : c->module->kernels) {
      EXPECT_NE(k.op, "index_select") << k.name;
      EXPECT_FALSE(k.Wgsl().source.empty()) << k.name;
      gathers += k.row_gathers.size();
    }
    // The images' rows by the first product and the first weight's gradient; the labels by the
    // loss, and by its gradient where that is a kernel of its own.
    EXPECT_GE(gathers, 3u) << Print(*c->module);
  }
}

}  // namespace
}  // namespace scellis::kernel
