// Rung 1: determinism tiers (strictest wins, overrides announce themselves), dims binding, source
// typing, initializers and the verifier.
#include "block/program.h"

#include <gtest/gtest.h>

#include "base/determinism.h"

namespace scellis::block {
namespace {

using policy::Tier;

// A workflow with an optional document tier and an optional node tier.
std::string Workflow(const std::string& doc_tier, const std::string& node_tier,
                     bool doc_override = false) {
  std::string det;
  if (!doc_tier.empty()) {
    det = doc_override ? R"("determinism": {"tier": ")" + doc_tier + R"(", "override": true},)"
                       : R"("determinism": ")" + doc_tier + R"(",)";
  }
  std::string node_det = node_tier.empty() ? "" : R"("determinism": ")" + node_tier + R"(",)";
  return R"({"format": "scellis.workflow/1", )" + det + R"( "dims": {"N": 2, "D": 3},
    "nodes": [{"id": "x", "type": "input", "params": {"shape": ["N", "D"], "data": [1,2,3,4,5,6]}},
              {"id": "r", "type": "relu", )" +
         node_det + R"( "params": {}}],
    "wires": [{"from": "x", "to": "r.a"}], "outputs": [{"name": "out", "from": "r"}]})";
}

// The same declarations in a graph-protocol document; the relu is node 1.
std::string Graph(const std::string& doc_tier, const std::string& node_tier,
                  bool doc_override = false) {
  std::string det;
  if (!doc_tier.empty()) {
    det = doc_override ? R"("determinism": {"tier": ")" + doc_tier + R"(", "override": true},)"
                       : R"("determinism": ")" + doc_tier + R"(",)";
  }
  std::string node_det = node_tier.empty() ? "" : R"(, "determinism": ")" + node_tier + R"(")";
  return R"({"version": 1, )" + det +
         R"( "nodes": [{"id": 0, "op": "input", "shape": [2, 3], "data": [1,2,3,4,5,6]},
              {"id": 1, "op": "relu", "a": 0)" +
         node_det + R"(}], "outputs": [{"name": "out", "id": 1}]})";
}

Result<Program> Lower(const std::string& text, LowerOptions o = {}) {
  auto d = doc::Parse(text);
  if (!d.ok()) return d.status();
  return FromDoc(d.value(), o);
}

LowerOptions WithTier(Tier t, bool override_tier = false) {
  LowerOptions o;
  o.tier = t;
  o.tier_override = override_tier;
  return o;
}

TEST(Tier, MissingEverywhereIsAnError) {
  auto p = Lower(Workflow("", ""));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.errors().front().code, "missing-determinism-tier");
  EXPECT_NE(p.errors().front().help.find("--tier"), std::string::npos);
}

TEST(Tier, StrictestDeclarationWins) {
  struct Case {
    std::string doc, node;
    std::optional<Tier> flag;
    Tier want;
    std::string source;
  };
  const Case cases[] = {
      {"prod", "", std::nullopt, Tier::kProd, "the document"},
      {"", "", Tier::kFast, Tier::kFast, "--tier"},
      {"fast", "", Tier::kProd, Tier::kProd, "--tier"},
      {"prod", "", Tier::kFast, Tier::kProd, "the document"},  // a flag cannot loosen
      {"prod", "debug", Tier::kFast, Tier::kDebug, "node r"},
      {"fast", "prod", std::nullopt, Tier::kProd, "node r"},
      {"debug", "fast", Tier::kFast, Tier::kDebug, "the document"},
  };
  // Both document forms resolve through the same function, to the same outcome.
  for (bool graph : {false, true}) {
    for (const Case& c : cases) {
      SCOPED_TRACE((graph ? "graph doc=" : "workflow doc=") + c.doc + " node=" + c.node);
      LowerOptions o;
      o.tier = c.flag;
      auto p = Lower(graph ? Graph(c.doc, c.node) : Workflow(c.doc, c.node), o);
      ASSERT_TRUE(p.ok()) << p.errors().front().Format();
      EXPECT_EQ(p->tier, c.want);
      EXPECT_EQ(p->tier_source, graph && c.source == "node r" ? "node 1" : c.source);
      EXPECT_TRUE(p->notes.empty());
    }
  }
}

TEST(Tier, GraphDocumentDeclaresItsOwnTier) {
  auto p = Lower(Graph("prod", ""));
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  EXPECT_EQ(p->tier, Tier::kProd);
  auto o = Lower(Graph("debug", "", /*override=*/true), WithTier(Tier::kProd));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->tier, Tier::kDebug) << "the document's override replaces --tier";
}

TEST(Tolerance, StrictestDeclarationWinsAcrossNodes) {
  auto p = Lower(R"({"version": 1, "determinism": "prod", "tolerance": "default",
    "nodes": [{"id": 0, "op": "input", "shape": [1], "data": [1]},
              {"id": 1, "op": "relu", "a": 0, "tolerance": "tight"}],
    "outputs": [{"name": "out", "id": 1}]})");
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  EXPECT_EQ(p->tolerance, policy::ToleranceClass::kTight);
}

TEST(Tier, OverrideThatDropsAStricterTierIsAnnounced) {
  auto p = Lower(Workflow("debug", ""), WithTier(Tier::kFast, /*override=*/true));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->tier, Tier::kFast);
  ASSERT_EQ(p->notes.size(), 1u);
  const Diagnostic& w = p->notes[0];
  EXPECT_EQ(w.code, "tier-override-drops-stricter");
  EXPECT_EQ(w.severity, Severity::kWarning);
  EXPECT_NE(w.message.find("fast"), std::string::npos) << w.message;
  EXPECT_NE(w.message.find("debug"), std::string::npos) << w.message;
  EXPECT_NE(w.message.find("the document"), std::string::npos) << w.message;
}

TEST(Tier, OverrideFromTheDocumentItselfIsAnnounced) {
  auto p = Lower(Workflow("fast", "debug", /*doc_override=*/true));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->tier, Tier::kFast);
  ASSERT_EQ(p->notes.size(), 1u);
  EXPECT_EQ(p->notes[0].code, "tier-override-drops-stricter");
  EXPECT_EQ(p->notes[0].pointer, "/determinism");
  EXPECT_NE(p->notes[0].message.find("node r"), std::string::npos);
}

TEST(Tier, OverrideThatTightensIsSilent) {
  auto p = Lower(Workflow("fast", ""), WithTier(Tier::kDebug, /*override=*/true));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->tier, Tier::kDebug);
  EXPECT_TRUE(p->notes.empty());
}

TEST(Tier, ResolveTierDirectly) {
  using policy::TierDeclaration;
  auto r = policy::ResolveTier(
      {{Tier::kFast, "a", ""}, {Tier::kDebug, "b", ""}, {Tier::kProd, "c", ""}}, std::nullopt);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tier, Tier::kDebug);
  EXPECT_EQ(r->source, "b");
  EXPECT_FALSE(policy::ResolveTier({}, std::nullopt).ok());
  auto o = policy::ResolveTier({}, TierDeclaration{Tier::kFast, "--tier", ""});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->notes.empty());  // nothing stricter was declared
}

TEST(Tolerance, ClassesResolveToExplicitNumbers) {
  for (Tier t : {Tier::kDebug, Tier::kProd, Tier::kFast}) {
    policy::Thresholds exact = policy::ResolveThresholds(policy::ToleranceClass::kExact, t);
    EXPECT_EQ(exact.atol, 0);
    EXPECT_EQ(exact.rtol, 0);
    EXPECT_TRUE(exact.Accepts(1.5, 1.5));
    EXPECT_FALSE(exact.Accepts(std::nextafter(1.5, 2.0), 1.5));
  }
  // Looser classes and looser tiers never tighten.
  auto tight = policy::ResolveThresholds(policy::ToleranceClass::kTight, Tier::kProd);
  auto loose = policy::ResolveThresholds(policy::ToleranceClass::kLoose, Tier::kProd);
  auto tight_fast = policy::ResolveThresholds(policy::ToleranceClass::kTight, Tier::kFast);
  EXPECT_LT(tight.rtol, loose.rtol);
  EXPECT_LE(tight.rtol, tight_fast.rtol);
  policy::Thresholds t{1e-6, 1e-3};
  EXPECT_TRUE(t.Accepts(1000.5, 1000.0));   // 0.5 <= 1e-6 + 1
  EXPECT_FALSE(t.Accepts(1002.0, 1000.0));  // 2 > 1.000001
  EXPECT_TRUE(t.Accepts(NAN, NAN));
  EXPECT_FALSE(t.Accepts(1.0, NAN));
  EXPECT_FALSE(t.Accepts(1e300, INFINITY));
}

// ---- dims ----

TEST(Dims, BoundFromTheDocument) {
  auto p = Lower(Workflow("prod", ""));
  ASSERT_TRUE(p.ok());
  const Block& x = p->blocks[0];
  EXPECT_EQ(x.tensor_type.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.tensor_type.ShapeString(), "[N, D]");
  EXPECT_EQ(x.tensor_type.ShapeStringWithSizes(), "[N=2, D=3]");
}

TEST(Dims, BindOptionOverridesTheDocument) {
  // N=3, D=2 still holds six values.
  LowerOptions o = WithTier(Tier::kProd);
  o.bind = {{"N", 3}, {"D", 2}};
  auto p = Lower(Workflow("", ""), o);
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  EXPECT_EQ(p->blocks[0].tensor_type.ShapeStringWithSizes(), "[N=3, D=2]");
  EXPECT_EQ(p->dims.at("N"), 3);

  o.bind = {{"N", 5}};  // 5 x 3 = 15 values, the data has 6
  auto bad = Lower(Workflow("", ""), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors().front().code, "data-length-mismatch");
  EXPECT_NE(bad.errors().front().message.find("[N=5, D=3]"), std::string::npos);
}

TEST(Dims, UnboundDimNamesTheFix) {
  std::string text = Workflow("prod", "");
  text.replace(text.find(R"("dims": {"N": 2, "D": 3},)"),
               std::string(R"("dims": {"N": 2, "D": 3},)").size(), R"("dims": {"N": 2},)");
  auto p = Lower(text);
  ASSERT_FALSE(p.ok());
  const Diagnostic& d = p.errors().front();
  EXPECT_EQ(d.code, "unbound-dim");
  EXPECT_EQ(d.pointer, "/nodes/0/params/shape/1");
  EXPECT_NE(d.help.find("--bind D="), std::string::npos) << d.help;
}

// ---- sources ----

TEST(Sources, TypesDataAndConstants) {
  auto p = Lower(R"({"version": 1, "nodes": [
      {"id": 0, "op": "input", "shape": [2, 2], "data": [1.5, -2, 3e-3, 4]},
      {"id": 1, "op": "full", "shape": [], "value": 7},
      {"id": 2, "op": "input", "shape": [0, 5], "data": []},
      {"id": 3, "op": "add", "a": 0, "b": 1}],
    "outputs": [{"name": "o", "id": 3}]})",
                 WithTier(Tier::kProd));
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  EXPECT_EQ(p->blocks[0].kind, BlockKind::kInput);
  EXPECT_EQ(*p->blocks[0].data, (std::vector<double>{1.5, -2.0, 3e-3, 4.0}));
  EXPECT_EQ(p->blocks[1].kind, BlockKind::kFull);
  EXPECT_EQ(p->blocks[1].tensor_type.rank(), 0);
  EXPECT_EQ(p->blocks[2].tensor_type.elements(), 0);
  EXPECT_EQ(p->blocks[3].kind, BlockKind::kOp);
  EXPECT_TRUE(Verify(p.value()).ok());
}

TEST(Initializer, CounterBasedAndPure) {
  Initializer u{"uniform", -0.5, 0.25, 99};
  std::vector<float> small = u.Generate(10), large = u.Generate(1000);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(small[i], large[i]);  // element i does not depend on count
  for (float v : large) {
    EXPECT_GE(v, -0.5f);
    EXPECT_LT(v, 0.25f);
  }
  double mean = 0;
  for (float v : large) mean += v;
  mean /= large.size();
  EXPECT_NEAR(mean, -0.125, 0.03);  // the middle of [-0.5, 0.25)
  Initializer other = u;
  other.seed = 100;
  EXPECT_NE(other.Generate(10), small);
  EXPECT_EQ((Initializer{"zeros"}.Generate(3)), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ((Initializer{"ones"}.Generate(2)), (std::vector<float>{1, 1}));
}

TEST(Initializer, KaimingUsesFanIn) {
  auto p = Lower(R"({"format": "scellis.workflow/1", "determinism": "prod", "nodes": [
      {"id": "w", "type": "param", "params": {"shape": [16, 4], "init": {"kind": "kaiming_uniform", "seed": 3}}}],
    "outputs": [{"name": "w", "from": "w"}]})");
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  const Initializer& init = *p->blocks[0].init;
  EXPECT_EQ(init.kind, "uniform");
  EXPECT_DOUBLE_EQ(init.low, -0.25);  // 1 / sqrt(16)
  EXPECT_DOUBLE_EQ(init.high, 0.25);
  EXPECT_EQ(init.seed, 3u);
}

// A one-layer training workflow; `optimizer` and `extra_train` are spliced into its train section.
std::string TrainWorkflow(
    const std::string& optimizer, const std::string& extra_train = "",
    const std::string& outputs = R"([{"name": "logits", "from": "logits"}])") {
  return R"({"format": "scellis.workflow/1", "determinism": "prod", "dims": {"B": 4},
    "nodes": [{"id": "d", "type": "dataset", "params": {"source": "idx:a,b"}},
              {"id": "x", "type": "input", "params": {"shape": ["B", 3]}},
              {"id": "y", "type": "input", "params": {"shape": ["B"]}},
              {"id": "w", "type": "param", "params": {"shape": [3, 2], "init": {"kind": "zeros"}}},
              {"id": "logits", "type": "matmul"},
              {"id": "ce", "type": "cross_entropy"}],
    "wires": [{"from": "x", "to": "logits.a"}, {"from": "w", "to": "logits.b"},
              {"from": "logits", "to": "ce.a"}, {"from": "y", "to": "ce.target"}],
    "outputs": )" +
         outputs + R"(,
    "train": {"loss": "ce", "eval_output": "logits", "batch": 4, "eval_batch": 4,
              "data": {"dataset": "d", "images": "x", "labels": "y"},
              "optimizer": )" +
         optimizer + extra_train + "}}";
}

// The single diagnostic of a refused document, as "code pointer".
std::string Refusal(const std::string& text) {
  auto p = Lower(text);
  if (p.ok()) return "accepted";
  std::string out;
  for (const Diagnostic& d : p.errors())
    out += (out.empty() ? "" : "; ") + d.code + " " + d.pointer;
  return out;
}

TEST(TrainSection, AValidSectionIsRead) {
  auto p = Lower(TrainWorkflow(R"({"kind": "adamw", "lr": 0.01, "beta1": 0.5, "eps": 1e-6})"));
  ASSERT_TRUE(p.ok()) << p.errors()[0].Format();
  ASSERT_TRUE(p->train.has_value());
  EXPECT_EQ(p->train->optimizer.kind, "adamw");
  EXPECT_EQ(p->train->optimizer.lr, 0.01);
  EXPECT_EQ(p->train->optimizer.beta1, 0.5);
  EXPECT_EQ(p->train->optimizer.beta2, 0.999);        // PyTorch's default
  EXPECT_EQ(p->train->optimizer.weight_decay, 1e-2);  // AdamW's default
  EXPECT_EQ(p->train->params.size(), 1u);
  EXPECT_FALSE(p->train->optimizer.maximize);
  auto up = Lower(TrainWorkflow(R"({"kind": "sgd", "lr": 0.1, "maximize": true})"));
  ASSERT_TRUE(up.ok()) << up.errors()[0].Format();
  EXPECT_TRUE(up->train->optimizer.maximize);
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "maximize": 1})")),
            "bad-optimizer /train/optimizer/maximize");
}

// The boundaries of each hyper-parameter, on both sides: torch.optim's, narrowed to what the f32
// update kernels honour (the ranges of the update ops' attributes in the op table).
TEST(TrainSection, OptimizerHyperParametersAtTheirBoundaries) {
  const std::string bad = "bad-optimizer /train/optimizer/";
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "beta1": 0.999999})")), "accepted");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "beta1": 1.0})")), bad + "beta1");
  // 1 - 1e-9 rounds to 1 in f32: the bias correction would divide by zero.
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "beta2": 0.999999999})")), bad + "beta2");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "beta2": -0.1})")), bad + "beta2");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "beta1": 0})")), "accepted");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "eps": 0})")), bad + "eps");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "eps": 1e-50})")), bad + "eps");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "eps": 1e-40})")), bad + "eps");  // subnormal
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "eps": 1e-30})")), "accepted");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "lr": 1e30})")), "accepted");
  // Finite in f32, but it overflows within a step (it once passed here and failed in a pass).
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "lr": 3e38})")), bad + "lr");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "lr": 1e39})")), bad + "lr");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "lr": 0})")), bad + "lr");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "lr": "0.1"})")), bad + "lr");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "weight_decay": -1e-9})")),
            bad + "weight_decay");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "sgd", "lr": 0.1, "momentum": 0.99})")), "accepted");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "sgd", "lr": 0.1, "momentum": 1})")),
            bad + "momentum");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "sgd", "lr": 0.1, "nesterov": true})")),
            bad + "nesterov");  // PyTorch: Nesterov needs momentum
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "sgd", "lr": 0.1, "nesterov": "yes"})")),
            bad + "nesterov");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "sgd", "beta1": 0.9})")), bad + "beta1");
  EXPECT_EQ(Refusal(TrainWorkflow(R"({"kind": "adam", "learning_rate": 0.1})")),
            "unknown-field /train/optimizer/learning_rate");
}

// Two params fed by the caller (no dataset), the loss a mean squared error written with plain
// ops, and the optimizer's settings overridden for one param by a group.
std::string TwoParamWorkflow(const std::string& optimizer, const std::string& loss = "mse") {
  return R"({"format": "scellis.workflow/1", "determinism": "prod",
    "nodes": [{"id": "x", "type": "input", "params": {"shape": [4, 3]}},
              {"id": "t", "type": "input", "params": {"shape": [4, 2]}},
              {"id": "w", "type": "param", "params": {"shape": [3, 2], "init": {"kind": "zeros"}}},
              {"id": "b", "type": "param", "params": {"shape": [2], "init": {"kind": "zeros"}}},
              {"id": "xw", "type": "matmul"}, {"id": "y", "type": "add"},
              {"id": "d", "type": "sub"}, {"id": "d2", "type": "mul"}, {"id": "mse", "type": "mean"}],
    "wires": [{"from": "x", "to": "xw.a"}, {"from": "w", "to": "xw.b"},
              {"from": "xw", "to": "y.a"}, {"from": "b", "to": "y.b"},
              {"from": "y", "to": "d.a"}, {"from": "t", "to": "d.b"},
              {"from": "d", "to": "d2.a"}, {"from": "d", "to": "d2.b"}, {"from": "d2", "to": "mse.a"}],
    "outputs": [{"name": "y", "from": "y"}],
    "train": {"loss": ")" + loss + R"(", "optimizer": )" + optimizer + "}}";
}

TEST(TrainSection, ParameterGroupsOverrideSettingsPerParam) {
  auto p = Lower(TwoParamWorkflow(
      R"({"kind": "sgd", "lr": 0.1, "momentum": 0.9,
          "groups": [{"params": ["b"], "lr": 0.5, "momentum": 0, "weight_decay": 0.01}]})"));
  ASSERT_TRUE(p.ok()) << p.errors()[0].Format();
  ASSERT_EQ(p->train->params.size(), 2u);
  ASSERT_EQ(p->train->param_optimizers.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const OptimizerSpec& o = p->train->param_optimizers[i];
    if (p->blocks[p->train->params[i]].id == "w") {
      EXPECT_EQ(o, p->train->optimizer);
    } else {
      EXPECT_EQ(o.lr, 0.5);
      EXPECT_EQ(o.momentum, 0);
      EXPECT_EQ(o.weight_decay, 0.01);
      EXPECT_EQ(o.kind, "sgd");
    }
  }
  EXPECT_NE(Print(*p).find("train group %b lr=0.5 weight_decay=0.01 momentum=0.0"),
            std::string::npos)
      << Print(*p);
}

TEST(TrainSection, BadParameterGroupsAreNamed) {
  const std::string bad = "bad-optimizer /train/optimizer/groups";
  EXPECT_EQ(Refusal(TwoParamWorkflow(R"({"kind": "adam", "groups": {"params": ["w"]}})")), bad);
  EXPECT_EQ(Refusal(TwoParamWorkflow(R"({"kind": "adam", "groups": [{"lr": 0.1}]})")), bad + "/0");
  EXPECT_EQ(Refusal(TwoParamWorkflow(R"({"kind": "adam", "groups": [{"params": ["x"]}]})")),
            bad + "/0/params/0");  // an input, not a param
  EXPECT_EQ(Refusal(TwoParamWorkflow(
                R"({"kind": "adam", "groups": [{"params": ["w"]}, {"params": ["b", "w"]}]})")),
            bad + "/1/params/1");  // w is in two groups
  EXPECT_EQ(Refusal(TwoParamWorkflow(R"({"kind": "adam", "groups": [{"params": ["w"], "lr": 0}]})")),
            bad + "/0/lr");
  EXPECT_EQ(Refusal(TwoParamWorkflow(
                R"({"kind": "adam", "groups": [{"params": ["w"], "kind": "sgd"}]})")),
            "unknown-field /train/optimizer/groups/0/kind");  // one optimizer, as in torch.optim
  EXPECT_EQ(Refusal(TwoParamWorkflow(
                R"({"kind": "adam", "groups": [{"params": ["w"], "momentum": 0.9}]})")),
            bad + "/0/momentum");
}

// Without a dataset any scalar is a loss; with one, the loss must be a loss op (see
// tests/errors/train_loss_not_loss_op).
TEST(TrainSection, ACallerFedStepTakesAnyScalarLoss) {
  EXPECT_EQ(Refusal(TwoParamWorkflow(R"({"kind": "adam"})")), "accepted");
}

TEST(TrainSection, CountsArePositiveIntegers) {
  const std::string adam = R"({"kind": "adam"})";
  EXPECT_EQ(Refusal(TrainWorkflow(adam, R"(, "epochs": 0)")), "bad-train-section /train/epochs");
  EXPECT_EQ(Refusal(TrainWorkflow(adam, R"(, "epochs": 2.5)")), "bad-train-section /train/epochs");
  EXPECT_EQ(Refusal(TrainWorkflow(adam, R"(, "shuffle_seed": 18446744073709551615)")),
            "bad-train-section /train/shuffle_seed");
  EXPECT_EQ(Refusal(TrainWorkflow(adam, R"(, "batchsize": 8)")), "unknown-field /train/batchsize");
}

// One namespace rule: in a training workflow each name means one block.
TEST(TrainSection, NamesMeanOneBlock) {
  const std::string adam = R"({"kind": "adam"})";
  EXPECT_EQ(Refusal(TrainWorkflow(adam, "", R"([{"name": "logits", "from": "logits"},
                                               {"name": "loss", "from": "logits"}])")),
            "ambiguous-name /outputs/1");
  EXPECT_EQ(Refusal(TrainWorkflow(adam, "", R"([{"name": "logits", "from": "logits"},
                                               {"name": "w", "from": "ce"}])")),
            "ambiguous-name /outputs/1");
  EXPECT_EQ(Refusal(TrainWorkflow(adam, "", R"([{"name": "logits", "from": "logits"},
                                               {"name": "loss", "from": "ce"}])")),
            "accepted");
  EXPECT_EQ(Refusal(TrainWorkflow(adam, "", R"([{"name": "scores", "from": "logits"}])")),
            "bad-train-section /train/eval_output");
}

TEST(Sources, IntegerDataMustBeIntegralAndInRange) {
  auto graph = [](const std::string& dtype, const std::string& value) {
    return R"({"version": 2, "determinism": "prod", "nodes": [{"id": 0, "op": "input",
      "shape": [1], "dtype": ")" +
           dtype + R"(", "data": [)" + value + R"(]}], "outputs": [{"name": "o", "id": 0}]})";
  };
  const std::string out = "data-out-of-range /nodes/0/data/0";
  EXPECT_EQ(Refusal(graph("i32", "2147483647")), "accepted");
  EXPECT_EQ(Refusal(graph("i32", "-2147483648")), "accepted");
  EXPECT_EQ(Refusal(graph("i32", "2147483648")), out);
  EXPECT_EQ(Refusal(graph("i32", "1.5")), out);
  EXPECT_EQ(Refusal(graph("i32", "3.0")), "accepted");
  EXPECT_EQ(Refusal(graph("u32", "4294967295")), "accepted");
  EXPECT_EQ(Refusal(graph("u32", "-1")), out);
  EXPECT_EQ(Refusal(graph("bool", "1")), "accepted");
  EXPECT_EQ(Refusal(graph("bool", "2")), out);
  EXPECT_EQ(Refusal(graph("f16", "65504")), "accepted");
  EXPECT_EQ(Refusal(graph("f16", "65520")), out);
  EXPECT_EQ(Refusal(graph("f32", "1e39")), out);
}

TEST(Initializer, IllTypedOrEmptyRangesAreRefused) {
  auto param = [](const std::string& init) {
    return R"({"version": 1, "determinism": "prod", "nodes": [{"id": 0, "op": "param",
      "shape": [2, 3], "init": )" +
           init + R"(}], "outputs": [{"name": "o", "id": 0}]})";
  };
  EXPECT_EQ(Refusal(param(R"({"kind": "uniform", "low": "-1", "high": 1, "seed": 1})")),
            "bad-initializer /nodes/0/init/low");
  EXPECT_EQ(Refusal(param(R"({"kind": "uniform", "low": 1, "high": 0, "seed": 1})")),
            "bad-initializer /nodes/0/init");
  EXPECT_EQ(Refusal(param(R"({"kind": "uniform", "low": 1, "high": 1, "seed": 1})")), "accepted");
  EXPECT_EQ(Refusal(param(R"({"kind": "kaiming_uniform", "fan_in": 0, "seed": 1})")),
            "bad-initializer /nodes/0/init/fan_in");
  EXPECT_EQ(Refusal(param(R"({"kind": "kaiming_uniform", "fan_in": 2.5, "seed": 1})")),
            "bad-initializer /nodes/0/init/fan_in");
  EXPECT_EQ(Refusal(param(R"({"kind": "zeros", "low": 0})")), "unknown-field /nodes/0/init/low");
  EXPECT_EQ(Refusal(param(R"({"kind": "kaiming_uniform", "seed": 1, "fanin": 3})")),
            "unknown-field /nodes/0/init/fanin");
}

TEST(BlockVerify, CatchesACorruptedProgram) {
  auto p = Lower(Workflow("prod", ""));
  ASSERT_TRUE(p.ok());
  Program forward = p.value();
  forward.blocks[1].inputs[0].second = 1;  // relu reads itself
  EXPECT_FALSE(Verify(forward).ok());
  Program later = p.value();
  later.blocks[0].inputs.push_back({"a", 1});  // the input reads a later block
  EXPECT_FALSE(Verify(later).ok());
  Program short_data = p.value();
  short_data.blocks[0].data->pop_back();
  EXPECT_FALSE(Verify(short_data).ok());
  Program dangling = p.value();
  dangling.outputs[0].block = 9;
  EXPECT_FALSE(Verify(dangling).ok());
  EXPECT_EQ(Verify(dangling).first().kind, ErrorKind::kInternal);
}

}  // namespace
}  // namespace scellis::block
