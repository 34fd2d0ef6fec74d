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

}  // namespace
}  // namespace scellis::record
