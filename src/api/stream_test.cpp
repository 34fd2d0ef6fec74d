#include "api/stream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "execplan/plan.h"

namespace scellis::api {
namespace {

constexpr int kD = 8, kH = 16, kK = 5;

// A row-wise MLP over a streamed dataset of `rows` rows: softmax(relu(x w1 + b1) w2) per row, the
// column mean of x and the column sum of the hidden layer over the rows, a param as it is, and x
// itself.
Json RowMlp(const std::vector<float>& x, int64_t rows) {
  auto param = [](const char* id, Json shape, int seed) {
    return Json{{"id", id},
                {"type", "param"},
                {"params",
                 {{"name", id},
                  {"shape", shape},
                  {"init", {{"kind", "uniform"}, {"low", -1}, {"high", 1}, {"seed", seed}}}}}};
  };
  auto op = [](const char* id, const char* type, Json params = Json::object()) {
    return Json{{"id", id}, {"type", type}, {"params", params}};
  };
  auto wire = [](const char* from, const char* to) { return Json{{"from", from}, {"to", to}}; };
  return {
      {"format", "scellis.workflow/1"},
      {"name", "row_mlp"},
      {"determinism", "prod"},
      {"tolerance", "default"},
      {"dims", {{"N", rows}, {"D", kD}, {"H", kH}, {"K", kK}}},
      {"nodes",
       {{{"id", "x"},
         {"type", "input"},
         {"params", {{"name", "samples"}, {"shape", {"N", "D"}}, {"stream", true}, {"data", x}}}},
        param("w1", {"D", "H"}, 3),
        param("b1", {"H"}, 4),
        param("w2", {"H", "K"}, 5),
        op("h", "matmul"),
        op("hb", "add"),
        op("r", "relu"),
        op("logits", "matmul"),
        op("p", "softmax"),
        op("colmean", "mean", {{"axis", 0}}),
        op("hsum", "sum", {{"axis", 0}})}},
      {"wires",
       {wire("x", "h.a"), wire("w1", "h.b"), wire("h", "hb.a"), wire("b1", "hb.b"),
        wire("hb", "r.a"), wire("r", "logits.a"), wire("w2", "logits.b"), wire("logits", "p.a"),
        wire("x", "colmean.a"), wire("r", "hsum.a")}},
      {"outputs",
       {{{"name", "probs"}, {"from", "p"}},
        {{"name", "column_mean"}, {"from", "colmean"}},
        {{"name", "hidden_sum"}, {"from", "hsum"}},
        {{"name", "w2"}, {"from", "w2"}},
        {{"name", "echo"}, {"from", "x"}}}}};
}

class StreamedInput : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    std::mt19937 rng(seed_);
    std::uniform_real_distribution<float> value(-2, 2);
    for (int64_t i = 0; i < kRows * kD; ++i) x_.push_back(value(rng));
    if (!std::getenv("VK_ICD_FILENAMES"))
      setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  }
  static RunOptions On(const std::string& backend, std::optional<int64_t> budget = {}) {
    RunOptions o;
    o.select = {.requested = backend, .allow_software_adapter = true, .cpu_threads = 2};
    o.compile.plan.budget_bytes = budget;
    return o;
  }
  static const runtime::HostTensor& Output(const RunReport& r, const std::string& name) {
    for (const auto& [n, t] : r.outputs)
      if (n == name) return t;
    throw std::runtime_error("no output " + name);
  }
  // 293 rows (a prime: the last chunk is shorter than the others), a budget far below their plan.
  static constexpr int64_t kRows = 293;
  static constexpr int64_t kBudget = 12 * 1024;
  unsigned seed_ = 0;
  std::vector<float> x_;
};

TEST_F(StreamedInput, ChunksOnTheReferenceMatchTheInMemoryRunBitForBit) {
  const std::string doc = RowMlp(x_, kRows).dump();
  auto whole = api::Run(doc, On("cpu"));
  ASSERT_TRUE(whole.ok()) << whole.errors().front().Format();
  EXPECT_TRUE(whole->streaming.is_null());
  auto streamed = api::Run(doc, On("cpu", kBudget));
  ASSERT_TRUE(streamed.ok()) << streamed.errors().front().Format();
  ASSERT_FALSE(streamed->streaming.is_null());
  const int64_t chunk = streamed->streaming["chunk_rows"].get<int64_t>();
  EXPECT_GT(streamed->streaming["chunks"].get<int64_t>(), 2);
  EXPECT_LT(chunk, kRows);
  EXPECT_NE(kRows % chunk, 0) << "the last chunk should be shorter, with a plan of its own";
  EXPECT_EQ(streamed->streaming["plans"], 2);
  ASSERT_EQ(streamed->outputs.size(), whole->outputs.size());
  for (size_t i = 0; i < whole->outputs.size(); ++i) {
    const auto& [name, want] = whole->outputs[i];
    const auto& [got_name, got] = streamed->outputs[i];
    EXPECT_EQ(got_name, name);
    EXPECT_EQ(got.type.sizes(), want.type.sizes()) << name;
    EXPECT_TRUE(got.bytes == want.bytes) << name << " differs, seed " << seed_;
  }
  // An anchor outside the engine: the column mean in float64.
  const std::vector<float> mean = ValuesOf(Output(*streamed, "column_mean"));
  ASSERT_EQ(mean.size(), size_t{kD});
  for (int c = 0; c < kD; ++c) {
    double s = 0;
    for (int64_t r = 0; r < kRows; ++r) s += x_[r * kD + c];
    EXPECT_NEAR(mean[c], s / kRows, 1e-5) << "column " << c << ", seed " << seed_;
  }
  // Every row of the softmax sums to one.
  const std::vector<float> probs = ValuesOf(Output(*streamed, "probs"));
  ASSERT_EQ(probs.size(), size_t(kRows * kK));
  for (int64_t r = 0; r < kRows; ++r) {
    double s = 0;
    for (int k = 0; k < kK; ++k) s += probs[r * kK + k];
    EXPECT_NEAR(s, 1.0, 1e-5) << "row " << r;
  }
}

// The rows may come from the caller's feeds instead of the document's data.
TEST_F(StreamedInput, FedRowsStreamLikeInlineOnes) {
  auto whole = api::Run(RowMlp(x_, kRows).dump(), On("cpu"));
  ASSERT_TRUE(whole.ok()) << whole.errors().front().Format();
  Json fed_doc = RowMlp(x_, kRows);
  fed_doc["nodes"][0]["params"].erase("data");
  RunOptions o = On("cpu", kBudget);
  o.feeds["samples"] = runtime::HostTensor::FromFloats(MakeType({kRows, kD}), x_);
  auto streamed = api::Run(fed_doc.dump(), o);
  ASSERT_TRUE(streamed.ok()) << streamed.errors().front().Format();
  EXPECT_GT(streamed->streaming["chunks"].get<int64_t>(), 2);
  ASSERT_EQ(streamed->outputs.size(), whole->outputs.size());
  for (size_t i = 0; i < whole->outputs.size(); ++i)
    EXPECT_TRUE(streamed->outputs[i].second.bytes == whole->outputs[i].second.bytes)
        << whole->outputs[i].first << ", seed " << seed_;
  // A feed of the wrong row count is refused by name.
  o.feeds["samples"] = runtime::HostTensor::FromFloats(MakeType({kRows - 1, kD}),
                                                       std::span(x_).first((kRows - 1) * kD));
  auto wrong = api::Run(fed_doc.dump(), o);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.errors().front().code, "feed-type-mismatch");
}

TEST_F(StreamedInput, ChunksOnSwiftShaderMatchTheReferenceWithinTolerance) {
  const std::string doc = RowMlp(x_, kRows).dump();
  auto reference = api::Run(doc, On("cpu"));
  ASSERT_TRUE(reference.ok()) << reference.errors().front().Format();
  auto gpu = api::Run(doc, On("webgpu", kBudget));
  ASSERT_TRUE(gpu.ok()) << gpu.errors().front().Format();
  EXPECT_EQ(gpu->backend, "webgpu");
  ASSERT_FALSE(gpu->streaming.is_null());
  EXPECT_GT(gpu->streaming["chunks"].get<int64_t>(), 2);
  for (size_t i = 0; i < reference->outputs.size(); ++i) {
    const std::vector<float> want = ValuesOf(reference->outputs[i].second);
    const std::vector<float> got = ValuesOf(gpu->outputs[i].second);
    ASSERT_EQ(got.size(), want.size()) << reference->outputs[i].first;
    for (size_t j = 0; j < want.size(); ++j)
      EXPECT_NEAR(got[j], want[j], gpu->thresholds.atol + gpu->thresholds.rtol * std::fabs(want[j]))
          << reference->outputs[i].first << "[" << j << "], seed " << seed_;
  }
}

Result<pipeline::Compiled> PlanOf(const std::string& doc, std::optional<int64_t> budget) {
  pipeline::CompileOptions o;
  o.up_to = pipeline::Rung::kExecplan;
  o.plan.budget_bytes = budget;
  o.plan.limits = execplan::HostMemoryLimits("cpu", "cpu");
  SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled c, pipeline::Compile(doc, o));
  SCELLIS_TRY(PlanStreaming(doc, o, c).status());
  return c;
}

TEST_F(StreamedInput, APlanThatDoesNotFitWholeTurnsYellowWithItsChunks) {
  const std::string doc = RowMlp(x_, kRows).dump();
  auto green = PlanOf(doc, std::nullopt);
  ASSERT_TRUE(green.ok()) << green.errors().front().Format();
  EXPECT_EQ(green->plan->verdict, execplan::Verdict::kGreen);
  EXPECT_FALSE(green->plan->stream.has_value());

  auto yellow = PlanOf(doc, kBudget);
  ASSERT_TRUE(yellow.ok()) << yellow.errors().front().Format();
  const execplan::Plan& p = *yellow->plan;
  EXPECT_EQ(p.verdict, execplan::Verdict::kYellow);
  ASSERT_TRUE(p.stream.has_value());
  EXPECT_EQ(p.stream->rows, kRows);
  EXPECT_EQ(p.stream->bytes, kRows * kD * 4);
  EXPECT_GT(p.stream->whole_allocated, kBudget);
  EXPECT_LE(p.memory.allocated, kBudget);
  EXPECT_EQ(p.stream->chunks, (kRows + p.stream->chunk_rows - 1) / p.stream->chunk_rows);
  EXPECT_EQ(p.stream->reduced_outputs, (std::vector<std::string>{"column_mean", "hidden_sum"}));
  // The chunk is the largest that fits: one row more plans red.
  auto more = PlanOf(
      RowMlp(std::vector<float>((p.stream->chunk_rows + 1) * kD, 1.0f), p.stream->chunk_rows + 1)
          .dump(),
      kBudget);
  ASSERT_TRUE(more.ok());
  EXPECT_NE(more->plan->verdict, execplan::Verdict::kGreen);
  ASSERT_FALSE(p.findings.empty());
  EXPECT_EQ(p.findings[0].code, "streamed-input");
  EXPECT_EQ(p.findings[0].pointer, "/nodes/0");
  const std::string text = execplan::Print(p);
  EXPECT_NE(text.find("verdict          : yellow"), std::string::npos) << text;
  EXPECT_NE(text.find("streamed-input"), std::string::npos) << text;
  EXPECT_NE(text.find("streaming        : input \"samples\" N=293"), std::string::npos) << text;
  const Json j = execplan::ToJson(p);
  EXPECT_EQ(j["verdict"], "yellow");
  EXPECT_EQ(j["streaming"]["chunk_rows"], p.stream->chunk_rows);
  EXPECT_EQ(j["findings"][0]["code"], "streamed-input");
}

TEST_F(StreamedInput, RedWhenNotEvenOneRowFits) {
  auto red = PlanOf(RowMlp(x_, kRows).dump(), 512);
  ASSERT_TRUE(red.ok()) << red.errors().front().Format();
  EXPECT_EQ(red->plan->verdict, execplan::Verdict::kRed);
  EXPECT_FALSE(red->plan->stream.has_value());
  bool named = false;
  for (const Diagnostic& d : red->plan->findings) named = named || d.code == "stream-row-too-large";
  EXPECT_TRUE(named);
}

// Graphs that mix rows are refused by name, pointing at the node, before anything runs.
TEST_F(StreamedInput, GraphsThatMixRowsAreRefused) {
  auto refused = [&](Json doc, const std::string& pointer) {
    bool dispatched = false;
    RunEvents events;
    events.backend = [&](const std::string&, const std::optional<std::string>&) {
      dispatched = true;
    };
    auto r = api::Run(doc.dump(), On("cpu"), events);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.errors().front().code, "stream-unsupported") << r.errors().front().Format();
    EXPECT_EQ(r.errors().front().pointer, pointer) << r.errors().front().Format();
    EXPECT_FALSE(dispatched);
  };
  // A reduction over the rows used again (centering): /nodes/10 reads the column mean.
  Json centered = RowMlp(x_, kRows);
  centered["nodes"].push_back({{"id", "xc"}, {"type", "sub"}, {"params", Json::object()}});
  centered["wires"].push_back({{"from", "x"}, {"to", "xc.a"}});
  centered["wires"].push_back({{"from", "colmean"}, {"to", "xc.b"}});
  centered["outputs"].push_back({{"name", "centered"}, {"from", "xc"}});
  refused(centered, "/nodes/11");
  // A sum of every element.
  Json total = RowMlp(x_, kRows);
  total["nodes"].push_back({{"id", "all"}, {"type", "sum"}, {"params", Json::object()}});
  total["wires"].push_back({{"from", "x"}, {"to", "all.a"}});
  total["outputs"].push_back({{"name", "total"}, {"from", "all"}});
  refused(total, "/nodes/11");
  // A matmul contracting over the rows: x^T x.
  Json gram = RowMlp(x_, kRows);
  gram["nodes"].push_back({{"id", "xt"}, {"type", "transpose"}, {"params", Json::object()}});
  gram["nodes"].push_back({{"id", "g"}, {"type", "matmul"}, {"params", Json::object()}});
  gram["wires"].push_back({{"from", "x"}, {"to", "xt.a"}});
  gram["wires"].push_back({{"from", "xt"}, {"to", "g.a"}});
  gram["wires"].push_back({{"from", "x"}, {"to", "g.b"}});
  gram["outputs"].push_back({{"name", "gram"}, {"from", "g"}});
  refused(gram, "/nodes/11");
}

}  // namespace
}  // namespace scellis::api
