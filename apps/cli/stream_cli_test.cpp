// `scellis plan` and `scellis run` on a streamed input: the yellow plan with its chunks, the run in
// chunks equal to the run of all rows at once, and a graph that mixes rows refused with exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/json_util.h"
#include "support/cli.h"

namespace scellis::testing {
namespace {

namespace fs = std::filesystem;

const std::string kExample =
    (fs::path(SCELLIS_SOURCE_DIR) / "examples" / "streaming" / "row_scores.json").string();

TEST(StreamCli, PlanIsYellowUnderTheDocumentsBudgetAndGreenWithRoom) {
  CliRun yellow = RunScellis({"plan", kExample});
  EXPECT_EQ(yellow.exit_code, 0) << yellow.err;
  EXPECT_NE(yellow.out.find("verdict          : yellow"), std::string::npos) << yellow.out;
  EXPECT_NE(yellow.out.find("warning[streamed-input]"), std::string::npos) << yellow.out;
  EXPECT_NE(yellow.out.find("streaming        : input \"samples\" N=2048 (256.0 KiB)"),
            std::string::npos)
      << yellow.out;
  CliRun json = RunScellis({"plan", kExample, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json j = Json::parse(json.out);
  EXPECT_EQ(j["verdict"], "yellow");
  EXPECT_EQ(j["streaming"]["rows"], 2048);
  EXPECT_LE(j["memory"]["allocated"].get<int64_t>(), 65536);
  CliRun green = RunScellis({"plan", kExample, "--budget=4M"});
  EXPECT_EQ(green.exit_code, 0) << green.err;
  EXPECT_NE(green.out.find("verdict          : green"), std::string::npos) << green.out;
  EXPECT_EQ(green.out.find("streaming"), std::string::npos) << green.out;
}

TEST(StreamCli, RunInChunksGivesTheBitsOfTheRunOfAllRows) {
  CliRun streamed = RunScellis({"run", kExample, "--backend=cpu", "--no-record", "--json"});
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  CliRun whole =
      RunScellis({"run", kExample, "--backend=cpu", "--no-record", "--json", "--budget=4M"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const Json s = Json::parse(streamed.out), w = Json::parse(whole.out);
  EXPECT_GT(s["streaming"]["chunks"].get<int64_t>(), 1);
  EXPECT_TRUE(w["streaming"].is_null());
  EXPECT_EQ(s["outputs"], w["outputs"]);
  EXPECT_NE(streamed.err.find("streamed 2048 of 2048 rows"), std::string::npos) << streamed.err;
}

// The run record says the run was streamed, and its replay streams again to the same bits.
TEST(StreamCli, TheRecordSaysStreamedAndReplayAgrees) {
  const fs::path store = MakeTempDir("scellis-stream-store");
  setenv("SCELLIS_STORE", store.c_str(), 1);
  unsetenv("SCELLIS_NO_RECORD");
  CliRun run = RunScellis({"run", kExample, "--backend=cpu", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = Json::parse(run.out)["run_id"];
  CliRun replay = RunScellis({"replay", id});
  EXPECT_EQ(replay.exit_code, 0) << replay.err << replay.out;
  EXPECT_NE(replay.out.find("agrees, guarantee bit-exact"), std::string::npos) << replay.out;
  bool recorded = false;
  for (const auto& e : fs::recursive_directory_iterator(store)) {
    if (e.path().extension() != ".json") continue;
    Json j = Json::parse(std::ifstream(e.path()), nullptr, false);
    if (j.is_object() && j.value("command", "") == "run" && j.contains("streaming"))
      recorded = recorded || j["streaming"].value("chunks", 0) > 1;
  }
  EXPECT_TRUE(recorded) << "no run record under " << store << " holds the streaming";
  unsetenv("SCELLIS_STORE");
  fs::remove_all(store);
}

TEST(StreamCli, AGraphThatMixesRowsIsRefusedWithExit2) {
  Json doc = Json::parse(std::ifstream(kExample));
  // Centering: the column mean over the rows subtracted from every row.
  doc["nodes"].push_back({{"id", "xc"}, {"type", "sub"}});
  doc["wires"].push_back({{"from", "x"}, {"to", "xc.a"}});
  doc["wires"].push_back({{"from", "feature_mean"}, {"to", "xc.b"}});
  doc["outputs"].push_back({{"name", "centered"}, {"from", "xc"}});
  const fs::path file = fs::temp_directory_path() / "scellis-stream-refused.json";
  std::ofstream(file) << doc.dump();
  for (std::vector<std::string> args : {std::vector<std::string>{"plan", file.string()},
                                        {"run", file.string(), "--backend=cpu", "--no-record"}}) {
    CliRun r = RunScellis(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(":/nodes/10: error[stream-unsupported]"), std::string::npos) << r.err;
  }
  fs::remove(file);
}

}  // namespace
}  // namespace scellis::testing
