// Records of runs that used a user op with a callable reference (api/user_ops.h): the record holds
// the op's definition (signature, WGSL, the reference's version) and its hash, not the callable.
// A replay handed the same op agrees bit for bit on the CPU reference; one handed none, or the op
// with another version or WGSL, is refused by name before the callable is ever called.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>

#include "api/run.h"
#include "api/user_ops.h"
#include "record/replay.h"
#include "record/run_record.h"
#include "support/examples.h"
#include "train/trainer.h"

namespace scellis::record {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWgsl = R"(fn shifted(index: u32) -> f32 {
  let cols = U_SHAPE_1;
  var s = u_at(index);
  if (index % cols + 1u < cols) { s = s + u_at(index + 1u); }
  return 0.5 * s;
}
)";

std::atomic<int> reference_calls{0};

// out[r, c] = (u[r, c] + u[r, c + 1]) / 2, the neighbour past the last column 0: in float64,
// rounded once.
Result<runtime::HostTensor> ShiftedMean(std::span<const runtime::HostTensor> in) {
  ++reference_calls;
  const std::vector<int64_t> shape = in[0].type.sizes();
  const int64_t rows = shape.at(0), cols = shape.at(1);
  const std::vector<float> u = in[0].ToFloats();
  std::vector<float> out(u.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const double right = c + 1 < cols ? double(u[r * cols + c + 1]) : 0.0;
      out[r * cols + c] = static_cast<float>(0.5 * (double(u[r * cols + c]) + right));
    }
  return runtime::HostTensor::FromFloats(in[0].type, out);
}

api::UserOpDefinition Shifted(std::string version = "1", std::string wgsl = kWgsl) {
  return {.name = "shifted",
          .signature = {{"inputs", {{{"name", "u"}, {"rank", 2}}}},
                        {"shape", "u"},
                        {"tolerance", "tight"},
                        {"wgsl", wgsl}},
          .reference = ShiftedMean,
          .reference_version = std::move(version)};
}

constexpr const char* kDocument = R"({"version": 6, "determinism": "prod",
  "nodes": [{"id": 0, "op": "input", "name": "u", "shape": [3, 5]},
            {"id": 1, "op": "shifted", "u": 0}],
  "outputs": [{"name": "out", "id": 1}]})";

std::string Why(const Status& s) {
  std::string why;
  for (const Diagnostic& d : s.errors()) why += d.Format() + "\n";
  return why;
}

class UserOpRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("scellis-user-op-record-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    store_ = std::make_unique<store::Store>(store::Store::Open(root_.string()).value());
    std::mt19937_64 rng(std::random_device{}());
    std::uniform_real_distribution<float> d(-2.0f, 2.0f);
    for (float& x : u_) x = d(rng);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Runs the document with the op on the CPU reference and records the run.
  std::string RunAndRecord() {
    api::RunOptions o;
    o.select = {.requested = "cpu", .cpu_threads = 1};
    o.store_root = root_.string();
    o.compile.lower.ops = api::DefineOps({Shifted()}).value();
    o.feeds["u"] = runtime::HostTensor::FromFloats(MakeType({3, 5}), u_);
    auto report = api::Run(kDocument, o);
    EXPECT_TRUE(report.ok()) << Why(report.status());
    if (!report.ok()) return "";
    const std::vector<float> out = report->outputs.at(0).second.ToFloats();
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 5; ++c) {
        const double right = c < 4 ? double(u_[r * 5 + c + 1]) : 0.0;
        EXPECT_NEAR(out[r * 5 + c], 0.5 * (double(u_[r * 5 + c]) + right), 1e-6);
      }
    auto id = RecordRun(*store_, kDocument, o, report.value());
    EXPECT_TRUE(id.ok()) << Why(id.status());
    return id.ok() ? id.value() : "";
  }
  Result<ReplayResult> ReplayWith(const std::string& id, std::vector<api::UserOpDefinition> ops) {
    return Replay(id, {.store_root = root_.string(), .cpu_threads = 1, .user_ops = ops});
  }

  fs::path root_;
  std::unique_ptr<store::Store> store_;
  std::vector<float> u_ = std::vector<float>(15);
};

TEST_F(UserOpRecords, RecordHoldsTheOpsDefinitionNotItsCallable) {
  const std::string id = RunAndRecord();
  ASSERT_FALSE(id.empty());
  const Json record = LoadRecord(*store_, id).value();
  ASSERT_EQ(record["user_ops"].size(), 1u);
  const Json& op = record["user_ops"][0];
  EXPECT_EQ(op["name"], "shifted");
  EXPECT_EQ(op["definition"]["wgsl"], kWgsl);
  EXPECT_EQ(op["definition"]["reference"], Json({{"callable", "1"}}));
  EXPECT_EQ(op["definition"]["shape"], "u");
  EXPECT_EQ(op["definition_hash"].get<std::string>().rfind("sha256:", 0), 0u);
}

TEST_F(UserOpRecords, ReplayGivenTheOpAgreesBitForBit) {
  const std::string id = RunAndRecord();
  ASSERT_FALSE(id.empty());
  reference_calls = 0;
  auto r = ReplayWith(id, {Shifted()});
  ASSERT_TRUE(r.ok()) << Why(r.status());
  EXPECT_EQ(r->guarantee, "bit-exact");
  EXPECT_TRUE(r->agree);
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_TRUE(r->outputs[0].digest_equal);
  EXPECT_EQ(reference_calls, 1);  // the callable ran in the op's place
}

TEST_F(UserOpRecords, ReplayWithoutTheOpOrWithAnotherIsRefusedBeforeRunning) {
  const std::string id = RunAndRecord();
  ASSERT_FALSE(id.empty());
  reference_calls = 0;
  auto none = ReplayWith(id, {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.errors().front().code, "replay-needs-user-op");
  EXPECT_NE(none.errors().front().message.find("\"shifted\""), std::string::npos);

  auto version = ReplayWith(id, {Shifted("2")});
  ASSERT_FALSE(version.ok());
  EXPECT_EQ(version.errors().front().code, "replay-user-op-mismatch");
  EXPECT_NE(version.errors().front().message.find("version is \"2\", the record's \"1\""),
            std::string::npos)
      << Why(version.status());

  std::string other = kWgsl;
  other.replace(other.find("0.5 * s"), 7, "0.25 * s");
  auto wgsl = ReplayWith(id, {Shifted("1", other)});
  ASSERT_FALSE(wgsl.ok());
  EXPECT_EQ(wgsl.errors().front().code, "replay-user-op-mismatch");
  EXPECT_NE(wgsl.errors().front().message.find("WGSL"), std::string::npos);
  EXPECT_EQ(reference_calls, 0);  // nothing ran
}

// A training whose model reads its images through a user op: out = x / 2, as a callable.
std::atomic<int> halve_calls{0};
Result<runtime::HostTensor> Halve(std::span<const runtime::HostTensor> in) {
  ++halve_calls;
  std::vector<float> x = in[0].ToFloats();
  for (float& v : x) v *= 0.5f;  // exact: halving a float only lowers its exponent
  return runtime::HostTensor::FromFloats(in[0].type, x);
}

api::UserOpDefinition Halved() {
  return {.name = "halve",
          .signature = {{"inputs", {{{"name", "x"}, {"rank", 2}}}},
                        {"shape", "x"},
                        {"tolerance", "exact"},
                        {"wgsl", "fn halve(index: u32) -> f32 { return 0.5 * x_at(index); }\n"}},
          .reference = Halve,
          .reference_version = "1"};
}

// The main job's workflow with its images halved by the user op before the first layer.
std::string HalvedFashionMlp() {
  Json doc = Json::parse(testing::ExampleText("fashion_mlp.json"));
  doc["nodes"].push_back({{"id", "x_half"}, {"type", "halve"}});
  for (Json& w : doc["wires"])
    if (w["from"] == "x" && w["to"] == "h_lin.a") w["from"] = "x_half";
  doc["wires"].push_back({{"from", "x"}, {"to", "x_half.x"}});
  return doc.dump();
}

TEST_F(UserOpRecords, ATrainingRecordHoldsItsUserOpsAndItsReplayNeedsThem) {
  train::TrainOptions o;
  o.select = {.requested = "cpu", .cpu_threads = 1};
  o.epochs = 1;
  o.max_steps = 3;
  o.steps_per_run = 2;
  o.compile.lower.ops = api::DefineOps({Halved()}).value();
  halve_calls = 0;
  train::Trainer trainer(o);
  auto trained = trainer.Train(HalvedFashionMlp());
  ASSERT_TRUE(trained.ok()) << Why(trained.status());
  EXPECT_GT(halve_calls, 0);  // the op ran in the training and its evaluation
  auto id = RecordTraining(*store_, HalvedFashionMlp(), o, trained.value());
  ASSERT_TRUE(id.ok()) << Why(id.status());

  const Json record = LoadRecord(*store_, id.value()).value();
  ASSERT_EQ(record["user_ops"].size(), 1u);
  EXPECT_EQ(record["user_ops"][0]["name"], "halve");
  EXPECT_EQ(record["user_ops"][0]["definition"]["reference"], Json({{"callable", "1"}}));

  halve_calls = 0;
  auto none = ReplayWith(id.value(), {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.errors().front().code, "replay-needs-user-op");
  EXPECT_EQ(halve_calls, 0);  // refused before training

  auto given = ReplayWith(id.value(), {Halved()});
  ASSERT_TRUE(given.ok()) << Why(given.status());
  EXPECT_EQ(given->guarantee, "bit-exact");
  EXPECT_TRUE(given->agree);
  EXPECT_GT(halve_calls, 0);
}

}  // namespace
}  // namespace scellis::record
