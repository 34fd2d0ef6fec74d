// Records of prepared sessions: a training session on the CPU reference, recorded run by run,
// replays bit for bit (its losses, step by step, against the record); a tampered feed is refused
// by name; a feed too large to keep leaves a record whose replay is refused by name; a replay
// that computes something else disagrees, naming the step.
#include "record/session_record.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "record/replay.h"

namespace scellis::record {
namespace {

namespace fs = std::filesystem;

std::string ReadExample(const char* name) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

runtime::Feeds Step(float t) {
  return {{"step", runtime::HostTensor::FromFloats(MakeType({}), {&t, 1})}};
}

class SessionRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("scellis-session-record-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    store_ = std::make_unique<store::Store>(store::Store::Open(root_.string()).value());
  }
  void TearDown() override { fs::remove_all(root_); }

  // Prepares `document` on the CPU reference, runs `runs` (each a list of steps' feeds) watching
  // `watch`, records every run and returns the run id and the watched values, step by step.
  std::string RecordSession(const std::string& document,
                            const std::vector<std::vector<runtime::Feeds>>& runs,
                            const std::vector<std::string>& watch,
                            std::vector<std::vector<float>>* watched = nullptr,
                            const runtime::Feeds& initial = {}) {
    pipeline::CompileOptions compile;
    compile.plan.budget_bytes = int64_t{1} << 30;
    const runtime::SelectOptions select{.requested = "cpu", .cpu_threads = 1};
    auto recorder = SessionRecorder::Start(*store_, document, compile, select, initial);
    EXPECT_TRUE(recorder.ok());
    auto sel = runtime::SelectBackend(select);
    EXPECT_TRUE(sel.ok());
    auto session = api::Session::Prepare(document, compile, std::move(sel.value()), initial);
    EXPECT_TRUE(session.ok()) << session.errors().front().Format();
    if (!recorder.ok() || !session.ok()) return "";
    for (const auto& steps : runs) {
      auto r = (*session)->Run(steps, watch);
      EXPECT_TRUE(r.ok()) << r.errors().front().Format();
      if (!r.ok()) return "";
      EXPECT_TRUE(recorder->Add(steps, watch, *r).ok());
      if (watched)
        for (const runtime::HostTensor& t : r->watched.front().second)
          watched->push_back(t.ToFloats());
    }
    auto id = recorder->Finish(**session);
    EXPECT_TRUE(id.ok());
    return id.ok() ? id.value() : "";
  }

  Result<ReplayResult> ReplayIt(const std::string& id) {
    return Replay(id, {.store_root = root_.string(), .cpu_threads = 0});
  }

  fs::path root_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(SessionRecords, ATrainingSessionReplaysBitForBitStepByStep) {
  std::vector<std::vector<float>> losses;
  const std::string id = RecordSession(
      ReadExample("mlp_step.json"), {{Step(1)}, {Step(2), Step(3)}, {Step(4)}}, {"loss"}, &losses);
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_NE(losses[0], losses[3]);  // it trained: the carried weights moved between runs
  const Json record = LoadRecord(*store_, id).value();
  EXPECT_EQ(record["command"], "session");
  EXPECT_EQ(record["backend"], "cpu");
  EXPECT_EQ(record["runs"].size(), 3u);
  EXPECT_EQ(record["runs"][1]["steps"].size(), 2u);
  EXPECT_EQ(record["outputs"].size(), 4u);
  EXPECT_TRUE(record["outputs"].contains(SessionRecorder::OutputName(1, 1, "loss")));
  // The session's runs are listed beside one-shot and training runs.
  const auto listed = ListRuns(*store_, 0);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].command, "session");

  auto replay = ReplayIt(id);
  ASSERT_TRUE(replay.ok()) << replay.errors().front().Format();
  EXPECT_EQ(replay->guarantee, "bit-exact");
  EXPECT_TRUE(replay->agree);
  ASSERT_EQ(replay->outputs.size(), 4u);
  for (const OutputComparison& c : replay->outputs) EXPECT_TRUE(c.digest_equal) << c.name;
}

TEST_F(SessionRecords, AReplayThatComputesOtherValuesDisagreesAtItsStep) {
  // The same session recorded with its step numbers; replayed from a record whose second run's
  // step number was changed (another record, as another machine might have written it), Adam's
  // bias correction moves that step's update, so the first loss to differ is the third run's.
  const std::string id =
      RecordSession(ReadExample("mlp_step.json"), {{Step(1)}, {Step(2)}, {Step(3)}}, {"loss"});
  ASSERT_FALSE(id.empty());
  Json record = LoadRecord(*store_, id).value();
  const runtime::Feeds other = Step(7);
  record["runs"][1]["steps"][0]["step"] = TensorDigest(*store_, other.at("step")).value();
  const std::string edited = store_->Put(record).value();
  auto replay = ReplayIt(edited);
  ASSERT_TRUE(replay.ok()) << replay.errors().front().Format();
  EXPECT_FALSE(replay->agree);
  ASSERT_NE(replay->first_disagreement(), nullptr);
  EXPECT_EQ(replay->first_disagreement()->name, SessionRecorder::OutputName(2, 0, "loss"));
}

TEST_F(SessionRecords, ATamperedFeedOrOneTooLargeToKeepIsRefusedByName) {
  const std::string id =
      RecordSession(ReadExample("mlp_step.json"), {{Step(1)}, {Step(2)}}, {"loss"});
  ASSERT_FALSE(id.empty());
  const Json record = LoadRecord(*store_, id).value();
  const std::string blob = record["runs"][1]["steps"][0]["step"]["blob"];
  const std::string hex = blob.substr(7);
  std::ofstream(root_ / "blobs" / hex.substr(0, 2) / hex, std::ios::binary) << "abcd";
  auto tampered = ReplayIt(id);
  ASSERT_FALSE(tampered.ok());
  EXPECT_EQ(tampered.errors().front().code, "store-object-corrupt");

  // x + 1 over a fed x of 4 MiB + 4 bytes: kept as a digest only.
  const int64_t n = kKeptTensorBytes / 4 + 1;
  const std::string big = R"({"version": 1, "determinism": "prod", "nodes": [
      {"id": 0, "op": "input", "name": "x", "shape": [)" +
                          std::to_string(n) + R"(]},
      {"id": 1, "op": "add", "a": 0, "scalar": 1}],
      "outputs": [{"name": "y", "id": 1}]})";
  std::vector<float> x(static_cast<size_t>(n), 0.5f);
  const runtime::Feeds feeds = {{"x", runtime::HostTensor::FromFloats(MakeType({n}), x)}};
  const std::string unkept = RecordSession(big, {{feeds}}, {});
  ASSERT_FALSE(unkept.empty());
  auto refused = ReplayIt(unkept);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.errors().front().code, "record-tensor-not-kept");
  EXPECT_NE(refused.errors().front().message.find("feed \"x\""), std::string::npos)
      << refused.errors().front().message;
}

}  // namespace
}  // namespace scellis::record
