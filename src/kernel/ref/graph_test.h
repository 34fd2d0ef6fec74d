// Shared by the reference's tests that build WebIR graphs by hand: inputs and ops typed by the
// ops' own rules, so a test graph is the graph the ladder would make.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "webir/graph.h"
#include "webir/op_rules.h"

namespace scellis::kernel::ref::testing {

inline int Input(webir::Graph& g, const std::string& name, const std::vector<int64_t>& shape) {
  webir::Node n;
  n.op = "input";
  n.role = webir::Role::kInput;
  n.name = n.label = name;
  n.type = MakeType(shape);
  return g.Add(std::move(n));
}

inline int Op(webir::Graph& g, const std::string& op, std::vector<int> args,
              const Json& attrs = Json::object()) {
  const webir::OpRule* rule = webir::FindRule(op);
  webir::InferContext c;
  for (int a : args) c.args.push_back(g.at(a).type);
  c.attrs = attrs;
  c.version = 2;
  auto t = rule->infer(c);
  EXPECT_TRUE(t.ok()) << op << ": " << (t.ok() ? "" : t.errors()[0].message);
  webir::Node n;
  n.op = op;
  n.args = std::move(args);
  n.attrs = c.attrs;
  n.type = t.ok() ? t.value() : TensorType{};
  return g.Add(std::move(n));
}

}  // namespace scellis::kernel::ref::testing
