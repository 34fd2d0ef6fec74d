// The `scellis` command as users meet it: warnings that must be seen, the loud CPU banner,
// machine-readable diagnostics, and exit codes.
#include "support/cli.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/json_util.h"

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

// `run --steps N` runs a prepared session: the glider's grid is carried between steps on the
// device, many steps per submission. A glider moves one cell down and right every 4 generations,
// so on a 16x16 torus it is back where it started after 64.
namespace scellis::testing {
namespace {

std::vector<float> GliderAt(int dr, int dc) {
  std::vector<float> g(256, 0.0f);
  for (auto [r, c] : std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}})
    g[((r + dr) % 16) * 16 + (c + dc) % 16] = 1.0f;
  return g;
}

std::vector<float> GridOf(const CliRun& r) {
  Json j = Json::parse(r.out);
  return j["outputs"]["next"]["data"].get<std::vector<float>>();
}

TEST(CliSteps, GliderCarriedOnTheDeviceAcrossSubmissions) {
  setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 0);
  const std::string doc = std::string(SCELLIS_SOURCE_DIR) + "/examples/life_steps.json";
  for (const std::vector<std::string>& backend :
       {std::vector<std::string>{"--backend=cpu"},
        std::vector<std::string>{"--backend=webgpu", "--allow-software-adapter"}}) {
    SCOPED_TRACE(backend[0]);
    for (auto [steps, shift] : std::vector<std::pair<int, int>>{{4, 1}, {64, 0}, {132, 1}}) {
      std::vector<std::string> args = {"run",    doc,       "--tier=prod",
                                       "--json", "--steps", std::to_string(steps)};
      args.insert(args.end(), backend.begin(), backend.end());
      CliRun r = RunScellis(args);
      ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
      EXPECT_EQ(GridOf(r), GliderAt(shift, shift)) << steps << " steps";
      // 132 steps need three submissions of at most 64.
      if (steps == 132) {
        EXPECT_EQ(Json::parse(r.out)["stats"]["submissions"].get<int>(), 3);
      }
      // Only the last grid (16x16 f32) comes back.
      EXPECT_EQ(Json::parse(r.out)["stats"]["readback_bytes"].get<int64_t>(), 1024);
    }
  }
}

TEST(CliSteps, HistoryReadsBackEveryStepOfTheNamedOutput) {
  setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 0);
  const std::string doc = std::string(SCELLIS_SOURCE_DIR) + "/examples/life_steps.json";
  for (const std::vector<std::string>& backend :
       {std::vector<std::string>{"--backend=cpu"},
        std::vector<std::string>{"--backend=webgpu", "--allow-software-adapter"}}) {
    SCOPED_TRACE(backend[0]);
    std::vector<std::string> args = {"run",     doc,   "--tier=prod", "--json",
                                     "--steps", "132", "--history",   "next"};
    args.insert(args.end(), backend.begin(), backend.end());
    CliRun r = RunScellis(args);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
    Json j = Json::parse(r.out);
    const Json& steps = j["history"]["next"]["steps"];
    ASSERT_EQ(steps.size(), 132u);
    // Every fourth generation the glider has moved one cell down and right.
    for (int k = 4; k <= 132; k += 4)
      EXPECT_EQ(steps[k - 1].get<std::vector<float>>(), GliderAt(k / 4 % 16, k / 4 % 16)) << k;
    EXPECT_EQ(j["stats"]["readback_bytes"].get<int64_t>(), 132 * 1024);
    EXPECT_EQ(GridOf(r), GliderAt(1, 1));
  }
  CliRun text = RunScellis({"run", doc, "--tier=prod", "--backend=cpu", "--steps", "5"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("readback: 1024 bytes over 5 steps"), std::string::npos) << text.out;
  CliRun unknown =
      RunScellis({"run", doc, "--tier=prod", "--backend=cpu", "--steps", "5", "--history", "x"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("error[unknown-output]"), std::string::npos) << unknown.err;
}

// `plan` prints the plan whatever its verdict, and exits 2 on red with the finding on stderr.
TEST_F(Cli, PlanExitsTwoOnARedPlan) {
  std::string file = Example("seed_mul_relu.json");
  CliRun green = RunScellis({"plan", file, "--tier=prod", "--budget=1G"});
  EXPECT_EQ(green.exit_code, 0) << green.err;
  EXPECT_NE(green.out.find("verdict          : green"), std::string::npos) << green.out;

  CliRun red = RunScellis({"plan", file, "--tier=prod", "--budget=8"});
  ASSERT_TRUE(red.exited);
  EXPECT_EQ(red.exit_code, 2);
  EXPECT_NE(red.out.find("verdict          : red"), std::string::npos) << red.out;
  EXPECT_NE(red.err.find("error[memory-over-budget]"), std::string::npos) << red.err;

  CliRun json = RunScellis({"plan", file, "--tier=prod", "--budget=8", "--json"});
  EXPECT_EQ(json.exit_code, 2);
  EXPECT_EQ(Json::parse(json.out)["verdict"], "red") << json.out;
}

TEST_F(Cli, PrintAfterAndDisablePass) {
  std::string file = Example("mlp_step.json");
  CliRun fused = RunScellis({"lower", file, "--tier=prod", "--print-after=fuse-elementwise"});
  EXPECT_EQ(fused.exit_code, 0) << fused.err;
  EXPECT_EQ(fused.out.rfind("kernels \"mlp_step\"", 0), 0u) << fused.out;
  EXPECT_NE(fused.out.find("(not emitted)"), std::string::npos) << fused.out;

  CliRun plan = RunScellis({"plan", file, "--tier=prod", "--budget=1G",
                            "--disable-pass=fuse-elementwise", "--disable-pass=fold-transposes"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;

  CliRun required = RunScellis({"plan", file, "--tier=prod", "--disable-pass=liveness"});
  EXPECT_EQ(required.exit_code, 2);
  EXPECT_NE(required.err.find("error[bad-pass]"), std::string::npos) << required.err;
  EXPECT_NE(required.err.find("fuse-elementwise, fold-transposes"), std::string::npos);

  CliRun unknown = RunScellis({"lower", file, "--tier=prod", "--print-after=fusion"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("error[bad-pass]"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace scellis::testing
