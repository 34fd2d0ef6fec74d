// `scellis run` / `runs` / `replay` / `store` as users meet them: a run leaves a record unless
// told not to, a replay exits 0 when it agrees, 1 when it disagrees (naming the output and
// element) and 2 when it is refused, and the store's verify and gc keep it sound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/json_util.h"
#include "record/run_record.h"
#include "support/cli.h"

namespace scellis::testing {
namespace {

namespace fs = std::filesystem;

std::string Example(const std::string& name) {
  return (fs::path(SCELLIS_SOURCE_DIR) / "examples" / name).string();
}

class RecordsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("scellis-records-cli");
    setenv("SCELLIS_STORE", (dir_ / "store").c_str(), 1);
    unsetenv("SCELLIS_NO_RECORD");
  }
  void TearDown() override {
    unsetenv("SCELLIS_STORE");
    unsetenv("SCELLIS_NO_RECORD");
    fs::remove_all(dir_);
  }
  std::vector<std::string> RunIds() {
    CliRun r = RunScellis({"runs", "--json", "--limit", "0"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> ids;
    const Json listed = Json::parse(r.out);
    for (const Json& run : listed["runs"]) ids.push_back(run["run_id"]);
    return ids;
  }
  fs::path ObjectFile(const std::string& id) const {
    std::string hex = id.substr(7);
    return dir_ / "store" / "objects" / hex.substr(0, 2) / (hex + ".json");
  }
  fs::path dir_;
};

TEST_F(RecordsCli, RunLeavesARecordThatReplaysBitExactly) {
  CliRun run = RunScellis(
      {"run", Example("seed_mul_relu.json"), "--tier=prod", "--backend=cpu", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = Json::parse(run.out)["run_id"];
  EXPECT_EQ(RunIds(), std::vector<std::string>{id});

  CliRun replay = RunScellis({"replay", id});
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_NE(replay.out.find("agrees, guarantee bit-exact"), std::string::npos) << replay.out;
  EXPECT_NE(replay.out.find("values: equal bit for bit"), std::string::npos) << replay.out;

  // Neither --no-record nor SCELLIS_NO_RECORD=1 leaves a record.
  ASSERT_EQ(RunScellis({"run", Example("seed_mul_relu.json"), "--tier=prod", "--backend=cpu",
                        "--no-record"})
                .exit_code,
            0);
  setenv("SCELLIS_NO_RECORD", "1", 1);
  CliRun quiet =
      RunScellis({"run", Example("seed_mul_relu.json"), "--tier=prod", "--backend=cpu", "--json"});
  ASSERT_EQ(quiet.exit_code, 0);
  EXPECT_TRUE(Json::parse(quiet.out)["run_id"].is_null());
  EXPECT_EQ(RunIds().size(), 1u);
}

TEST_F(RecordsCli, ReplayThatDisagreesExitsOneNamingTheElement) {
  CliRun run = RunScellis(
      {"run", Example("seed_mul_relu.json"), "--tier=prod", "--backend=cpu", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = Json::parse(run.out)["run_id"];
  // The same record, but saying values[2] was 121 where the reference computes 120.
  auto store = store::Store::Open((dir_ / "store").string()).value();
  Json j = store.Get(id).value();
  runtime::HostTensor t = record::KeptTensor(store, j["outputs"]["values"]).value();
  t.SetValue(2, 121);
  j["outputs"]["values"] = record::TensorDigest(store, t).value();
  const std::string other = store.Put(j).value();

  CliRun replay = RunScellis({"replay", other});
  EXPECT_EQ(replay.exit_code, 1) << replay.err;
  EXPECT_NE(replay.err.find("replay-disagrees"), std::string::npos) << replay.err;
  EXPECT_NE(replay.err.find("output \"values\""), std::string::npos) << replay.err;
  EXPECT_NE(replay.err.find("at element 2 (replayed 120"), std::string::npos) << replay.err;
}

TEST_F(RecordsCli, TamperedRecordIsRefusedAndVerifyFindsIt) {
  CliRun run = RunScellis(
      {"run", Example("seed_mul_relu.json"), "--tier=prod", "--backend=cpu", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = Json::parse(run.out)["run_id"];
  EXPECT_EQ(RunScellis({"store", "verify"}).exit_code, 0);

  // One character of the stored record changed: "prod" becomes "fast".
  std::string text = ReadWholeFile(ObjectFile(id));
  size_t at = text.find("\"prod\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 6, "\"fast\"");
  std::ofstream(ObjectFile(id)) << text;

  CliRun replay = RunScellis({"replay", id});
  EXPECT_EQ(replay.exit_code, 2);
  EXPECT_NE(replay.err.find("store-object-corrupt"), std::string::npos) << replay.err;
  CliRun verify = RunScellis({"store", "verify", "--json"});
  EXPECT_EQ(verify.exit_code, 1);
  Json v = Json::parse(verify.out);
  ASSERT_EQ(v["problems"].size(), 1u);
  EXPECT_EQ(v["problems"][0]["code"], "store-object-corrupt");

  EXPECT_EQ(RunScellis({"replay", "sha256:" + std::string(64, '0')}).exit_code, 2);
  EXPECT_EQ(RunScellis({"replay", "not-an-id"}).exit_code, 2);
}

TEST_F(RecordsCli, GcRemovesAnOrphanAndKeepsTheRecord) {
  CliRun run = RunScellis(
      {"run", Example("seed_mul_relu.json"), "--tier=prod", "--backend=cpu", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = Json::parse(run.out)["run_id"];
  auto store = store::Store::Open((dir_ / "store").string()).value();
  const std::string orphan = store.PutBlob("an orphan").value();

  CliRun gc = RunScellis({"store", "gc", "--json"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(Json::parse(gc.out)["removed"], Json::array({orphan}));
  EXPECT_FALSE(store.GetBlob(orphan).ok());
  EXPECT_EQ(RunScellis({"replay", id}).exit_code, 0);
}

}  // namespace
}  // namespace scellis::testing
