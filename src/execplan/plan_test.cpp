// Rung 4: buffer reuse from static liveness (checked here by an independent interval test), the
// memory plan by class, verdicts against budgets and device limits, and the verifier.
#include "execplan/plan.h"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "execplan/run_demand.h"
#include "support/graph.h"

namespace scellis::execplan {
namespace {

using scellis::testing::CompileAndRun;
using scellis::testing::FindOutput;
using scellis::testing::GraphDoc;
using scellis::testing::InputNode;
using scellis::testing::ProdOptions;

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Result<Plan> PlanOf(const std::string& text, PlanOptions options = {}) {
  pipeline::CompileOptions o = ProdOptions();
  o.plan = options;
  auto c = pipeline::Compile(text, o);
  if (!c.ok()) return c.status();
  return std::move(*c->plan);
}

PlanOptions Budget(int64_t bytes) {
  PlanOptions o;
  o.budget_bytes = bytes;
  return o;
}

// Independent of the planner's own bookkeeping: each value lives from the step that writes it to
// the last step that reads it (to the end for sources and outputs); values sharing a buffer must
// not overlap, a step never writes a buffer it reads, and every buffer is big enough.
// A source an output is written over (Kernel::in_place) lives only to its last reader: the
// output must not take its buffer while a later step still reads it.
void ExpectNoLiveValuesShareABuffer(const Plan& p) {
  const webir::Graph& g = p.graph();
  const int end = static_cast<int>(p.steps.size());
  std::set<int> replaced;
  for (const Step& s : p.steps) {
    const kernel::Kernel& k = p.module().kernels[s.kernel];
    for (size_t j = 0; j < k.Outputs().size(); ++j)
      if (k.InPlaceOf(j) >= 0) replaced.insert(k.inputs[k.InPlaceOf(j)]);
  }
  std::map<int, std::pair<int, int>> live;  // node -> [first, last] step
  for (const webir::Node& n : g.nodes)
    if (n.role == webir::Role::kInput || n.role == webir::Role::kParam)
      live[n.id] = {-1, replaced.count(n.id) ? -1 : end};
  for (int s = 0; s < end; ++s) {
    const kernel::Kernel& k = p.module().kernels[p.steps[s].kernel];
    for (int o : k.Outputs()) live[o] = {s, s};
    for (int in : k.inputs) {
      ASSERT_TRUE(live.count(in)) << k.name << " reads an unwritten value";
      live[in].second = std::max(live[in].second, s);
    }
    const std::vector<int> writes = p.steps[s].Writes();
    for (size_t r = 0; r < p.steps[s].reads.size(); ++r)
      for (size_t j = 0; j < writes.size(); ++j)
        if (k.InPlaceOf(j) != static_cast<int>(r))
          EXPECT_NE(p.steps[s].reads[r], writes[j]) << k.name << " writes what it reads";
  }
  for (const webir::Output& o : g.outputs) live[o.node].second = end;
  std::map<int, std::vector<int>> by_buffer;
  for (const auto& [node, range] : live) {
    int b = p.buffer_of[node];
    ASSERT_GE(b, 0);
    EXPECT_GE(p.buffers[b].bytes, g.at(node).type.bytes());
    by_buffer[b].push_back(node);
  }
  for (const auto& [b, nodes] : by_buffer)
    for (size_t i = 0; i < nodes.size(); ++i)
      for (size_t j = i + 1; j < nodes.size(); ++j) {
        auto [a0, a1] = live[nodes[i]];
        auto [b0, b1] = live[nodes[j]];
        EXPECT_TRUE(a1 <= b0 || b1 <= a0)
            << "%" << g.at(nodes[i]).name << " [" << a0 << "," << a1 << "] and %"
            << g.at(nodes[j]).name << " [" << b0 << "," << b1 << "] share b" << b;
      }
}

// ten rounds of relu then matmul by a signed permutation: every value is exact.
Json ReluMatmulChain(int rounds, const std::vector<float>& x, const std::vector<float>& w, int n) {
  std::vector<Json> nodes = {InputNode(0, {n, n}, x), InputNode(1, {n, n}, w)};
  int prev = 0, id = 2;
  for (int r = 0; r < rounds; ++r) {
    nodes.push_back({{"id", id}, {"op", "relu"}, {"a", prev}});
    nodes.push_back({{"id", id + 1}, {"op", "matmul"}, {"a", id}, {"b", 1}});
    prev = id + 1;
    id += 2;
  }
  return GraphDoc(nodes, {{"y", prev}});
}

TEST(Buffers, ChainOfTenReusesBuffers) {
  const int n = 8, rounds = 10;
  // w[k][j] = sign_j where k = (3 j + 1) mod 8: one nonzero per row and column.
  std::vector<float> x(n * n), w(n * n, 0.0f);
  for (int i = 0; i < n * n; ++i) x[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  std::vector<int> from(n);
  std::vector<float> sign(n);
  for (int j = 0; j < n; ++j) {
    from[j] = (3 * j + 1) % n;
    sign[j] = j % 3 == 0 ? -1.0f : 1.0f;
    w[from[j] * n + j] = sign[j];
  }
  std::string text = ReluMatmulChain(rounds, x, w, n).dump();
  auto p = PlanOf(text, Budget(1 << 20));
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  // Each relu after the first is the epilogue of the matmul before it.
  ASSERT_EQ(p->steps.size(), static_cast<size_t>(rounds + 1));
  const size_t values = 2 + 2 * rounds;
  // Two pinned sources, a pinned output, and the intermediates ping-pong between two buffers.
  EXPECT_LT(p->buffers.size(), values);
  EXPECT_LE(p->buffers.size(), 5u) << Print(p.value());
  int64_t tensor = n * n * 4;
  EXPECT_LE(p->memory.allocated, 5 * tensor);
  EXPECT_LT(p->memory.peak_live, static_cast<int64_t>(values) * tensor);
  ExpectNoLiveValuesShareABuffer(p.value());

  // The reused buffers still give the right answer.
  std::vector<double> v(x.begin(), x.end());
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> next(n * n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) next[i * n + j] = sign[j] * std::max(0.0, v[i * n + from[j]]);
    v = next;
  }
  auto out = CompileAndRun(text);
  ASSERT_NE(FindOutput(out, "y"), nullptr);
  EXPECT_EQ(FindOutput(out, "y")->ToFloats(), std::vector<float>(v.begin(), v.end()));
}

// A kernel reading one value twice frees its buffer once.
TEST(Buffers, ValueReadTwiceByOneKernel) {
  std::string text = GraphDoc({InputNode(0, {2, 2}, {1, 2, 3, 4}),
                               {{"id", 1}, {"op", "relu"}, {"a", 0}},
                               {{"id", 2}, {"op", "matmul"}, {"a", 1}, {"b", 1}},
                               {{"id", 3}, {"op", "transpose"}, {"a", 2}},
                               {{"id", 4}, {"op", "transpose"}, {"a", 0}},
                               {{"id", 5}, {"op", "add"}, {"a", 3}, {"b", 4}}},
                              {{"y", 5}})
                         .dump();
  auto p = PlanOf(text, Budget(1 << 20));
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  ExpectNoLiveValuesShareABuffer(p.value());
  // [[1,2],[3,4]]^2 = [[7,10],[15,22]]; its transpose plus x's transpose.
  auto r = CompileAndRun(text);
  ASSERT_NE(FindOutput(r, "y"), nullptr);
  EXPECT_EQ(FindOutput(r, "y")->ToFloats(), (std::vector<float>{8, 18, 12, 26}));
}

TEST(Buffers, ExamplesNeverShareALiveBuffer) {
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(SCELLIS_SOURCE_DIR) + "/examples")) {
    if (e.path().extension() != ".json") continue;
    SCOPED_TRACE(e.path().filename().string());
    auto p = PlanOf(ReadExample(e.path().filename().string()), Budget(1 << 30));
    ASSERT_TRUE(p.ok());
    ExpectNoLiveValuesShareABuffer(p.value());
    EXPECT_TRUE(Verify(p.value()).ok());
  }
}

// ---- the memory plan ----

TEST(Memory, CenterColumnsByClass) {
  // By hand: x [4,3] input 48 B; w [3,2] parameter 24 B; working: mean [3] 12 B, xc [4,3] 48 B
  // (an output, pinned), y [4,2] 32 B (an output, pinned).
  auto p = PlanOf(ReadExample("center_columns.json"));
  ASSERT_TRUE(p.ok());
  const MemoryPlan& m = p->memory;
  EXPECT_EQ(m.by_class[static_cast<int>(MemClass::kInputs)], 48);
  EXPECT_EQ(m.by_class[static_cast<int>(MemClass::kParameters)], 24);
  EXPECT_EQ(m.by_class[static_cast<int>(MemClass::kWorking)], 12 + 48 + 32);
  EXPECT_EQ(m.by_class[static_cast<int>(MemClass::kActivations)], 0);
  EXPECT_EQ(m.by_class[static_cast<int>(MemClass::kGradients)], 0);
  EXPECT_EQ(m.by_class[static_cast<int>(MemClass::kOptimizerState)], 0);
  EXPECT_EQ(m.allocated, 164);
  EXPECT_EQ(m.largest_tensor, 48);
  // Live: 72 (sources) + 12 (mean) + 48 (xc) - 12 (mean's last reader ran) + 32 (y) = 152.
  EXPECT_EQ(m.peak_live, 152);
  EXPECT_EQ(m.budget, 1048576);  // the document's budget
  EXPECT_EQ(m.budget_source, "the document");
  EXPECT_EQ(p->verdict, Verdict::kGreen);
  EXPECT_TRUE(p->findings.empty());
  // Default tolerance under prod, as plan prints it.
  EXPECT_EQ(p->thresholds.atol, 1e-5);
  EXPECT_EQ(p->thresholds.rtol, 1e-4);
  for (const Buffer& b : p->buffers) {
    bool source = b.cls == MemClass::kInputs || b.cls == MemClass::kParameters;
    if (source) {
      EXPECT_TRUE(b.pinned);
    }
  }
}

// logits = x @ w, cross-entropy against labels, one Adam step: a training step small enough to
// account for by hand. x [B,3], labels [B], w [3,2].
std::string TinyAdamStep(int64_t batch) {
  std::vector<float> x(batch * 3), labels(batch);
  for (int64_t i = 0; i < batch * 3; ++i) x[i] = static_cast<float>(i % 5) - 2.0f;
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<float>(i % 2);
  Json doc = {
      {"format", "scellis.workflow/1"},
      {"name", "tiny_adam_step"},
      {"determinism", "prod"},
      {"dims", {{"B", batch}}},
      {"nodes",
       {{{"id", "x"}, {"type", "input"}, {"params", {{"shape", {"B", 3}}, {"data", x}}}},
        {{"id", "labels"}, {"type", "input"}, {"params", {{"shape", {"B"}}, {"data", labels}}}},
        {{"id", "w"},
         {"type", "param"},
         {"params", {{"shape", {3, 2}}, {"init", {{"kind", "kaiming_uniform"}, {"seed", 1}}}}}},
        {{"id", "logits"}, {"type", "matmul"}},
        {{"id", "loss"}, {"type", "cross_entropy"}}}},
      {"wires",
       {{{"from", "x"}, {"to", "logits.a"}},
        {{"from", "w"}, {"to", "logits.b"}},
        {{"from", "logits"}, {"to", "loss.a"}},
        {{"from", "labels"}, {"to", "loss.target"}}}},
      {"outputs", {{{"name", "loss"}, {"from", "loss"}}}},
      {"train", {{"loss", "loss"}, {"optimizer", {{"kind", "adam"}, {"lr", 0.01}}}}}};
  return doc.dump();
}

std::array<int64_t, kMemClasses> Classes(int64_t parameters, int64_t inputs, int64_t activations,
                                         int64_t gradients, int64_t optimizer_state,
                                         int64_t working) {
  // No master weights (mixed precision) and no dataset in these plans.
  return {parameters, 0, inputs, activations, gradients, optimizer_state, working, 0};
}

TEST(Memory, ClassesAtPeakOfATrainingStepByHand) {
  // Sources, live throughout: x 12B, labels 4B, step 4 (inputs); w 24 (parameters); w@m, w@v
  // 24 each (optimizer state). Then, one kernel a step:
  //   k0 logits [B,2] 8B (activations: the gradient reads it); k1 the loss 4 (working, an
  //   output) and d_logits [B,2] 8B (gradient) from one kernel (merge-loss-gradient; the seed
  //   gradient is a literal, fold-constant-inputs), after which logits are dead; k2 the matmul
  //   d_w = x^T d_logits with Adam's three outputs applied to each element of it (merge-optimizer-
  //   outputs, fuse-optimizer-into-gradient): d_w has no buffer, and w's, m's and v's next values
  //   are written over w, w@m and w@v (write-state-in-place: nothing reads the old ones after
  //   it), taking no bytes of their own.
  // B = 2: the sources are 108 B; live runs 124, 144 (-16), 128: the peak is after k1, with logits
  // (read by k1) and d_logits live; optimizer state (w@m, w@v, 48 B) dominates.
  {
    auto p = PlanOf(TinyAdamStep(2), Budget(1 << 20));
    ASSERT_TRUE(p.ok()) << p.errors().front().Format();
    const MemoryPlan& m = p->memory;
    EXPECT_EQ(m.peak_live, 144);
    EXPECT_EQ(m.at_peak, Classes(24, 36, 16, 16, 48, 4)) << Print(p.value());
    EXPECT_EQ(p->module().kernels[m.peak_step].name, "k1_cross_entropy_cross_entropy_grad");
    EXPECT_EQ(DominantClass(m), MemClass::kOptimizerState);
    // Allocated: every value above in a buffer of its own: the activation 16 B, the gradient 16;
    // the new parameter and moments in the old ones' buffers.
    EXPECT_EQ(m.by_class, Classes(24, 36, 16, 16, 48, 4));
    EXPECT_EQ(m.allocated, 144);
    Json j = ToJson(p.value());
    EXPECT_EQ(j["memory"]["dominant_class"], "optimizer_state");
    EXPECT_EQ(j["memory"]["at_peak"]["gradients"], 16);
    const std::string text = Print(p.value());
    EXPECT_NE(text.find("optimizer_state  48 B        48 B  <- dominates"), std::string::npos)
        << text;
    EXPECT_NE(text.find("(peak after k1_cross_entropy_cross_entropy_grad)"), std::string::npos)
        << text;
  }
  // B = 100: x 1200 B and labels 400 B make the sources 1676 B; live runs 2476, 3280 (-800),
  // 2480 (-800) = 1680: the peak is after k1, while the batch-sized values are live: inputs
  // 1604 dominate activations (logits) 800 and gradients (d_logits) 800.
  {
    auto p = PlanOf(TinyAdamStep(100), Budget(1 << 20));
    ASSERT_TRUE(p.ok()) << p.errors().front().Format();
    const MemoryPlan& m = p->memory;
    EXPECT_EQ(m.peak_live, 3280);
    EXPECT_EQ(m.at_peak, Classes(24, 1604, 800, 800, 48, 4)) << Print(p.value());
    EXPECT_EQ(p->module().kernels[m.peak_step].name, "k1_cross_entropy_cross_entropy_grad");
    EXPECT_EQ(DominantClass(m), MemClass::kInputs);
  }
}

// The peak by class, recounted from the kernels alone: at step s a stored value is live when it
// is written by then, and it is a source, a named output, optimizer state, or still to be read
// at s or later (its last reader's step counts: the output is written before the inputs go).
TEST(Memory, PeakByClassMatchesARecountOnEveryExample) {
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(SCELLIS_SOURCE_DIR) + "/examples")) {
    if (e.path().extension() != ".json") continue;
    SCOPED_TRACE(e.path().filename().string());
    auto p = PlanOf(ReadExample(e.path().filename().string()), Budget(1 << 30));
    ASSERT_TRUE(p.ok());
    const webir::Graph& g = p->graph();
    const int steps = static_cast<int>(p->steps.size());
    std::map<int, std::pair<int, int>> live;  // node -> [written, last step it is live]
    for (const webir::Node& n : g.nodes)
      if (n.role == webir::Role::kInput || n.role == webir::Role::kParam) live[n.id] = {-1, steps};
    for (int s = 0; s < steps; ++s) {
      const kernel::Kernel& k = p->module().kernels[p->steps[s].kernel];
      // An output written over an input takes no bytes of its own: the input's are counted.
      const std::vector<int> outs = k.Outputs();
      for (size_t j = 0; j < outs.size(); ++j) {
        if (k.InPlaceOf(j) >= 0) continue;
        const bool kept = p->class_of[outs[j]] == MemClass::kOptimizerState;
        live[outs[j]] = {s, kept ? steps : s};
      }
      for (int in : k.inputs) live[in].second = std::max(live[in].second, s);
    }
    for (const webir::Output& o : g.outputs)
      if (live.count(o.node)) live[o.node].second = steps;
    int64_t peak = -1;
    int peak_step = -2;
    std::array<int64_t, kMemClasses> at_peak{};
    for (int s = -1; s < steps; ++s) {
      std::array<int64_t, kMemClasses> by_class{};
      int64_t total = 0;
      for (const auto& [node, range] : live) {
        if (range.first > s || range.second < s) continue;
        by_class[static_cast<int>(p->class_of[node])] += g.at(node).type.bytes();
        total += g.at(node).type.bytes();
      }
      if (total > peak) {
        peak = total;
        peak_step = s;
        at_peak = by_class;
      }
    }
    EXPECT_EQ(p->memory.peak_live, peak);
    EXPECT_EQ(p->memory.peak_step, peak_step);
    EXPECT_EQ(p->memory.at_peak, at_peak);
  }
}

// A red plan says by how much and which class is to blame, with the numbers.
TEST(Verdict, RedSaysBytesOverAndTheClassResponsible) {
  auto p = PlanOf(TinyAdamStep(100), Budget(3000));  // needs 1604 + 24 + ... allocated
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->verdict, Verdict::kRed);
  const Diagnostic& d = p->findings.at(0);
  EXPECT_EQ(d.code, "memory-over-budget");
  const int64_t over = p->memory.allocated - 3000;
  EXPECT_NE(d.message.find(FormatBytes(over) + " over the budget of 2.9 KiB"), std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("the largest class at peak is inputs (1.6 KiB of 3.2 KiB live)"),
            std::string::npos)
      << d.message;
}

TEST(Memory, CommandLineBudgetOverridesTheDocument) {
  auto p = PlanOf(ReadExample("center_columns.json"), Budget(4096));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->memory.budget, 4096);
  EXPECT_EQ(p->memory.budget_source, "--budget");
}

// ---- verdicts ----

TEST(Verdict, RedOnATinyBudgetWithTheNumbers) {
  auto p = PlanOf(ReadExample("center_columns.json"), Budget(100));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->verdict, Verdict::kRed);
  ASSERT_FALSE(p->findings.empty());
  const Diagnostic& d = p->findings[0];
  EXPECT_EQ(d.code, "memory-over-budget");
  EXPECT_EQ(d.severity, Severity::kError);
  EXPECT_NE(d.message.find("164 B"), std::string::npos) << d.message;         // what the plan needs
  EXPECT_NE(d.message.find("100 B"), std::string::npos) << d.message;         // the budget
  EXPECT_NE(d.message.find("working 92 B"), std::string::npos) << d.message;  // by class
  EXPECT_FALSE(d.help.empty());
  std::string text = Print(p.value());
  EXPECT_NE(text.find("verdict          : red"), std::string::npos) << text;
  EXPECT_EQ(ToJson(p.value())["verdict"], "red");

  // A red plan never dispatches.
  runtime::cpu::CpuExecutor exec({.threads = 1});
  auto r = exec.Run(p.value(), {});
  EXPECT_FALSE(r.ok());
}

TEST(Verdict, YellowNearTheBudgetGreenBelowIt) {
  // 164 B allocated: yellow above 80% of the budget (164 * 10 > budget * 8), red above 100%.
  struct Case {
    int64_t budget;
    Verdict want;
  };
  for (Case c : {Case{163, Verdict::kRed}, Case{164, Verdict::kYellow}, Case{204, Verdict::kYellow},
                 Case{205, Verdict::kGreen}, Case{1 << 20, Verdict::kGreen}}) {
    SCOPED_TRACE("budget " + std::to_string(c.budget));
    auto p = PlanOf(ReadExample("center_columns.json"), Budget(c.budget));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->verdict, c.want);
    if (c.want == Verdict::kYellow) {
      ASSERT_EQ(p->findings.size(), 1u);
      EXPECT_EQ(p->findings[0].code, "near-budget");
      EXPECT_EQ(p->findings[0].severity, Severity::kWarning);
      EXPECT_NE(p->findings[0].message.find("164 B"), std::string::npos);
    }
  }
  // A yellow plan runs.
  auto p = PlanOf(ReadExample("center_columns.json"), Budget(200));
  ASSERT_TRUE(p.ok());
  runtime::cpu::CpuExecutor exec({.threads = 1});
  EXPECT_TRUE(exec.Run(p.value(), {}).ok());
}

// center_columns by hand: buffers x 48 + w 24 + mean 12 + xc 48 + y 32 = 164 B; the host holds
// the sources (x 48, w 24) and the outputs read back (y 32, xc 48) = 152 B.
PlanOptions FakeMachine(int64_t host, bool buffers_in_host, int64_t device = 0) {
  PlanOptions o = Budget(int64_t{1} << 50);  // a declared budget far beyond any machine
  o.limits.device = "fake-device";
  o.limits.host_memory_bytes = host;
  o.limits.host_memory_source = "fake host";
  o.limits.buffers_in_host_memory = buffers_in_host;
  o.limits.device_memory_bytes = device;
  o.limits.device_memory_source = "fake heap";
  return o;
}

bool HasFinding(const Plan& p, const std::string& code) {
  for (const Diagnostic& d : p.findings)
    if (d.code == code) return true;
  return false;
}

TEST(Verdict, HostMemoryHoldsWhateverTheBudgetSays) {
  auto p = PlanOf(ReadExample("center_columns.json"), FakeMachine(316, true));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->memory.host_staging, 152);
  EXPECT_EQ(p->verdict, Verdict::kGreen);

  p = PlanOf(ReadExample("center_columns.json"), FakeMachine(315, true));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->verdict, Verdict::kRed);
  ASSERT_EQ(p->findings.size(), 1u);
  const Diagnostic& d = p->findings[0];
  EXPECT_EQ(d.code, "memory-over-host");
  EXPECT_NE(d.message.find("316 B"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("more than the host has (315 B, fake host)"), std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("buffers 164 B"), std::string::npos) << d.message;

  // Nothing is allocated for a red plan: the executor refuses it before its first buffer.
  runtime::cpu::CpuExecutor exec({.threads = 1});
  EXPECT_FALSE(exec.Run(p.value(), {}).ok());
}

TEST(Verdict, DeviceMemoryAndHostStagingAreJudgedApart) {
  // Buffers on the device: the host holds only the staging (152 B).
  auto p = PlanOf(ReadExample("center_columns.json"), FakeMachine(152, false, 164));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->verdict, Verdict::kGreen);

  p = PlanOf(ReadExample("center_columns.json"), FakeMachine(152, false, 163));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->verdict, Verdict::kRed);
  ASSERT_EQ(p->findings.size(), 1u);
  EXPECT_EQ(p->findings[0].code, "memory-over-device");
  EXPECT_NE(p->findings[0].message.find("164 B"), std::string::npos);
  EXPECT_NE(p->findings[0].message.find("more than fake-device has (163 B, fake heap)"),
            std::string::npos)
      << p->findings[0].message;

  p = PlanOf(ReadExample("center_columns.json"), FakeMachine(151, false, 164));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->verdict, Verdict::kRed);
  EXPECT_TRUE(HasFinding(*p, "memory-over-host"));
  EXPECT_FALSE(HasFinding(*p, "memory-over-device"));
}

TEST(Verdict, CallerStagingCountsOnTheHost) {
  PlanOptions o = FakeMachine(416, true);
  o.caller_host_bytes = 100;
  o.caller_host_what = "the gathered batches";
  auto p = PlanOf(ReadExample("center_columns.json"), o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->verdict, Verdict::kGreen);
  o.caller_host_bytes = 101;
  p = PlanOf(ReadExample("center_columns.json"), o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->verdict, Verdict::kRed);
  ASSERT_EQ(p->findings.size(), 1u);
  EXPECT_NE(p->findings[0].message.find("the gathered batches 101 B"), std::string::npos)
      << p->findings[0].message;
}

// A WebGPU session stages each step's fed inputs in slots of its own (256-byte offsets) for the
// steps in flight: the plan counts them as device memory in the class `inputs`; the CPU
// reference, which reads feeds where they are, counts none.
TEST(Verdict, FedStagingCountsOnAWebGpuDevice) {
  // A fed input of 100 floats (400 B, a 512 B slot), a carried one (never staged), one output.
  const std::string text = R"({"version": 2, "nodes": [
      {"id": 0, "op": "input", "name": "state", "shape": [8], "data": [0, 0, 0, 0, 0, 0, 0, 0],
       "carry": "next"},
      {"id": 1, "op": "input", "name": "feed", "shape": [100]},
      {"id": 2, "op": "sum", "a": 1},
      {"id": 3, "op": "add", "a": 0, "b": 2}],
      "outputs": [{"name": "next", "id": 3}]})";
  PlanOptions o = FakeMachine(int64_t{1} << 40, false);
  o.limits.backend = "webgpu";
  auto unstaged = PlanOf(text, o);
  ASSERT_TRUE(unstaged.ok()) << unstaged.errors().front().Format();
  EXPECT_EQ(unstaged->memory.fed_staging, 0);

  o.staged_steps = 16;
  auto staged = PlanOf(text, o);
  ASSERT_TRUE(staged.ok());
  const int64_t slots = 16 * 512;
  EXPECT_EQ(staged->memory.fed_staging, slots);
  EXPECT_EQ(staged->memory.allocated, unstaged->memory.allocated + slots);
  EXPECT_EQ(staged->memory.peak_live, unstaged->memory.peak_live + slots);
  const int inputs = static_cast<int>(MemClass::kInputs);
  EXPECT_EQ(staged->memory.by_class[inputs], unstaged->memory.by_class[inputs] + slots);
  EXPECT_EQ(ToJson(*staged)["memory"]["fed_staging"].get<int64_t>(), slots);

  // A device with one byte too few for the plan and the slots is refused before anything runs.
  o.limits.device_memory_bytes = staged->memory.allocated - 1;
  auto over = PlanOf(text, o);
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->verdict, Verdict::kRed);
  EXPECT_TRUE(HasFinding(*over, "memory-over-device"));
  o.limits.device_memory_bytes = staged->memory.allocated;
  EXPECT_EQ(PlanOf(text, o)->verdict, Verdict::kGreen);

  // The CPU reference stages nothing.
  o.limits.backend = "cpu";
  o.limits.device_memory_bytes = 0;
  auto cpu = PlanOf(text, o);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->memory.fed_staging, 0);
  EXPECT_EQ(cpu->memory.allocated, unstaged->memory.allocated);
}

// A carried state of 8 floats, "next", and a fed input of 3, summed into it each step.
constexpr const char* kCarriedStep = R"({"version": 2, "nodes": [
    {"id": 0, "op": "input", "name": "state", "shape": [8], "data": [0, 0, 0, 0, 0, 0, 0, 0],
     "carry": "next"},
    {"id": 1, "op": "input", "name": "feed", "shape": [3]},
    {"id": 2, "op": "sum", "a": 1},
    {"id": 3, "op": "add", "a": 0, "b": 2}],
    "outputs": [{"name": "next", "id": 3}]})";

// A run beyond what its plan counted — more steps in flight, other outputs watched — is counted
// again with its demand (JudgeRun): a budget holding exactly that passes it, one byte less refuses
// it by name, saying what the run asked beyond the plan. Within the plan there is nothing to judge.
TEST(Verdict, ARunBeyondThePlanIsCountedAgain) {
  const std::string text = kCarriedStep;
  PlanOptions o = FakeMachine(int64_t{1} << 40, false);
  o.limits.backend = "webgpu";
  o.staged_steps = 2;
  auto planned = PlanOf(text, o);
  ASSERT_TRUE(planned.ok()) << planned.errors().front().Format();
  EXPECT_TRUE(WithinPlan(*planned, {.steps_in_flight = 2}));
  EXPECT_FALSE(WithinPlan(*planned, {.steps_in_flight = 3}));
  EXPECT_FALSE(WithinPlan(*planned, {.steps_in_flight = 1, .watched = {"next"}}));

  PlanOptions demand = o;
  demand.staged_steps = 64;
  demand.watched = {"next"};
  demand.watched_steps_kept = 64;
  auto needs = PlanOf(text, demand);
  ASSERT_TRUE(needs.ok());
  // By hand: 62 more steps of the 12-byte feed in 256-byte slots, and the 32-byte "next" in
  // 256-byte slots of a history and its read-back buffer for 64 steps.
  EXPECT_EQ(needs->memory.allocated, planned->memory.allocated + 62 * 256 + 2 * 64 * 256);
  const RunDemand run{.steps_in_flight = 64, .watched = {"next"}};
  o.budget_bytes = needs->memory.allocated;
  auto fits = PlanOf(text, o);
  ASSERT_TRUE(fits.ok());
  EXPECT_TRUE(JudgeRun(*fits, run).ok());
  o.budget_bytes = needs->memory.allocated - 1;
  auto short_one = PlanOf(text, o);
  ASSERT_TRUE(short_one.ok());
  EXPECT_NE(short_one->verdict, Verdict::kRed);
  Status refused = JudgeRun(*short_one, run);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.first().code, "memory-over-budget");
  EXPECT_EQ(refused.first().help.rfind("this run has 64 steps in flight and watches \"next\"; the "
                                       "session was planned for 2 staged steps watching nothing",
                                       0),
            0u)
      << refused.first().help;
}

// The outputs a caller watches after every step: on a WebGPU device each run's history buffer and
// its read-back buffer for the staged steps (device memory, class `working`), a slot of 256 bytes
// per value and step, and on the host the steps the caller keeps (at least those in flight on a
// GPU, whose read-back holds the slots' padding too). Worked by hand: "next" is 8 floats.
TEST(Verdict, WatchedHistoryCountsOnTheDeviceAndTheHost) {
  const std::string text = kCarriedStep;
  PlanOptions o = FakeMachine(int64_t{1} << 40, false);
  o.limits.backend = "webgpu";
  o.staged_steps = 16;
  auto unwatched = PlanOf(text, o);
  ASSERT_TRUE(unwatched.ok()) << unwatched.errors().front().Format();
  EXPECT_EQ(unwatched->memory.watched_history, 0);

  o.watched = {"next"};
  o.watched_steps_kept = 100;
  auto watched = PlanOf(text, o);
  ASSERT_TRUE(watched.ok());
  const int64_t device = 256 * 16 * 2, host = 32 * 100 + (256 - 32) * 16;
  EXPECT_EQ(watched->memory.watched_history, device);
  EXPECT_EQ(watched->memory.watched_history_host, host);
  EXPECT_EQ(watched->memory.allocated, unwatched->memory.allocated + device);
  EXPECT_EQ(watched->memory.host_staging, unwatched->memory.host_staging + host);
  const int working = static_cast<int>(MemClass::kWorking);
  EXPECT_EQ(watched->memory.by_class[working], unwatched->memory.by_class[working] + device);
  EXPECT_EQ(ToJson(*watched)["memory"]["watched_history"].get<int64_t>(), device);

  // Kept for fewer steps than are in flight, the host still holds the read-back of those.
  o.watched_steps_kept = 1;
  EXPECT_EQ(PlanOf(text, o)->memory.watched_history_host, 32 * 16 + (256 - 32) * 16);

  // A host one byte short of a long history refuses the run before anything runs, saying why.
  o.watched_steps_kept = 1000000;
  auto fits = PlanOf(text, o);
  ASSERT_TRUE(fits.ok());
  o.limits.host_memory_bytes = fits->memory.host_staging - 1;
  auto over = PlanOf(text, o);
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->verdict, Verdict::kRed);
  ASSERT_TRUE(HasFinding(*over, "memory-over-host"));
  bool says_why = false;
  for (const Diagnostic& d : over->findings)
    says_why |= d.message.find("the watched outputs' values of every step kept 30.5 MiB") !=
                std::string::npos;
  EXPECT_TRUE(says_why) << over->findings.front().message;

  // The CPU reference returns every kept step's values, and holds no device history.
  o.limits.backend = "cpu";
  o.limits.host_memory_bytes = int64_t{1} << 40;
  o.watched_steps_kept = 100;
  auto cpu = PlanOf(text, o);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->memory.watched_history, 0);
  EXPECT_EQ(cpu->memory.watched_history_host, 32 * 100);
}

TEST(Verdict, TotalsSaturateInsteadOfWrapping) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(SaturatingAdd(max - 1, 2), max);
  EXPECT_EQ(SaturatingMul(int64_t{1} << 40, int64_t{1} << 40), max);
  EXPECT_EQ(SaturatingMul(3, 5), 15);
  EXPECT_EQ(SaturatingAdd(3, 5), 8);
}

TEST(Memory, UndeclaredBudgetIsEightyPercentOfWhereBuffersLive) {
  std::string doc =
      GraphDoc({InputNode(0, {2}, {1, 2}), {{"id", 1}, {"op", "relu"}, {"a", 0}}}, {{"y", 1}}, 1)
          .dump();
  PlanOptions host = FakeMachine(1000, true);
  host.budget_bytes.reset();
  auto p = PlanOf(doc, host);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->memory.budget, 800);
  EXPECT_EQ(p->memory.budget_source, "detected: 80% of fake host");

  PlanOptions device = FakeMachine(1000, false, 5000);
  device.budget_bytes.reset();
  p = PlanOf(doc, device);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->memory.budget, 4000);
  EXPECT_EQ(p->memory.budget_source, "detected: 80% of fake heap");
}

// The host's memory, read here independently of the planner: /proc/meminfo's MemAvailable.
TEST(Memory, UnsaidHostMemoryIsReadFromTheHost) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  int64_t kb = -1;
  while (std::getline(in, line))
    if (line.rfind("MemAvailable:", 0) == 0) kb = std::stoll(line.substr(13));
  if (kb < 0) GTEST_SKIP() << "no MemAvailable here";
  auto p = PlanOf(ReadExample("center_columns.json"));
  ASSERT_TRUE(p.ok());
  // Memory moves between the two reads; a quarter either way is still the same machine.
  EXPECT_GT(p->limits.host_memory_bytes, kb * 1024 / 4 * 3);
  EXPECT_LT(p->limits.host_memory_bytes, kb * 1024 / 4 * 5);
  EXPECT_EQ(p->limits.host_memory_source, "available host memory");
}

TEST(Verdict, DeviceLimits) {
  PlanOptions tight_buffer = Budget(1 << 20);
  tight_buffer.limits.device = "small-device";
  tight_buffer.limits.max_buffer_bytes = 40;  // xc and x are 48 B
  auto red = PlanOf(ReadExample("center_columns.json"), tight_buffer);
  ASSERT_TRUE(red.ok());
  EXPECT_EQ(red->verdict, Verdict::kRed);
  EXPECT_EQ(red->findings[0].code, "tensor-over-device-limit");
  EXPECT_NE(red->findings[0].message.find("48 B"), std::string::npos);
  EXPECT_NE(red->findings[0].message.find("small-device"), std::string::npos);

  // Over the binding cap, the mean must bind x (48 B) whole: refused in planning.
  PlanOptions tight_binding = Budget(1 << 20);
  tight_binding.limits.max_binding_bytes = 40;
  auto unbindable = PlanOf(ReadExample("center_columns.json"), tight_binding);
  ASSERT_TRUE(unbindable.ok());
  EXPECT_EQ(unbindable->verdict, Verdict::kRed);
  EXPECT_EQ(unbindable->findings[0].code, "binding-cap-exceeded");
  EXPECT_NE(unbindable->findings[0].message.find("k0_mean"), std::string::npos);

  // An elementwise kernel binds its same-shape operands in tiles: it runs, with a warning.
  tight_binding.limits.max_binding_bytes = 8;  // the 12-byte tensors of the seed example
  auto yellow = PlanOf(ReadExample("seed_mul_relu.json"), tight_binding);
  ASSERT_TRUE(yellow.ok());
  EXPECT_EQ(yellow->verdict, Verdict::kYellow);
  EXPECT_EQ(yellow->findings[0].code, "tiled-binding");
}

TEST(Verdict, FormatBytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.0 KiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 30), "3.0 GiB");
  EXPECT_EQ(FormatBytes(int64_t{8} << 40), "8.0 TiB");
}

// ---- the verifier ----

TEST(PlanVerify, CatchesCorruptedPlans) {
  auto p = PlanOf(ReadExample("center_columns.json"));
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(Verify(p.value()).ok());
  ASSERT_EQ(p->steps.size(), 3u);  // mean, fused sub, matmul

  Plan clobber = p.value();
  clobber.steps[0].write = clobber.buffer_of[0];  // mean overwrites x, which the sub still reads
  Status s = Verify(clobber);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.first().kind, ErrorKind::kInternal);
  EXPECT_NE(s.first().message.find("execplan.Verify"), std::string::npos);

  Plan output = p.value();
  output.steps[2].write = output.buffer_of[p->graph().outputs[1].node];  // y over centered
  EXPECT_FALSE(Verify(output).ok());

  Plan nowhere = p.value();
  nowhere.steps[1].write = 99;
  EXPECT_FALSE(Verify(nowhere).ok());
}

}  // namespace
}  // namespace scellis::execplan
