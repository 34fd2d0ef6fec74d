// The `scellis` command as users meet it: warnings that must be seen, the loud CPU banner,
// machine-readable diagnostics, and exit codes.
#include "support/cli.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/json_util.h"

namespace scellis::testing {
namespace {

namespace fs = std::filesystem;

std::string Example(const std::string& name) {
  return (fs::path(SCELLIS_SOURCE_DIR) / "examples" / name).string();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("scellis-cli-test"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(Cli, OverrideThatDropsAStricterTierIsPrinted) {
  std::string file = Write("debug.json", R"({"format": "scellis.workflow/1", "determinism": "debug",
    "nodes": [{"id": "x", "type": "input", "params": {"shape": [2], "data": [1, -1]}},
              {"id": "r", "type": "relu"}],
    "wires": [{"from": "x", "to": "r.a"}], "outputs": [{"name": "out", "from": "r"}]})");
  CliRun r = RunScellis({"plan", file, "--tier=fast", "--tier-override"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning[tier-override-drops-stricter]"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("determinism_tier : fast"), std::string::npos) << r.out;

  // Without the override the flag composes: debug stays, nothing to announce.
  CliRun plain = RunScellis({"plan", file, "--tier=fast"});
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_EQ(plain.err.find("tier-override"), std::string::npos) << plain.err;
  EXPECT_NE(plain.out.find("determinism_tier : debug"), std::string::npos) << plain.out;

  CliRun alone = RunScellis({"plan", file, "--tier-override"});
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.err.find("error[bad-flag]"), std::string::npos);
}

TEST_F(Cli, RunOnTheCpuIsLoud) {
  CliRun r = RunScellis({"run", Example("seed_mul_relu.json"), "--tier=prod", "--backend=cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("RUNNING ON THE CPU REFERENCE"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("values: shape [3] f32 [0, 60, 120]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fallback: none"), std::string::npos) << r.out;

  // Asked for auto, it says why it fell back.
  CliRun a = RunScellis({"run", Example("seed_mul_relu.json"), "--tier=prod", "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  Json j = Json::parse(a.out);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_TRUE(j["fallback_reason"].is_string());
  EXPECT_EQ(j["determinism_tier"], "prod");
}

TEST_F(Cli, JsonDiagnostics) {
  std::string file = Write("bad.json", R"({"version": 1, "nodes": [{"id": 0, "op": "relu", "a": 3}],
    "outputs": [{"name": "o", "id": 0}]})");
  CliRun r = RunScellis({"validate", file, "--tier=prod", "--json"});
  EXPECT_EQ(r.exit_code, 2);
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["ok"], false);
  ASSERT_EQ(j["diagnostics"].size(), 1u);
  EXPECT_EQ(j["diagnostics"][0]["code"], "dangling-reference");
  EXPECT_EQ(j["diagnostics"][0]["pointer"], "/nodes/0/a");
  EXPECT_EQ(j["diagnostics"][0]["severity"], "error");
}

TEST_F(Cli, ValidateNamesTheContentId) {
  CliRun r = RunScellis({"validate", Example("center_columns.json"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["verdict"], "green");
  EXPECT_EQ(j["content_id"].get<std::string>().rfind("sha256:", 0), 0u);
}

TEST_F(Cli, LowerPrintsEachRung) {
  for (const char* rung : {"doc", "block", "webir", "kernel", "execplan"}) {
    CliRun r = RunScellis({"lower", Example("matmul_chain.json"), "--tier=prod", "--budget=1G",
                           std::string("--to=") + rung});
    EXPECT_EQ(r.exit_code, 0) << rung << ": " << r.err;
    EXPECT_FALSE(r.out.empty()) << rung;
  }
  CliRun bad = RunScellis({"lower", Example("matmul_chain.json"), "--tier=prod", "--to=silicon"});
  EXPECT_EQ(bad.exit_code, 2);
  // A failing document writes no dumps.
  std::string broken = Write("broken.json", "{");
  CliRun none =
      RunScellis({"lower", broken, "--tier=prod", "--dump-rungs", (dir_ / "dumps").string()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "dumps"));
}

TEST_F(Cli, MissingFileAndBadFlags) {
  EXPECT_EQ(RunScellis({"validate", (dir_ / "nope.json").string(), "--tier=prod"}).exit_code, 2);
  EXPECT_EQ(RunScellis({"validate", Example("seed_mul_relu.json"), "--tier=sometimes"}).exit_code,
            2);
  EXPECT_EQ(RunScellis({"validate", Example("seed_mul_relu.json"), "--tier=prod", "--budget=lots"})
                .exit_code,
            2);
  EXPECT_EQ(RunScellis({"validate", Example("center_columns.json"), "--bind", "N"}).exit_code, 2);
  EXPECT_EQ(RunScellis({}).exit_code, 2);
}

}  // namespace
}  // namespace scellis::testing
