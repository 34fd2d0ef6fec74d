// examples/mlp_step.json (a 2-layer MLP, cross entropy, Adam) against the same training step
// written out by hand in float64: forward, the backward pass of each layer, torch.optim.Adam's
// documented rule. Two steps, the second fed with the first's updated params (`<p>@next`) and
// moments (`<p>@m`, `<p>@v`) as a session carries them, run by the CPU reference in float64
// (agrees to rounding) and in float32 (agrees to f32 accuracy).
#include "webir/passes/append_train_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"

namespace scellis::webir {
namespace {

using pipeline::Compile;
using pipeline::CompileOptions;
using pipeline::PrintRung;
using pipeline::Rung;

using Tensor = std::vector<double>;

// Inline data as the plan stores it in an f32 tensor: each value rounded once to f32.
Tensor AsF32(const std::vector<double>& values) {
  Tensor t;
  for (double v : values) t.push_back(static_cast<float>(v));
  return t;
}

CompileOptions Options() {
  CompileOptions o;
  o.plan.budget_bytes = int64_t{1} << 30;
  return o;
}

std::string ReadExample(const char* name) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `v` rounded to the nearest f16 (ties to even): 11 significant bits, or multiples of 2^-24
// below f16's normal range. Values here stay far from its largest, 65504.
double RoundToF16(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  const int quantum = std::max(e - 11, -24);
  return std::nearbyint(std::ldexp(v, -quantum)) * std::ldexp(1.0, quantum);
}

// The MLP's step by hand. Shapes: x [N, D], w1 [D, H], b1 [H], w2 [H, C], b2 [C].
struct Mlp {
  int64_t n = 4, d = 3, h = 5, c = 3;  // the example's dims
  Tensor x, labels;
  std::map<std::string, Tensor> params, m, v;
  double lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  // Mixed precision: each product's operands and result rounded to f16, the loss scaled.
  bool f16_products = false;
  double loss_scale = 1;

  double R(double v) const { return f16_products ? RoundToF16(v) : v; }

  double Step(int t) {
    const Tensor &w1 = params["w1"], &b1 = params["b1"], &w2 = params["w2"], &b2 = params["b2"];
    Tensor pre(n * h), hid(n * h), logits(n * c);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < h; ++j) {
        double s = 0;
        for (int64_t k = 0; k < d; ++k) s += R(x[i * d + k]) * R(w1[k * h + j]);
        pre[i * h + j] = R(s) + b1[j];
        hid[i * h + j] = pre[i * h + j] > 0 ? pre[i * h + j] : 0;
      }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < c; ++j) {
        double s = 0;
        for (int64_t k = 0; k < h; ++k) s += R(hid[i * h + k]) * R(w2[k * c + j]);
        logits[i * c + j] = R(s) + b2[j];
      }
    // loss = mean(logsumexp - logit at the label); dlogits = (softmax - onehot) / N.
    double loss = 0;
    Tensor dlogits(n * c);
    for (int64_t i = 0; i < n; ++i) {
      double mx = logits[i * c];
      for (int64_t j = 1; j < c; ++j) mx = std::max(mx, logits[i * c + j]);
      double z = 0;
      for (int64_t j = 0; j < c; ++j) z += std::exp(logits[i * c + j] - mx);
      int64_t y = static_cast<int64_t>(labels[i]);
      loss += (mx + std::log(z) - logits[i * c + y]) / static_cast<double>(n);
      for (int64_t j = 0; j < c; ++j)
        dlogits[i * c + j] =
            loss_scale * (std::exp(logits[i * c + j] - mx) / z - (j == y)) / static_cast<double>(n);
    }
    std::map<std::string, Tensor> grad = {{"w1", Tensor(d * h, 0)},
                                          {"b1", Tensor(h, 0)},
                                          {"w2", Tensor(h * c, 0)},
                                          {"b2", Tensor(c, 0)}};
    // Each product's gradients are products too: summed, then rounded (in mixed precision).
    Tensor dhid(n * h, 0);
    for (int64_t j = 0; j < c; ++j) {
      for (int64_t i = 0; i < n; ++i) grad["b2"][j] += dlogits[i * c + j];
      for (int64_t k = 0; k < h; ++k) {
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += R(hid[i * h + k]) * R(dlogits[i * c + j]);
        grad["w2"][k * c + j] = R(s);
      }
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < h; ++k) {
        double s = 0;
        for (int64_t j = 0; j < c; ++j) s += R(dlogits[i * c + j]) * R(w2[k * c + j]);
        dhid[i * h + k] = R(s);
      }
    Tensor dpre(n * h, 0);
    for (int64_t i = 0; i < n * h; ++i) dpre[i] = pre[i] > 0 ? dhid[i] : 0;
    for (int64_t j = 0; j < h; ++j) {
      for (int64_t i = 0; i < n; ++i) grad["b1"][j] += dpre[i * h + j];
      for (int64_t k = 0; k < d; ++k) {
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += R(x[i * d + k]) * R(dpre[i * h + j]);
        grad["w1"][k * h + j] = R(s);
      }
    }
    for (auto& [name, g] : grad)
      for (double& v : g) v /= loss_scale;
    // torch.optim.Adam, as documented.
    for (auto& [name, p] : params) {
      Tensor &mm = m[name], &vv = v[name];
      const Tensor& g = grad[name];
      for (size_t i = 0; i < p.size(); ++i) {
        mm[i] = beta1 * mm[i] + (1 - beta1) * g[i];
        vv[i] = beta2 * vv[i] + (1 - beta2) * g[i] * g[i];
        double m_hat = mm[i] / (1 - std::pow(beta1, t));
        double v_hat = vv[i] / (1 - std::pow(beta2, t));
        p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
      }
    }
    return loss;
  }
};

template <typename T>
std::map<std::string, std::vector<T>> ByName(const webir::Graph& g,
                                             const std::vector<std::vector<T>>& outputs) {
  std::map<std::string, std::vector<T>> out;
  for (size_t i = 0; i < g.outputs.size(); ++i) out[g.outputs[i].name] = outputs[i];
  return out;
}

// Two steps of `doc`'s plan on the CPU reference against `mlp`'s by hand: in float64 (to
// rounding) where `check64`, and in float32 to within `rel32` relative.
void ExpectTwoStepsMatch(const std::string& doc, Mlp mlp, bool check64, double rel32) {
  auto compiled = Compile(doc, Options());
  ASSERT_TRUE(compiled.ok()) << compiled.errors()[0].Format();
  const execplan::Plan& plan = *compiled->plan;
  const webir::Graph& g = plan.graph();

  // Inputs and initial params exactly as the plan sees them (f32 values).
  for (const webir::Node& n : g.nodes) {
    if (n.role == webir::Role::kParam) {
      std::vector<float> init = n.init->Generate(n.type.elements());
      mlp.params[n.label] = Tensor(init.begin(), init.end());
      mlp.m[n.label] = mlp.v[n.label] = Tensor(init.size(), 0.0);
    } else if (n.label == "x") {
      mlp.x = AsF32(*n.data);
    } else if (n.label == "labels") {
      mlp.labels = AsF32(*n.data);
    }
  }
  ASSERT_EQ(mlp.params.size(), 4u);

  kernel::ref::Parallel serial(1);
  runtime::cpu::ExactFeeds<double> feeds64;
  runtime::Feeds feeds32;
  for (int step = 1; step <= 2; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    feeds64["step"] = {static_cast<double>(step)};
    const float step32 = static_cast<float>(step);
    feeds32["step"] = HostTensor::FromFloats(MakeType({}), {&step32, 1});
    double want_loss = mlp.Step(step);
    std::map<std::string, std::vector<double>> out64;
    if (check64) {
      auto run64 = runtime::cpu::RunPlan<double>(plan, {}, serial, feeds64);
      ASSERT_TRUE(run64.ok());
      out64 = ByName(g, run64.value());
      EXPECT_NEAR(out64["loss"][0], want_loss, 1e-12);
    }
    auto run32 = runtime::cpu::RunPlan<float>(plan, feeds32, serial);
    ASSERT_TRUE(run32.ok());
    auto out32 = ByName(g, run32.value());
    EXPECT_NEAR(out32["loss"][0], want_loss, 1e-6);
    for (const auto& [name, p] : mlp.params) {
      for (const auto& [suffix, want] : {std::pair<std::string, const Tensor*>{"@next", &p},
                                         {"@m", &mlp.m[name]},
                                         {"@v", &mlp.v[name]}}) {
        const std::string key = name + suffix;
        ASSERT_EQ(out32[key].size(), want->size()) << key;
        for (size_t i = 0; i < want->size(); ++i) {
          double w = (*want)[i];
          if (check64)
            EXPECT_NEAR(out64[key][i], w, 1e-12 * (1 + std::fabs(w))) << key << "[" << i << "]";
          EXPECT_NEAR(out32[key][i], w, 2e-6 * (1 + std::fabs(w)) + rel32 * std::fabs(w))
              << key << "[" << i << "] (f32)";
        }
      }
    }
    // The next step starts from this one's results, as the session's carries do.
    for (const webir::Carry& c : g.carries) {
      std::string from = "", to = runtime::FeedName(g.at(c.to));
      for (const webir::Output& o : g.outputs)
        if (o.node == c.from) from = o.name;
      if (check64) feeds64[to] = out64[from];
      feeds32[to] = HostTensor::FromFloats(g.at(c.to).type, out32[from]);
    }
  }
}

TEST(TrainStep, MlpAdamStepsMatchAHandComputation) {
  ExpectTwoStepsMatch(ReadExample("mlp_step.json"), Mlp{}, /*check64=*/true, 1e-5);
}

// Data parallelism lowers the step as two halves: the gradients (params resident) and the
// update (gradients fed as "<param>@grad"). Run one after the other in float64 on the reference
// they are the hand-computed step.
TEST(TrainStep, GradientAndUpdateHalvesMakeTheWholeStep) {
  CompileOptions grad_options = Options(), update_options = Options();
  grad_options.lower.mode = block::LowerMode::kGradients;
  update_options.lower.mode = block::LowerMode::kApplyGradients;
  auto grads = Compile(ReadExample("mlp_step.json"), grad_options);
  ASSERT_TRUE(grads.ok()) << grads.errors()[0].Format();
  auto update = Compile(ReadExample("mlp_step.json"), update_options);
  ASSERT_TRUE(update.ok()) << update.errors()[0].Format();
  const webir::Graph& gg = grads->plan->graph();
  const webir::Graph& ug = update->plan->graph();

  // The update half holds the params, their gradients and optimizer state and the step: no
  // forward value, no dataset input.
  for (const webir::Node& n : ug.nodes) {
    EXPECT_NE(n.label, "x");
    EXPECT_NE(n.label, "labels");
    EXPECT_NE(n.op, "matmul");
  }
  // The gradient half carries nothing and updates nothing.
  EXPECT_TRUE(gg.carries.empty());
  for (const webir::Node& n : gg.nodes) EXPECT_NE(n.op, "adam_update");

  Mlp mlp;
  runtime::cpu::ExactFeeds<double> grad_feeds;
  for (const webir::Node& n : ug.nodes)
    if (n.role == webir::Role::kParam) {
      std::vector<float> init = n.init->Generate(n.type.elements());
      mlp.params[n.label] = Tensor(init.begin(), init.end());
      mlp.m[n.label] = mlp.v[n.label] = Tensor(init.size(), 0.0);
      grad_feeds[n.label] = mlp.params[n.label];
    }
  for (const webir::Node& n : gg.nodes) {
    if (n.label == "x") mlp.x = AsF32(*n.data);
    if (n.label == "labels") mlp.labels = AsF32(*n.data);
  }
  ASSERT_EQ(mlp.params.size(), 4u);
  const double want_loss = mlp.Step(1);

  kernel::ref::Parallel serial(1);
  auto run_grads = runtime::cpu::RunPlan<double>(*grads->plan, {}, serial, grad_feeds);
  ASSERT_TRUE(run_grads.ok()) << run_grads.errors()[0].Format();
  auto grad_out = ByName(gg, run_grads.value());
  EXPECT_NEAR(grad_out["loss"][0], want_loss, 1e-12);

  runtime::cpu::ExactFeeds<double> update_feeds;
  update_feeds["step"] = {1.0};
  for (const auto& [name, p] : mlp.params) {
    ASSERT_EQ(grad_out.count(GradName(name)), 1u) << name;
    update_feeds[GradName(name)] = grad_out[GradName(name)];
  }
  auto run_update = runtime::cpu::RunPlan<double>(*update->plan, {}, serial, update_feeds);
  ASSERT_TRUE(run_update.ok()) << run_update.errors()[0].Format();
  auto out = ByName(ug, run_update.value());
  for (const auto& [name, p] : mlp.params) {
    for (const auto& [suffix, want] : {std::pair<std::string, const Tensor*>{"@next", &p},
                                       {"@m", &mlp.m[name]},
                                       {"@v", &mlp.v[name]}}) {
      const std::string key = name + suffix;
      ASSERT_EQ(out[key].size(), want->size()) << key;
      for (size_t i = 0; i < want->size(); ++i)
        EXPECT_NEAR(out[key][i], (*want)[i], 1e-12 * (1 + std::fabs((*want)[i]))) << key;
    }
  }
}

TEST(TrainStep, PrintsTheBackwardPassAndStateOutputs) {
  auto compiled = Compile(ReadExample("mlp_step.json"), Options());
  ASSERT_TRUE(compiled.ok());
  std::string text = PrintRung(*compiled, Rung::kWebir);
  for (const char* s : {"cross_entropy_grad", "(grad)", "%d_w1", "adam_update", "adam_m", "adam_v",
                        "output w1@m = ", "output w1@next = ", "(optimizer state)"})
    EXPECT_NE(text.find(s), std::string::npos) << s;
  EXPECT_NE(PrintRung(*compiled, Rung::kBlock).find("train loss=%loss optimizer=adam params=4"),
            std::string::npos);
  // Moments fed back each step are accounted as optimizer state.
  EXPECT_GT(compiled->plan->memory.by_class[static_cast<int>(execplan::MemClass::kOptimizerState)],
            0);
}

std::string WithTrain(const std::string& train) {
  std::string doc = ReadExample("mlp_step.json");
  size_t at = doc.find("\"train\"");
  return doc.substr(0, at) + "\"train\": " + train + "\n}\n";
}

constexpr const char* kMixedAdam =
    R"({"loss": "loss", "optimizer": {"kind": "adam", "lr": 0.01, "beta1": 0.9, "beta2": 0.999,
        "eps": 1e-8}, "mixed_precision": {"compute": "f16", "loss_scale": 1024}})";

// Mixed precision: the products from f16-rounded operands, rounded to f16, their gradients the
// same way, the loss scaled by 1024 and every gradient divided by it, Adam on the f32 params.
TEST(MixedPrecision, MlpAdamStepsMatchAHandComputationWithF16Products) {
  Mlp mlp;
  mlp.f16_products = true;
  mlp.loss_scale = 1024;
  ExpectTwoStepsMatch(WithTrain(kMixedAdam), mlp, /*check64=*/false, 1e-5);
}

TEST(MixedPrecision, TheProductsAreF16BetweenCastsAndTheParamsF32MasterWeights) {
  auto c = Compile(WithTrain(kMixedAdam), Options());
  ASSERT_TRUE(c.ok()) << c.errors()[0].Format();
  const webir::Graph& g = c->plan->graph();
  int f16_products = 0;
  for (const webir::Node& n : g.nodes) {
    if (n.op == "matmul") {
      EXPECT_EQ(n.type.dtype, DType::kF16) << n.Describe();
      for (int a : n.args) EXPECT_EQ(g.at(a).type.dtype, DType::kF16) << n.Describe();
      ++f16_products;
    }
    if (n.role == Role::kParam) EXPECT_EQ(n.type.dtype, DType::kF32) << n.Describe();
  }
  // Two forward products, three backward (the first layer's data operand needs none).
  EXPECT_EQ(f16_products, 5);
  const auto& mem = c->plan->memory;
  // w1 [3, 5] and w2 [5, 3] feed products: master weights; b1 [5] and b2 [3] are added in f32.
  EXPECT_EQ(mem.by_class[static_cast<int>(execplan::MemClass::kMasterWeights)], 2 * 15 * 4);
  EXPECT_EQ(mem.by_class[static_cast<int>(execplan::MemClass::kParameters)], (5 + 3) * 4);
  EXPECT_NE(PrintRung(*c, Rung::kExecplan).find("master_weights"), std::string::npos);
  // Without the section the plan has no master weights and does not print the class.
  auto plain = Compile(ReadExample("mlp_step.json"), Options());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->plan->memory.by_class[static_cast<int>(execplan::MemClass::kMasterWeights)], 0);
  EXPECT_EQ(PrintRung(*plain, Rung::kExecplan).find("master_weights"), std::string::npos);
}

TEST(MixedPrecision, BadSectionsAreNamed) {
  const std::string adam = R"("optimizer": {"kind": "adam"})";
  for (const auto& [section, pointer] : std::vector<std::pair<std::string, std::string>>{
           {R"("f16")", "/train/mixed_precision"},
           {R"({"loss_scale": 1024})", "/train/mixed_precision/compute"},
           {R"({"compute": "bf16", "loss_scale": 1024})", "/train/mixed_precision/compute"},
           {R"({"compute": "f16"})", "/train/mixed_precision/loss_scale"},
           {R"({"compute": "f16", "loss_scale": 1000})", "/train/mixed_precision/loss_scale"},
           {R"({"compute": "f16", "loss_scale": 0.5})", "/train/mixed_precision/loss_scale"},
           {R"({"compute": "f16", "loss_scale": 33554432})", "/train/mixed_precision/loss_scale"},
       }) {
    auto c = Compile(
        WithTrain(R"({"loss": "loss", )" + adam + R"(, "mixed_precision": )" + section + "}"),
        Options());
    ASSERT_FALSE(c.ok()) << section;
    EXPECT_EQ(c.errors()[0].code, "bad-mixed-precision") << section;
    EXPECT_EQ(c.errors()[0].pointer, pointer) << section;
  }
  auto stray = Compile(WithTrain(R"({"loss": "loss", )" + adam +
                                 R"(, "mixed_precision": {"compute": "f16", "loss_scale": 8,
                                     "dynamic": true}})"),
                       Options());
  ASSERT_FALSE(stray.ok());
  EXPECT_EQ(stray.errors()[0].pointer, "/train/mixed_precision/dynamic");
}

TEST(TrainStep, SgdAndMomentumLowerToTheirOps) {
  auto sgd =
      Compile(WithTrain(R"({"loss": "loss", "optimizer": {"kind": "sgd", "lr": 0.1}})"), Options());
  ASSERT_TRUE(sgd.ok()) << sgd.errors()[0].Format();
  std::string text = PrintRung(*sgd, Rung::kWebir);
  EXPECT_NE(text.find("sgd_update"), std::string::npos);
  EXPECT_EQ(text.find("velocity"), std::string::npos);  // plain SGD keeps no state
  auto mom = Compile(
      WithTrain(
          R"({"loss": "loss", "optimizer": {"kind": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": true}})"),
      Options());
  ASSERT_TRUE(mom.ok()) << mom.errors()[0].Format();
  EXPECT_NE(PrintRung(*mom, Rung::kWebir).find("output b2@velocity = "), std::string::npos);
  auto adamw = Compile(WithTrain(R"({"loss": "loss", "optimizer": {"kind": "adamw"}})"), Options());
  ASSERT_TRUE(adamw.ok());
  EXPECT_NE(PrintRung(*adamw, Rung::kWebir).find("decoupled=true"), std::string::npos);
}

// A parameter group's settings reach its params' update ops, the others keep the optimizer's.
TEST(TrainStep, ParameterGroupsSetTheirParamsUpdates) {
  auto c = Compile(WithTrain(R"({"loss": "loss", "optimizer": {"kind": "sgd", "lr": 0.1,
      "groups": [{"params": ["b2", "w1"], "lr": 0.5, "weight_decay": 0.25}]}})"),
                   Options());
  ASSERT_TRUE(c.ok()) << c.errors()[0].Format();
  const std::string text = PrintRung(*c, Rung::kWebir);
  auto updates_with = [&](const std::string& attrs) {
    int n = 0;
    for (size_t at = text.find(attrs); at != std::string::npos; at = text.find(attrs, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(updates_with("sgd_update %w1, %d_w1 lr=0.5 maximize=false weight_decay=0.25 "), 1)
      << text;
  EXPECT_EQ(updates_with("lr=0.5 maximize=false weight_decay=0.25 "), 2) << text;
  EXPECT_EQ(updates_with("lr=0.1 maximize=false weight_decay=0 "), 2) << text;
}

TEST(TrainStep, BadSettingsAreDiagnostics) {
  struct Bad {
    const char* train;
    const char* code;
    const char* pointer;
  };
  for (const Bad& b : {
           Bad{R"({"loss": "nope", "optimizer": {"kind": "adam"}})", "dangling-reference",
               "/train/loss"},
           Bad{R"({"loss": "loss", "optimizer": {"kind": "rmsprop"}})", "bad-optimizer",
               "/train/optimizer/kind"},
           Bad{R"({"loss": "loss", "optimizer": {"kind": "adam", "momentum": 0.9}})",
               "bad-optimizer", "/train/optimizer/momentum"},
           Bad{R"({"loss": "loss", "optimizer": {"kind": "adam", "lr": -1}})", "bad-optimizer",
               "/train/optimizer/lr"},
           Bad{R"({"loss": "loss"})", "missing-field", "/train"},
           // Any scalar may be the loss of a step fed by the caller, but "loss" then names a
           // block that is not the train loss.
           Bad{R"({"loss": "logits", "optimizer": {"kind": "adam"}})", "ambiguous-name",
               "/nodes/11"},
       }) {
    auto c = Compile(WithTrain(b.train), Options());
    ASSERT_FALSE(c.ok()) << b.train;
    EXPECT_EQ(c.errors()[0].code, b.code) << b.train;
    EXPECT_EQ(c.errors()[0].pointer, b.pointer) << b.train;
  }
}

// A training workflow whose forward reads the step number: dropout of a param, its sum the loss,
// plain SGD with lr 1. `step_input` is the document's node labelled "step" wired to the step port.
std::string DropoutStepWorkflow(const std::string& step_input) {
  return R"({"format": "scellis.workflow/1", "name": "dropout_step", "determinism": "debug",
    "nodes": [)" +
         step_input + R"(,
      {"id": "w", "type": "param", "params": {"name": "w", "shape": [64],
                                              "init": {"kind": "ones"}}},
      {"id": "dropped", "type": "dropout", "params": {"p": 0.5, "seed": 9}},
      {"id": "loss", "type": "sum"}],
    "wires": [{"from": "w", "to": "dropped.a"}, {"from": "step", "to": "dropped.step"},
              {"from": "dropped", "to": "loss.a"}],
    "outputs": [{"name": "loss", "from": "loss"}],
    "train": {"loss": "loss", "optimizer": {"kind": "sgd", "lr": 1}}})";
}

// The counter hash as docs/ops.md states it (u32 PCG hash, Jarzynski and Olano 2020): element i
// of dropout(p = 0.5) at (seed, step) is kept where its top 24 bits are >= 2^23.
bool KeptAtHalf(uint32_t seed, uint32_t step, uint32_t i) {
  auto h = [](uint32_t x) {
    uint32_t s = x * 747796405u + 2891336453u;
    uint32_t w = ((s >> ((s >> 28) + 4)) ^ s) * 277803737u;
    return (w >> 22) ^ w;
  };
  return (h(h(i) ^ h(seed ^ h(step))) >> 8) >= (1u << 23);
}

// A document's scalar input labelled "step" is the training step's own step input (one input,
// fed by the trainer): dropout in the forward draws a fresh mask every step, and its gradient
// uses the same mask as its forward.
TEST(TrainStep, TheForwardReadsTheStepNumberFromTheDocumentsStepInput) {
  auto compiled = Compile(DropoutStepWorkflow(
                              R"({"id": "step", "type": "input",
                                  "params": {"name": "step", "shape": []}})"),
                          Options());
  ASSERT_TRUE(compiled.ok()) << compiled.errors()[0].Format();
  const execplan::Plan& plan = *compiled->plan;
  const webir::Graph& g = plan.graph();
  int step_inputs = 0;
  for (const webir::Node& n : g.nodes)
    step_inputs += n.role == webir::Role::kInput && runtime::FeedName(n) == kStepInput;
  EXPECT_EQ(step_inputs, 1);

  kernel::ref::Parallel serial(1);
  int differing = 0;
  std::vector<bool> first_mask;
  for (uint32_t step : {3u, 4u}) {
    SCOPED_TRACE("step " + std::to_string(step));
    runtime::cpu::ExactFeeds<double> feeds;
    feeds["step"] = {static_cast<double>(step)};
    auto run = runtime::cpu::RunPlan<double>(plan, {}, serial, feeds);
    ASSERT_TRUE(run.ok()) << run.errors()[0].Format();
    auto out = ByName(g, run.value());
    // loss = sum of 2 * w over the kept elements; d loss / d w_i = 2 where kept, else 0.
    double want_loss = 0;
    std::vector<bool> mask;
    for (uint32_t i = 0; i < 64; ++i) {
      const bool kept = KeptAtHalf(9, step, i);
      mask.push_back(kept);
      want_loss += kept ? 2 : 0;
      EXPECT_EQ(out["w@next"][i], kept ? -1.0 : 1.0) << i;
    }
    EXPECT_EQ(out["loss"][0], want_loss);
    if (first_mask.empty()) {
      first_mask = mask;
    } else {
      for (size_t i = 0; i < mask.size(); ++i) differing += mask[i] != first_mask[i];
    }
  }
  EXPECT_GT(differing, 10);  // a fresh mask each step
}

// Evaluating a training workflow (the forward alone, weights fed) is PyTorch's eval mode: dropout
// passes its operand, unscaled.
TEST(TrainStep, EvaluationLowersDropoutAsTheIdentity) {
  CompileOptions forward = Options();
  forward.lower.mode = block::LowerMode::kForward;
  auto compiled = Compile(DropoutStepWorkflow(
                              R"({"id": "step", "type": "input",
                                  "params": {"name": "step", "shape": []}})"),
                          forward);
  ASSERT_TRUE(compiled.ok()) << compiled.errors()[0].Format();
  const webir::Graph& g = compiled->plan->graph();
  for (const webir::Node& n : g.nodes) EXPECT_NE(n.op, "dropout");
  runtime::cpu::ExactFeeds<double> feeds;
  feeds["step"] = {5.0};
  Tensor w;
  double sum = 0;
  for (int i = 0; i < 64; ++i) {
    w.push_back(i + 1);
    sum += i + 1;
  }
  feeds["w"] = w;
  kernel::ref::Parallel serial(1);
  auto run = runtime::cpu::RunPlan<double>(*compiled->plan, {}, serial, feeds);
  ASSERT_TRUE(run.ok()) << run.errors()[0].Format();
  EXPECT_EQ(ByName(g, run.value())["loss"][0], sum);  // 2080: every element, unscaled
}

// Only a scalar f32 input without data or carry is the step number; any other block labelled
// "step" is refused by name, as before.
TEST(TrainStep, AStepInputThatCannotBeTheStepNumberIsRefused) {
  for (
      const char* bad : {
          R"({"id": "step", "type": "input", "params": {"name": "step", "shape": [2]}})",
          R"({"id": "step", "type": "input", "params": {"name": "step", "shape": [], "data": [1]}})",
          R"({"id": "step", "type": "input",
               "params": {"name": "step", "shape": [], "dtype": "i32"}})",
          R"({"id": "step", "type": "param",
               "params": {"name": "step", "shape": [], "init": {"kind": "zeros"}}})",
      }) {
    auto c = Compile(DropoutStepWorkflow(bad), Options());
    ASSERT_FALSE(c.ok()) << bad;
    bool named = false;
    for (const Diagnostic& d : c.errors()) named |= d.code == "ambiguous-name";
    EXPECT_TRUE(named) << bad << "\n" << c.errors()[0].Format();
  }
}

// The pass alone: FromBlock leaves the training step pending; the pass appends it once.
TEST(AppendTrainStepPass, AppendsThePendingStepOnce) {
  auto d = doc::Parse(ReadExample("mlp_step.json"));
  ASSERT_TRUE(d.ok());
  block::LowerOptions lower;
  lower.tier = policy::Tier::kProd;
  auto p = block::FromDoc(d.value(), lower);
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  auto g = FromBlock(p.value());
  ASSERT_TRUE(g.ok()) << g.errors().front().Format();
  ASSERT_TRUE(g->train.has_value());
  const size_t forward_nodes = g->nodes.size();
  EXPECT_EQ(g->outputs.size(), 1u);  // loss
  EXPECT_TRUE(g->carries.empty());

  ASSERT_TRUE(AppendTrainStep(g.value()).ok());
  EXPECT_FALSE(g->train.has_value());
  EXPECT_GT(g->nodes.size(), forward_nodes);
  // Adam on four params: each has its next value and two moments as outputs, carried back.
  EXPECT_EQ(g->outputs.size(), 1u + 4 * 3);
  EXPECT_EQ(g->carries.size(), 4u * 3);
  EXPECT_TRUE(Verify(g.value()).ok());

  const size_t nodes = g->nodes.size();
  ASSERT_TRUE(AppendTrainStep(g.value()).ok());  // nothing pending: no change
  EXPECT_EQ(g->nodes.size(), nodes);
}

}  // namespace
}  // namespace scellis::webir
