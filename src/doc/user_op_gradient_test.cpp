// A user op's gradient in its definition: each port's becomes an op of the document's table, and
// every way it can be wrong is refused by name at its JSON pointer.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "doc/document.h"
#include "doc/user_ops.h"

namespace scellis::doc {
namespace {

Json Example() {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/user_ops/softplus_mlp.json");
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

std::string FirstError(const Json& j) {
  auto d = Parse(j.dump());
  if (d.ok()) return "parsed";
  return d.errors().front().code + " " + d.errors().front().pointer;
}

TEST(UserOpGradients, EachPortsGradientIsAnOpOfTheTable) {
  auto d = Parse(Example().dump());
  ASSERT_TRUE(d.ok()) << d.errors().front().Format();
  const ops::OpSpec* forward = d->ops->Find("softplus");
  ASSERT_NE(forward, nullptr);
  EXPECT_TRUE(forward->differentiable);
  ASSERT_EQ(forward->user->gradients.size(), 1u);
  EXPECT_EQ(forward->user->gradients[0].port, "x");
  EXPECT_EQ(forward->user->gradients[0].op, "softplus_grad_x");
  const ops::OpSpec* g = d->ops->Find("softplus_grad_x");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->kind, ops::OpKind::kUser);
  ASSERT_EQ(g->ports.size(), 2u);
  EXPECT_EQ(g->ports[1].name, "grad");
  EXPECT_EQ(g->user->pointer, "/ops/softplus/gradient/x");
  EXPECT_EQ(g->user->shape_of, "x");
  EXPECT_EQ(g->user->gradient_of, "softplus");
  EXPECT_NE(g->user->definition_hash, forward->user->definition_hash);
  // The declared rank of x holds for the upstream gradient too (it has the output's shape).
  ASSERT_EQ(g->user->ranks.size(), 2u);
  EXPECT_EQ(g->user->ranks[1].port, "grad");
  EXPECT_EQ(g->user->ranks[1].rank, 2);
}

TEST(UserOpGradients, WrongGradientsAreRefusedAtTheirPointers) {
  auto with = [](auto change) {
    Json j = Example();
    change(j["ops"]["softplus"]);
    return FirstError(j);
  };
  EXPECT_EQ(with([](Json& op) { op["gradient"] = Json::array(); }),
            "bad-gradient /ops/softplus/gradient");
  EXPECT_EQ(with([](Json& op) { op["gradient"]["y"] = op["gradient"]["x"]; }),
            "bad-gradient-port /ops/softplus/gradient/y");
  EXPECT_EQ(with([](Json& op) { op["gradient"]["x"].erase("wgsl"); }),
            "missing-wgsl /ops/softplus/gradient/x/wgsl");
  EXPECT_EQ(with([](Json& op) {
              op["gradient"]["x"]["wgsl"] = "fn softplus_d(index: u32) -> f32 { return 0.0; }";
            }),
            "user-wgsl-missing-function /ops/softplus/gradient/x/wgsl");
  EXPECT_EQ(with([](Json& op) { op["gradient"]["x"].erase("reference"); }),
            "missing-reference /ops/softplus/gradient/x/reference");
  EXPECT_EQ(with([](Json& op) { op["gradient"]["x"]["reference"]["nodes"][1]["name"] = "g"; }),
            "bad-reference-input /ops/softplus/gradient/x/reference/nodes/1");
  EXPECT_EQ(with([](Json& op) { op["gradient"]["x"]["reference"]["nodes"][2]["op"] = "nope"; }),
            "unknown-op /ops/softplus/gradient/x/reference/nodes/2");
  EXPECT_EQ(with([](Json& op) { op["gradient"]["x"]["extra"] = 1; }),
            "unknown-field /ops/softplus/gradient/x/extra");
  // The upstream gradient's port name is the gradient's.
  EXPECT_EQ(with([](Json& op) {
              op["inputs"][0]["name"] = "grad";
              op["shape"] = "grad";
              op["reference"]["nodes"][0]["name"] = "grad";
            }),
            "bad-port-name /ops/softplus/gradient");
  // The gradient's op takes a name another op already has.
  Json taken = Example();
  taken["ops"]["softplus_grad_x"] = taken["ops"]["softplus"];
  taken["ops"]["softplus_grad_x"].erase("gradient");
  std::string wgsl = taken["ops"]["softplus_grad_x"]["wgsl"];
  wgsl.replace(wgsl.find("fn softplus("), 12, "fn softplus_grad_x(");
  taken["ops"]["softplus_grad_x"]["wgsl"] = wgsl;
  EXPECT_EQ(FirstError(taken), "op-name-taken /ops/softplus_grad_x");
}

}  // namespace
}  // namespace scellis::doc
