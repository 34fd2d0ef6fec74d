// Provenance links on seed 000's center-columns workflow: mean, sub, matmul, each its own kernel
// (mean and matmul are not elementwise; the sub sits between them).
#include "pipeline/links.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace scellis::pipeline {
namespace {

std::string Example(const std::string& name) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ProvenanceLinks, KernelsAndStepsLeadBackToDocumentNodes) {
  auto c = Compile(Example("center_columns.json"), CompileOptions{});
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  Json links = ProvenanceLinks(*c);

  // Every WebIR node of this forward graph came from a document node.
  ASSERT_EQ(links["webir"].size(), c->graph->nodes.size());
  for (const Json& w : links["webir"]) EXPECT_FALSE(w["doc"].is_null()) << w.dump();

  // Each kernel names the document nodes of the WebIR nodes it computes.
  std::map<std::string, std::set<std::string>> by_op;
  for (const Json& k : links["kernels"]) {
    const kernel::Kernel& kernel = c->module->kernels[k["kernel"].get<size_t>()];
    EXPECT_EQ(k["name"], kernel.name);
    EXPECT_EQ(k["webir"].get<std::vector<int>>(), kernel.nodes);
    for (const Json& id : k["doc"]) by_op[kernel.op].insert(id.get<std::string>());
  }
  EXPECT_EQ(by_op["mean"], std::set<std::string>{"mean"});
  EXPECT_EQ(by_op["matmul"], std::set<std::string>{"y"});

  // One step per kernel here, in order; the reverse map agrees.
  ASSERT_EQ(links["steps"].size(), c->plan->steps.size());
  for (size_t s = 0; s < c->plan->steps.size(); ++s)
    EXPECT_EQ(links["steps"][s]["kernel"], c->plan->steps[s].kernel);
  ASSERT_TRUE(links["doc"].contains("y"));
  const Json& y = links["doc"]["y"];
  ASSERT_EQ(y["kernels"].size(), 1u);
  EXPECT_EQ(c->module->kernels[y["kernels"][0].get<size_t>()].op, "matmul");
  ASSERT_EQ(y["steps"].size(), 1u);
  // The input and the param compute nothing: no kernel, but a WebIR node.
  ASSERT_TRUE(links["doc"].contains("x"));
  EXPECT_TRUE(links["doc"]["x"]["kernels"].empty());
  EXPECT_EQ(links["doc"]["x"]["webir"].size(), 1u);
}

}  // namespace
}  // namespace scellis::pipeline
