// A user op defined through the C++ API with a gradient whose reference is a callable
// (api/user_ops.h): softplus, its forward and its gradient (grad * sigmoid(x)) as C++ functions.
// Conformance on a WebGPU device (Dawn on SwiftShader) proves both WGSLs against their callables
// and grad-checks the gradient's callable against central differences of the forward's float64
// form on the CPU; a wrong gradient callable fails the grad-check naming its first element (the
// values want and got hand-worked from the inputs it saw); autodiff through the op trains as the
// hand-derived gradient says, on the CPU reference and on the device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <random>

#include "api/conform.h"
#include "api/run.h"
#include "api/user_ops.h"
#include "conform/user_gradcheck.h"

namespace scellis::api {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSwiftShaderIcd = "/usr/lib/chromium/vk_swiftshader_icd.json";

constexpr const char* kForwardWgsl = R"(fn softplus(index: u32) -> f32 {
  let v = x_at(index);
  return max(v, 0.0) + log(1.0 + exp(-abs(v)));
}
)";
constexpr const char* kGradientWgsl = R"(fn softplus_grad_x(index: u32) -> f32 {
  return grad_at(index) / (1.0 + exp(-x_at(index)));
}
)";
// The wrong derivative, d/dx exp(x) for d/dx log(1 + exp(x)), in the WGSL as in the callable: the
// two agree, so only the grad-check can tell.
constexpr const char* kWrongGradientWgsl = R"(fn softplus_grad_x(index: u32) -> f32 {
  return grad_at(index) * exp(x_at(index));
}
)";

double Softplus(double v) {
  return std::max(v, 0.0) + std::log1p(std::exp(-std::fabs(v)));
}
double Sigmoid(double v) {
  return 1 / (1 + std::exp(-v));
}

// An elementwise function of the inputs (in port order) as both forms of a callable reference:
// f32 host tensors (computed in double, rounded once) and float64 values.
struct Elementwise {
  std::function<double(const std::vector<double>&)> f;

  Result<HostTensor> F32(std::span<const HostTensor> in) const {
    std::vector<float> out(static_cast<size_t>(in[0].elements()));
    for (size_t i = 0; i < out.size(); ++i) {
      std::vector<double> args;
      for (const HostTensor& t : in) args.push_back(t.ValueAt(static_cast<int64_t>(i)));
      out[i] = static_cast<float>(f(args));
    }
    return HostTensor::FromFloats(in[0].type, out);
  }
  Result<ops::Float64Tensor> F64(std::span<const ops::Float64Tensor> in) const {
    ops::Float64Tensor out{in[0].sizes, std::vector<double>(in[0].values.size())};
    for (size_t i = 0; i < out.values.size(); ++i) {
      std::vector<double> args;
      for (const ops::Float64Tensor& t : in) args.push_back(t.values[i]);
      out.values[i] = f(args);
    }
    return out;
  }
};

UserOpDefinition SoftplusOp(Elementwise gradient = {[](const std::vector<double>& a) {
                              return a[1] * Sigmoid(a[0]);
                            }},
                            std::string gradient_wgsl = kGradientWgsl,
                            std::string gradient_version = "1") {
  const Elementwise forward{[](const std::vector<double>& a) { return Softplus(a[0]); }};
  UserOpDefinition d{
      .name = "softplus",
      .signature = {{"inputs", {{{"name", "x"}, {"rank", 1}}}},
                    {"shape", "x"},
                    {"tolerance", "default"},
                    {"wgsl", kForwardWgsl}},
      .reference = [forward](std::span<const HostTensor> in) { return forward.F32(in); },
      .reference_version = "1",
      .reference_f64 =
          [forward](std::span<const ops::Float64Tensor> in) { return forward.F64(in); }};
  d.gradients["x"] = {
      .wgsl = std::move(gradient_wgsl),
      .reference = [gradient](std::span<const HostTensor> in) { return gradient.F32(in); },
      .reference_f64 =
          [gradient](std::span<const ops::Float64Tensor> in) { return gradient.F64(in); },
      .reference_version = std::move(gradient_version)};
  return d;
}

std::string Describe(const std::vector<Diagnostic>& errors) {
  std::string out;
  for (const Diagnostic& d : errors) out += d.Format() + "\n";
  return out;
}

class UserOpCallableGrad : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
      setenv("VK_ICD_FILENAMES", kSwiftShaderIcd, 1);
  }
  void SetUp() override {
    store_ =
        fs::temp_directory_path() / ("scellis-user-op-callable-grad-" + std::to_string(::getpid()));
    fs::remove_all(store_);
  }
  void TearDown() override { fs::remove_all(store_); }

  const uint64_t seed_ = std::random_device{}();
  fs::path store_;
};

// The forward's and the gradient's WGSL conform against their callables on the device, the
// grad-check passes, and one receipt covers them, keyed on every WGSL and version.
TEST_F(UserOpCallableGrad, ConformsWithItsGradient) {
  auto table = DefineOps({SoftplusOp()});
  ASSERT_TRUE(table.ok()) << Describe(table.errors());
  ConformOptions o;
  o.tier = "prod";
  o.user_ops = *table;
  o.seed = seed_;
  o.select = {.requested = "webgpu", .allow_software_adapter = true};
  o.store_root = store_.string();
  auto report = Conform(o);
  ASSERT_TRUE(report.ok()) << Describe(report.errors());
  ASSERT_EQ(report->groups.size(), 1u);
  int forward = 0, gradient = 0, gradcheck = 0;
  for (const conform::CaseResult& c : report->groups[0].cases) {
    EXPECT_TRUE(c.passed()) << c.id << ": " << c.Failure() << " (seed " << seed_ << ")";
    const std::string name = c.id.substr(c.id.find('/') + 1);
    (name.starts_with("grad_x/")      ? gradient
     : name.starts_with("gradcheck_") ? gradcheck
                                      : forward)++;
  }
  EXPECT_EQ(forward, 5);  // rank 1: 1, 7, 64, 1000, 4099
  EXPECT_EQ(gradient, 5);
  EXPECT_EQ(gradcheck, 2);  // [1] and [7]
  EXPECT_EQ(report->receipts.size(), 1u);

  // The definition names each callable by its version: a new gradient version is a new op.
  const ops::UserKernel& user = *(*table)->Find("softplus")->user;
  EXPECT_EQ(user.definition["gradient"]["x"]["reference"]["callable"], "1");
  EXPECT_EQ(user.definition["gradient"]["x"]["wgsl"], kGradientWgsl);
  auto renamed = DefineOps({SoftplusOp(
      {[](const std::vector<double>& a) { return a[1] * Sigmoid(a[0]); }}, kGradientWgsl, "2")});
  ASSERT_TRUE(renamed.ok());
  EXPECT_NE((*renamed)->Find("softplus")->user->definition_hash, user.definition_hash);
  auto rewritten =
      DefineOps({SoftplusOp({[](const std::vector<double>& a) { return a[1] * Sigmoid(a[0]); }},
                            std::string(kGradientWgsl) + "// the same, rewritten\n")});
  ASSERT_TRUE(rewritten.ok());
  EXPECT_NE((*rewritten)->Find("softplus")->user->definition_hash, user.definition_hash);
}

// On the CPU alone: the right gradient callable passes the grad-check; grad * exp(x) fails it at
// its first element, got and want worked here from the inputs the callable was given.
TEST_F(UserOpCallableGrad, AWrongGradientCallableFailsTheGradcheck) {
  const kernel::ref::Parallel parallel(1);
  auto right = DefineOps({SoftplusOp()});
  ASSERT_TRUE(right.ok()) << Describe(right.errors());
  const auto passed =
      conform::GradcheckUserOp(*(*right)->Find("softplus"), **right, seed_, parallel);
  ASSERT_EQ(passed.size(), 2u);
  for (const conform::CaseResult& c : passed)
    EXPECT_TRUE(c.passed()) << c.id << ": " << c.Failure() << " (seed " << seed_ << ")";

  std::mutex mu;
  std::vector<double> x, g;  // what the wrong gradient last saw
  auto wrong = DefineOps({SoftplusOp(
      {[&](const std::vector<double>& a) { return a[1] * std::exp(a[0]); }}, kWrongGradientWgsl)});
  ASSERT_TRUE(wrong.ok()) << Describe(wrong.errors());
  ops::OpTable spied = **wrong;
  // Wrap the gradient's float64 form to keep its inputs.
  const ops::OpSpec* grad = spied.Find("softplus_grad_x");
  ASSERT_NE(grad, nullptr);
  ASSERT_TRUE(grad->user->callable_f64);
  auto user = std::make_shared<ops::UserKernel>(*grad->user);
  user->callable_f64 = [&,
                        inner = grad->user->callable_f64](std::span<const ops::Float64Tensor> in) {
    std::lock_guard<std::mutex> lock(mu);
    x = in[0].values;
    g = in[1].values;
    return inner(in);
  };
  ops::OpSpec replaced = *grad;
  replaced.user = user;
  ops::OpTable table(*ops::BuiltinOps());
  table.Add(*spied.Find("softplus"));
  table.Add(replaced);
  const auto failed = conform::GradcheckUserOp(*table.Find("softplus"), table, seed_, parallel);
  ASSERT_EQ(failed.size(), 2u);
  const conform::CaseResult& c = failed[1];
  EXPECT_EQ(c.id, "softplus/gradcheck_x_r1_7");
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.comparison.mismatches, 7);
  EXPECT_EQ(c.first_bad_at, "[0]");
  EXPECT_NE(c.Failure().find("first at [0]"), std::string::npos) << c.Failure();
  ASSERT_EQ(x.size(), 7u);
  EXPECT_NEAR(c.comparison.first_got, g[0] * std::exp(x[0]),
              1e-6 * std::fabs(g[0] * std::exp(x[0])));
  EXPECT_NEAR(c.comparison.first_want, g[0] * Sigmoid(x[0]),
              1e-5 * std::fabs(g[0] * Sigmoid(x[0])));
}

// loss = sum(softplus(w)) under SGD with lr 1: w@next = w - sigmoid(w), worked in float64 from
// w's values, on the CPU reference (the gradient callable) and on the device (its WGSL).
TEST_F(UserOpCallableGrad, AutodiffThroughTheOpGivesTheHandDerivedGradient) {
  auto table = DefineOps({SoftplusOp()});
  ASSERT_TRUE(table.ok()) << Describe(table.errors());
  const Json doc = {
      {"format", "scellis.workflow/1"},
      {"name", "sum of softplus"},
      {"determinism", "prod"},
      {"dims", {{"N", 7}}},
      {"nodes",
       {{{"id", "w"},
         {"type", "param"},
         {"params",
          {{"name", "w"},
           {"shape", {"N"}},
           {"init", {{"kind", "uniform"}, {"low", -3}, {"high", 3}, {"seed", seed_ % 100000}}}}}},
        {{"id", "s"}, {"type", "softplus"}},
        {{"id", "loss"}, {"type", "sum"}}}},
      {"wires", {{{"from", "w"}, {"to", "s.x"}}, {{"from", "s"}, {"to", "loss.a"}}}},
      {"outputs", {{{"name", "loss"}, {"from", "loss"}}}},
      {"train", {{"loss", "loss"}, {"optimizer", {{"kind", "sgd"}, {"lr", 1}}}}}};
  for (const char* backend : {"cpu", "webgpu"}) {
    SCOPED_TRACE(backend);
    RunOptions o;
    o.compile.lower.ops = *table;
    o.select = {.requested = backend, .allow_software_adapter = true};
    o.store_root = store_.string();
    o.steps = 2;  // step 2's update from step 1's result: nothing rests on the initializer
    o.history = {"w@next"};
    auto r = api::Run(doc.dump(), o);
    ASSERT_TRUE(r.ok()) << Describe(r.errors());
    ASSERT_EQ(r->history.size(), 1u);
    ASSERT_EQ(r->history[0].second.size(), 2u);
    const std::vector<float> w = r->history[0].second[0].ToFloats();
    const std::vector<float> next = r->history[0].second[1].ToFloats();
    ASSERT_EQ(w.size(), 7u);
    ASSERT_EQ(next.size(), 7u);
    for (size_t i = 0; i < w.size(); ++i)
      EXPECT_NEAR(double(w[i]) - double(next[i]), Sigmoid(w[i]), 1e-5)
          << "w[" << i << "] = " << w[i];
  }
}

// A gradient needs the forward's float64 form (the grad-check differentiates it) and a callable
// of its own; each refusal is named at its pointer.
TEST_F(UserOpCallableGrad, AGradientNeedsItsCallablesByName) {
  UserOpDefinition no_f64 = SoftplusOp();
  no_f64.reference_f64 = nullptr;
  auto a = DefineOps({no_f64});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.errors()[0].code, "missing-reference-f64");
  EXPECT_EQ(a.errors()[0].pointer, "/ops/softplus/gradient/x/reference");

  UserOpDefinition no_callable = SoftplusOp();
  no_callable.gradients["x"].reference = nullptr;
  auto b = DefineOps({no_callable});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.errors()[0].code, "missing-reference");
  EXPECT_EQ(b.errors()[0].pointer, "/ops/softplus/gradient/x/reference");

  UserOpDefinition no_port = SoftplusOp();
  no_port.gradients["y"] = no_port.gradients["x"];
  auto c = DefineOps({no_port});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.errors()[0].code, "bad-gradient-port");
  EXPECT_EQ(c.errors()[0].pointer, "/ops/softplus/gradient/y");
}

}  // namespace
}  // namespace scellis::api
