// A user op's gradient end to end (examples/user_ops/softplus_mlp.json): autodiff emits the
// gradient's own user op, which runs its reference on the CPU and its WGSL on a WebGPU device (Dawn
// on SwiftShader). The gradient of a sum of softplus is hand-worked (sigmoid, in float64); an MLP
// trained through the op follows the same losses as the MLP written with built-ins; conformance
// proves the gradient's WGSL and grad-checks its reference against finite differences of the
// forward reference, and a wrong gradient fails it with its first mismatching element named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "api/conform.h"
#include "api/run.h"
#include "conform/user_gradcheck.h"
#include "doc/document.h"

namespace scellis::api {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSwiftShaderIcd = "/usr/lib/chromium/vk_swiftshader_icd.json";

Json Example() {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/user_ops/softplus_mlp.json");
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

// The example with the softplus block written with built-ins: log(exp(pre) + 1).
Json WithBuiltins() {
  Json j = Example();
  j.erase("ops");
  Json nodes = Json::array();
  for (const Json& n : j["nodes"]) {
    if (n["id"] != "hidden") {
      nodes.push_back(n);
      continue;
    }
    nodes.push_back({{"id", "e"}, {"type", "exp"}});
    nodes.push_back(
        {{"id", "one"}, {"type", "full"}, {"params", {{"shape", Json::array()}, {"value", 1}}}});
    nodes.push_back({{"id", "e1"}, {"type", "add"}});
    nodes.push_back({{"id", "hidden"}, {"type", "log"}});
  }
  j["nodes"] = nodes;
  Json wires = Json::array();
  for (const Json& w : j["wires"]) {
    if (w["to"] == "hidden.x") {
      wires.push_back({{"from", "pre"}, {"to", "e.a"}});
      wires.push_back({{"from", "e"}, {"to", "e1.a"}});
      wires.push_back({{"from", "one"}, {"to", "e1.b"}});
      wires.push_back({{"from", "e1"}, {"to", "hidden.a"}});
    } else {
      wires.push_back(w);
    }
  }
  j["wires"] = wires;
  return j;
}

uint64_t Seed() {
  static const uint64_t seed = [] {
    const char* s = std::getenv("SCELLIS_USER_OPS_SEED");
    uint64_t v = s && *s ? std::strtoull(s, nullptr, 10) : std::random_device{}();
    std::cout << "user-op-grad seed " << v << " (replay with SCELLIS_USER_OPS_SEED=" << v << ")\n";
    return v;
  }();
  return seed;
}

std::string Describe(const std::vector<Diagnostic>& errors) {
  std::string out;
  for (const Diagnostic& d : errors) out += d.Format() + "\n";
  return out;
}

class UserOpGrad : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
      setenv("VK_ICD_FILENAMES", kSwiftShaderIcd, 1);
  }
  void SetUp() override {
    store_ = fs::temp_directory_path() / ("scellis-user-op-grad-" + std::to_string(::getpid()));
    fs::remove_all(store_);
  }
  void TearDown() override { fs::remove_all(store_); }

  Result<RunReport> Train(const std::string& backend, const Json& doc, int steps,
                          std::vector<std::string> history = {"loss"}) {
    RunOptions o;
    o.select = {.requested = backend, .allow_software_adapter = true};
    o.store_root = store_.string();
    o.steps = steps;
    o.history = std::move(history);
    return api::Run(doc.dump(), o);
  }

  Result<ConformReport> ConformDoc(const Json& doc) {
    ConformOptions o;
    o.tier = "prod";
    o.ops = {"softplus"};
    o.seed = Seed();
    o.document = doc.dump();
    o.select = {.requested = "webgpu", .allow_software_adapter = true};
    o.store_root = store_.string();
    return Conform(o);
  }

  static std::vector<float> History(const RunReport& r, const std::string& name) {
    std::vector<float> out;
    for (const auto& [n, steps] : r.history)
      if (n == name)
        for (const runtime::HostTensor& t : steps) out.push_back(t.ToFloats().at(0));
    return out;
  }

  fs::path store_;
};

// loss = sum(softplus(w)) under SGD with lr 1: w@next = w - sigmoid(w), sigmoid worked in
// float64 from w's values (a fresh seed), on the reference and on the device.
TEST_F(UserOpGrad, GradientOfASumIsSigmoidHandWorked) {
  Json j = Example();
  j["dims"] = {{"N", 7}};
  j["ops"]["softplus"]["inputs"][0].erase("rank");
  j["nodes"] = Json::array(
      {{{"id", "w"},
        {"type", "param"},
        {"params",
         {{"name", "w"},
          {"shape", {"N"}},
          {"init", {{"kind", "uniform"}, {"low", -3}, {"high", 3}, {"seed", Seed() % 100000}}}}}},
       {{"id", "s"}, {"type", "softplus"}},
       {{"id", "loss"}, {"type", "sum"}}});
  j["wires"] = Json::array({{{"from", "w"}, {"to", "s.x"}}, {{"from", "s"}, {"to", "loss.a"}}});
  j["outputs"] = Json::array({{{"name", "loss"}, {"from", "loss"}}});
  j["train"] = {{"loss", "loss"}, {"optimizer", {{"kind", "sgd"}, {"lr", 1}}}};
  for (const char* backend : {"cpu", "webgpu"}) {
    SCOPED_TRACE(backend);
    // Step 2's update from step 1's result, both read back: nothing rests on the initializer.
    auto r = Train(backend, j, 2, {"w@next"});
    ASSERT_TRUE(r.ok()) << Describe(r.errors());
    std::vector<float> w, next;
    ASSERT_EQ(r->history.size(), 1u);
    ASSERT_EQ(r->history[0].second.size(), 2u);
    w = r->history[0].second[0].ToFloats();
    next = r->history[0].second[1].ToFloats();
    ASSERT_EQ(w.size(), 7u);
    ASSERT_EQ(next.size(), 7u);
    for (size_t i = 0; i < w.size(); ++i) {
      const double sigmoid = 1 / (1 + std::exp(-double(w[i])));
      EXPECT_NEAR(double(w[i]) - double(next[i]), sigmoid, 1e-5) << "w[" << i << "] = " << w[i];
    }
  }
}

// Trained through the user op, the MLP's losses are those of the MLP written with built-ins: the
// first (before any update) bit for bit on the reference, where the op runs its reference graph;
// the later ones, through the gradients (sigmoid against autodiff of log(exp + 1)), within float
// rounding; on the device within the default class.
TEST_F(UserOpGrad, TrainingThroughTheOpFollowsTheBuiltInLosses) {
  constexpr int kSteps = 4;
  auto builtin = Train("cpu", WithBuiltins(), kSteps);
  ASSERT_TRUE(builtin.ok()) << Describe(builtin.errors());
  const std::vector<float> want = History(*builtin, "loss");
  ASSERT_EQ(want.size(), size_t{kSteps});
  EXPECT_LT(want.back(), want.front());  // it does train
  for (const char* backend : {"cpu", "webgpu"}) {
    SCOPED_TRACE(backend);
    auto user = Train(backend, Example(), kSteps);
    ASSERT_TRUE(user.ok()) << Describe(user.errors());
    const std::vector<float> got = History(*user, "loss");
    ASSERT_EQ(got.size(), want.size());
    if (std::string(backend) == "cpu") {
      EXPECT_EQ(got[0], want[0]);
    }
    const double tol = std::string(backend) == "cpu" ? 1e-6 : 1e-4;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], tol * std::fabs(want[i])) << "step " << i;
  }
}

// The gradient reference against finite differences of the forward, on the CPU alone: the right
// one passes; a wrong one (grad * exp(x) for grad * sigmoid(x)) fails at its first element.
TEST_F(UserOpGrad, GradcheckCatchesAWrongGradientReference) {
  const kernel::ref::Parallel parallel(1);
  auto check = [&](const Json& doc) {
    auto d = doc::Parse(doc.dump());
    EXPECT_TRUE(d.ok()) << Describe(d.errors());
    const ops::OpSpec* spec = d->ops->Find("softplus");
    return conform::GradcheckUserOp(*spec, *d->ops, Seed(), parallel);
  };
  const auto right = check(Example());
  ASSERT_EQ(right.size(), 2u);  // rank 2: [1, 1] and [4, 5]
  for (const conform::CaseResult& c : right) EXPECT_TRUE(c.passed()) << c.id << ": " << c.Failure();
  EXPECT_EQ(right[1].id, "softplus/gradcheck_x_r2_4x5");
  EXPECT_EQ(right[1].comparison.elements, 20);

  Json wrong = Example();
  wrong["ops"]["softplus"]["gradient"]["x"]["reference"]["nodes"][2]["op"] = "exp";
  const auto bad = check(wrong);
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_FALSE(bad[1].passed());
  EXPECT_EQ(bad[1].comparison.mismatches, 20);
  EXPECT_EQ(bad[1].first_bad_at, "[0, 0]");
  EXPECT_NE(bad[1].Failure().find("first at [0, 0]"), std::string::npos) << bad[1].Failure();
}

// On the device: the forward, the gradient's WGSL and the grad-check conform, and one receipt
// covers the op and its gradient; a gradient whose WGSL is wrong fails with the element named.
TEST_F(UserOpGrad, ConformanceCoversTheGradient) {
  auto unconformed = Train("webgpu", Example(), 1);
  ASSERT_TRUE(unconformed.ok()) << Describe(unconformed.errors());
  ASSERT_TRUE(unconformed->receipts);
  EXPECT_EQ(unconformed->receipts->ToJson()["user_ops"]["softplus"], "unconformed");

  auto report = ConformDoc(Example());
  ASSERT_TRUE(report.ok()) << Describe(report.errors());
  ASSERT_EQ(report->groups.size(), 1u);
  const conform::GroupResult& g = report->groups[0];
  int forward = 0, gradient = 0, gradcheck = 0;
  for (const conform::CaseResult& c : g.cases) {
    EXPECT_TRUE(c.passed()) << c.id << ": " << c.Failure();
    const std::string name = c.id.substr(c.id.find('/') + 1);
    (name.starts_with("grad_x/")      ? gradient
     : name.starts_with("gradcheck_") ? gradcheck
                                      : forward)++;
  }
  EXPECT_EQ(forward, 6);
  EXPECT_EQ(gradient, 6);
  EXPECT_EQ(gradcheck, 2);

  auto conformed = Train("webgpu", Example(), 1);
  ASSERT_TRUE(conformed.ok()) << Describe(conformed.errors());
  EXPECT_EQ(conformed->receipts->ToJson()["user_ops"]["softplus"], "conformed")
      << conformed->receipts->ToJson().dump();
  // The gradient's kernel counts on the op's one receipt (the built-ins have none in this store).
  const Json receipts = conformed->receipts->ToJson();
  int user_kernels = 0;
  for (auto it = receipts["by_kernel"].begin(); it != receipts["by_kernel"].end(); ++it) {
    if (it.key().find("softplus") == std::string::npos) continue;
    ++user_kernels;
    EXPECT_EQ((*it)["needs"], Json::array({"softplus"})) << it.key();
    EXPECT_TRUE((*it)["conformed"].get<bool>()) << it.key();
  }
  EXPECT_EQ(user_kernels, 2) << receipts.dump();  // the forward and softplus_grad_x

  // sigmoid(x) read at the wrong element: the WGSL no longer matches its reference.
  Json wrong = Example();
  std::string wgsl = wrong["ops"]["softplus"]["gradient"]["x"]["wgsl"];
  wgsl.replace(wgsl.find("x_at(index)"), 11, "x_at(index + 1u)");
  wrong["ops"]["softplus"]["gradient"]["x"]["wgsl"] = wgsl;
  auto failed = ConformDoc(wrong);
  ASSERT_TRUE(failed.ok()) << Describe(failed.errors());
  bool named = false;
  for (const conform::CaseResult& c : failed->groups.at(0).cases) {
    if (c.id != "softplus/grad_x/r2_7x13") continue;
    EXPECT_FALSE(c.passed());
    named = c.Failure().find("first at [0, 0]") != std::string::npos;
  }
  EXPECT_TRUE(named);
  EXPECT_FALSE(failed->groups.at(0).passed());
}

// A loss reaching a differentiated value through a port the definition gives no gradient for is
// refused by name, as is a gradient reference that computes another shape than its port's.
TEST_F(UserOpGrad, RefusesWhatItCannotDifferentiate) {
  Json j = Example();
  Json& op = j["ops"]["softplus"];
  op["inputs"].push_back({{"name", "y"}, {"dtype", "f32"}});
  op["reference"]["nodes"].push_back({{"id", 9}, {"op", "input"}, {"name", "y"}});
  op["reference"]["nodes"].push_back({{"id", 10}, {"op", "mul"}, {"a", 4}, {"b", 9}});
  op["reference"]["output"] = 10;
  op["wgsl"] = std::string(op["wgsl"]) + "fn unused(i: u32) -> f32 { return y_at(i); }\n";
  // The gradient's reference takes every port, y among them, and the upstream gradient.
  op["gradient"]["x"]["reference"]["nodes"].push_back({{"id", 9}, {"op", "input"}, {"name", "y"}});
  j["wires"].push_back({{"from", "pre"}, {"to", "hidden.y"}});
  auto r = Train("cpu", j, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().code, "not-differentiable") << Describe(r.errors());
  EXPECT_NE(r.errors().front().message.find("input \"y\""), std::string::npos)
      << r.errors().front().message;

  Json summed = Example();
  Json& nodes = summed["ops"]["softplus"]["gradient"]["x"]["reference"]["nodes"];
  nodes.push_back({{"id", 4}, {"op", "sum"}, {"a", 3}});
  summed["ops"]["softplus"]["gradient"]["x"]["reference"]["output"] = 4;
  auto s = Train("cpu", summed, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.errors().front().code, "user-reference-mismatch") << Describe(s.errors());
  EXPECT_EQ(s.errors().front().pointer, "/ops/softplus/gradient/x/reference");
}

}  // namespace
}  // namespace scellis::api
