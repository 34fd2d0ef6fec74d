// The `scellis` command as users meet it: warnings that must be seen, the loud CPU banner,
// machine-readable diagnostics, exit codes, and the checks of its command line.
#include "support/cli.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "base/json_util.h"
#include "command_line.h"
#include "doc/keys.h"
#include "typed_flags.h"

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

// `run --ranks`: one process alone with --ranks=1 prints the product like any run; more ranks
// need an MPI job of that size (tools/run_mpi_tests.sh runs two); a split run is one step.
TEST_F(Cli, RunInMatmulBlocks) {
  const std::string doc = Example("workplan/matmul_blocks.json");
  CliRun red = RunScellis({"run", doc, "--backend=cpu", "--no-record"});
  EXPECT_EQ(red.exit_code, 2);
  EXPECT_NE(red.err.find("memory-over-budget"), std::string::npos) << red.err;
  CliRun one = RunScellis({"run", doc, "--backend=cpu", "--no-record", "--budget=1G", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CliRun alone = RunScellis(
      {"run", doc, "--backend=cpu", "--no-record", "--budget=1G", "--ranks=1", "--json"});
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_EQ(Json::parse(alone.out)["outputs"], Json::parse(one.out)["outputs"]);
  EXPECT_EQ(Json::parse(alone.out)["stats"]["ranks"], 1);
  CliRun job = RunScellis({"run", doc, "--backend=cpu", "--no-record", "--ranks=2"});
  EXPECT_EQ(job.exit_code, 2);
  EXPECT_TRUE(job.err.find("rank-count-mismatch") != std::string::npos ||
              job.err.find("no-mpi") != std::string::npos)
      << job.err;
  CliRun steps = RunScellis(
      {"run", doc, "--backend=cpu", "--no-record", "--budget=1G", "--ranks=1", "--steps=2"});
  EXPECT_EQ(steps.exit_code, 2);
  EXPECT_NE(steps.err.find("bad-flag"), std::string::npos) << steps.err;
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
  // The WorkPlan: a training step over ranks, or a run's one matmul in blocks of its output.
  CliRun work = RunScellis({"lower", Example("fashion_mlp.json"), "--budget=1G", "--to=workplan",
                            "--ranks=4", "--chunks=8", "--json"});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  Json w = Json::parse(work.out);
  EXPECT_EQ(w["ranks"], 4);
  EXPECT_EQ(w["chunk_examples"], 8);
  EXPECT_EQ(w["shards"][3]["first_example"], 48);
  EXPECT_EQ(w["verdict"], "green");
  CliRun refused = RunScellis(
      {"lower", Example("fashion_mlp.json"), "--budget=1G", "--to=workplan", "--ranks=3"});
  EXPECT_EQ(refused.exit_code, 0) << refused.err;  // printed with its red verdict
  EXPECT_NE(refused.out.find("verdict          : red"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("batch-not-divisible"), std::string::npos) << refused.out;
  CliRun untrained =
      RunScellis({"lower", Example("matmul_chain.json"), "--tier=prod", "--to=workplan"});
  EXPECT_EQ(untrained.exit_code, 2);
  // A chain of matmuls and a transpose is not one product.
  EXPECT_NE(untrained.err.find("matmul_chain.json:/nodes/4: error[workplan-unsupported]"),
            std::string::npos)
      << untrained.err;
  CliRun blocks = RunScellis(
      {"lower", Example("workplan/matmul_blocks.json"), "--to=workplan", "--ranks=4", "--json"});
  ASSERT_EQ(blocks.exit_code, 0) << blocks.err;
  Json b = Json::parse(blocks.out);
  EXPECT_EQ(b["one_device"]["verdict"], "red");
  EXPECT_EQ(b["verdict"], "green");
  EXPECT_EQ(b["axis"], "rows");
  EXPECT_EQ(b["blocks"][3]["lo"], 384);
  EXPECT_EQ(b["blocks"][3]["hi"], 512);
  CliRun chunked = RunScellis({"lower", Example("workplan/matmul_blocks.json"), "--to=workplan",
                               "--ranks=2", "--chunks=2"});
  EXPECT_EQ(chunked.exit_code, 2);
  EXPECT_NE(chunked.err.find("bad-flag"), std::string::npos) << chunked.err;
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
// device, many steps per run. A glider moves one cell down and right every 4 generations,
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
      // 132 steps are three runs of at most 64: three submissions on the CPU; on WebGPU each
      // run is sent in chunks of 1, 1, 2, 4 and then 8 steps: 11 + 11 + 3 submissions.
      if (steps == 132) {
        EXPECT_EQ(Json::parse(r.out)["stats"]["submissions"].get<int>(),
                  backend[0] == "--backend=cpu" ? 3 : 25);
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

// Fashion-MNIST's training step at batch 1024 under a shrinking budget: every memory class
// printed (the held dataset's among them), yellow near the budget, then, below the plan with the
// dataset streamed, red with the largest batch that fits streamed, which plans when bound, and the
// largest green one, which plans with no warning but the streamed dataset's.
TEST_F(Cli, PlanShrinkingBudgetOnFashionMnist) {
  const std::string file = Example("fashion_mlp.json");
  auto plan = [&](const std::string& budget, int64_t batch, bool json = false) {
    std::vector<std::string> args = {"plan", file, budget, "--bind", "B=" + std::to_string(batch)};
    if (json) args.push_back("--json");
    return RunScellis(args);
  };
  CliRun green = plan("--budget=1G", 1024);
  ASSERT_EQ(green.exit_code, 0) << green.err;
  for (const char* cls : {"parameters", "inputs", "activations", "gradients", "optimizer_state",
                          "working", "dataset"})
    EXPECT_NE(green.out.find(std::string("\n                     ") + cls), std::string::npos)
        << cls << "\n"
        << green.out;
  EXPECT_NE(green.out.find("<- dominates"), std::string::npos) << green.out;
  EXPECT_NE(green.out.find("verdict          : green"), std::string::npos) << green.out;
  Json j = Json::parse(plan("--budget=1G", 1024, true).out);
  const int64_t allocated = j["memory"]["allocated"];
  EXPECT_EQ(j["memory"]["dominant_class"], "dataset");
  // Every class is a key, master weights too (0 bytes: not mixed precision).
  EXPECT_EQ(j["memory"]["at_peak"].size(), 8u);
  EXPECT_EQ(j["memory"]["at_peak"]["master_weights"], 0);
  const int64_t whole = j["dataset"]["host_bytes"];
  // Streamed, the dataset is 8 batches of 1024 examples of 784 pixels and a label, as f32, and
  // the evaluation batch of 1000 (held beside the whole set too).
  EXPECT_EQ(j["dataset"]["eval_batch"], 1000);
  const int64_t streamed = allocated - whole + (int64_t{8} * 1024 + 1000) * 785 * 4;

  // Within 20% of the budget: yellow, and it still plans (exit 0) with the warning named.
  CliRun yellow = plan("--budget=" + std::to_string(allocated + 1), 1024);
  EXPECT_EQ(yellow.exit_code, 0) << yellow.err;
  EXPECT_NE(yellow.out.find("verdict          : yellow"), std::string::npos) << yellow.out;
  EXPECT_NE(yellow.out.find("warning[near-budget]"), std::string::npos) << yellow.out;

  // Under the plan with the dataset streamed: red, with the bytes over, the class responsible and
  // the largest batch that fits.
  const std::string budget = "--budget=" + std::to_string(streamed - 64 * 1024);
  CliRun red = plan(budget, 1024);
  ASSERT_EQ(red.exit_code, 2) << red.err;
  EXPECT_NE(red.err.find("error[memory-over-budget]"), std::string::npos) << red.err;
  EXPECT_NE(red.err.find("64.0 KiB over the budget"), std::string::npos) << red.err;
  EXPECT_NE(red.err.find("the largest class at peak is dataset"), std::string::npos) << red.err;
  Json rj = Json::parse(plan(budget, 1024, true).out);
  ASSERT_TRUE(rj.contains("batch_fit")) << rj.dump(2);
  const int64_t largest = rj["batch_fit"]["largest"];
  const int64_t largest_green = rj["batch_fit"]["largest_green"];
  ASSERT_GT(largest, 0);
  ASSERT_LT(largest, 1024);
  ASSERT_GT(largest_green, 0);
  EXPECT_NE(red.err.find("the largest batch that fits is B=" + std::to_string(largest)),
            std::string::npos)
      << red.err;
  EXPECT_NE(red.out.find("largest_batch    : B=" + std::to_string(largest)), std::string::npos)
      << red.out;
  EXPECT_NE(red.out.find("largest_green    : B=" + std::to_string(largest_green)),
            std::string::npos)
      << red.out;

  // Bound to it the plan is accepted; one more is red; the largest green one plans green.
  EXPECT_EQ(plan(budget, largest).exit_code, 0);
  EXPECT_EQ(plan(budget, largest + 1).exit_code, 2);
  CliRun at_green = plan(budget, largest_green);
  EXPECT_EQ(at_green.exit_code, 0) << at_green.err;
  EXPECT_NE(at_green.out.find("verdict          : yellow"), std::string::npos) << at_green.out;
  EXPECT_NE(at_green.out.find("warning[streamed-dataset]"), std::string::npos) << at_green.out;
  EXPECT_EQ(at_green.out.find("warning[near-budget]"), std::string::npos) << at_green.out;
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
  EXPECT_NE(required.err.find("fuse-elementwise, fuse-generators, fold-transposes"),
            std::string::npos);

  CliRun unknown = RunScellis({"lower", file, "--tier=prod", "--print-after=fusion"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("error[bad-pass]"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace scellis::testing

// The command line is checked whole before anything runs: a bad flag is `bad-flag` (exit 2) with
// nothing on stdout, no banner, no probe.
namespace scellis::testing {
namespace {

using cli::ParseByteSize;
using cli::ParseCommandLine;
using cli::ParseInteger;

// An allocation the device cannot satisfy (injected into the device's Nth buffer: the first, or
// one made after the plan is resident) fails the run with the device's named error before any
// result is written: no --out file, whole or half.
TEST(CliFaults, AnAllocationFailureLeavesNoOutputFile) {
  setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 0);
  for (const char* nth : {"1", "3"}) {
    SCOPED_TRACE(std::string("allocation ") + nth);
    const std::filesystem::path dir = MakeTempDir("scellis-fault");
    const std::filesystem::path out = dir / "result.json";
    setenv("SCELLIS_FAULT_ALLOCATION", nth, 1);
    CliRun r = RunScellis({"run", Example("life_steps.json"), "--tier=prod", "--backend=webgpu",
                           "--allow-software-adapter", "--steps", "4", "--out", out.string()});
    unsetenv("SCELLIS_FAULT_ALLOCATION");
    EXPECT_TRUE(r.exited) << "killed by signal " << r.signal;
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("gpu-out-of-memory"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out));
    std::filesystem::remove_all(dir);
  }
}

TEST(CliFlags, ByteSizes) {
  EXPECT_EQ(ParseByteSize("512"), 512);
  EXPECT_EQ(ParseByteSize("64K"), 64 * 1024);
  EXPECT_EQ(ParseByteSize("3MiB"), 3 * 1024 * 1024);
  EXPECT_EQ(ParseByteSize("2G"), int64_t{2} << 30);
  EXPECT_EQ(ParseByteSize("1000000G"), int64_t{1000000} << 30);  // parses; the plan judges it
  EXPECT_EQ(ParseByteSize("8388607T"), int64_t{8388607} << 40);  // 2^63 - 2^40: the largest T
  EXPECT_EQ(ParseByteSize("8388608T"), std::nullopt);            // 2^63: beyond int64
  EXPECT_EQ(ParseByteSize("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ParseByteSize("9223372036854775808"), std::nullopt);
  for (const char* bad : {"", "0", "0K", "0.5", "1.5G", "-1", "+1", "1e9", " 1", "1 ", "1g", "1GB",
                          "G", "0x10", "1KK"})
    EXPECT_EQ(ParseByteSize(bad), std::nullopt) << bad;
}

TEST(CliFlags, Integers) {
  EXPECT_EQ(ParseInteger("7", 1, 10), 7);
  EXPECT_EQ(ParseInteger("-3", -5, 5), -3);
  for (const char* bad : {"", "0", "11", "-3", "1.0", "+2", " 2", "2x", "99999999999999999999"})
    EXPECT_EQ(ParseInteger(bad, 1, 10), std::nullopt) << bad;
}

// The command line suggests names with the document's matcher.
std::string ClosestMatch(const std::string& word, const std::vector<std::string>& candidates) {
  return doc::ClosestKey(word, candidates).value_or("");
}

TEST(CliFlags, ClosestMatchIsForTyposOnly) {
  std::vector<std::string> flags = {"--epochs", "--threads", "--max-steps", "--steps-per-run"};
  EXPECT_EQ(ClosestMatch("--epoch", flags), "--epochs");
  EXPECT_EQ(ClosestMatch("--thread", flags), "--threads");
  EXPECT_EQ(ClosestMatch("--max-step", flags), "--max-steps");
  EXPECT_EQ(ClosestMatch("--colour", flags), "");
  EXPECT_EQ(ClosestMatch("runn", {"run", "train", "plan"}), "run");
}

// The first diagnostic of a refused command line.
Diagnostic Refusal(const std::vector<std::string>& args) {
  auto r = ParseCommandLine(args, 4);
  if (r.ok()) return Diagnostic{};
  return r.errors().front();
}

TEST(CliFlags, ParserRefusesEachBadForm) {
  const std::string doc = Example("seed_mul_relu.json");
  struct Case {
    std::vector<std::string> args;
    std::string needle;  // in the message or help
  };
  const std::vector<Case> cases = {
      {{"run", doc, "--steps", "0"}, "--steps takes an integer from 1"},
      {{"run", doc, "--threads", "-1"}, "--threads takes an integer from 0"},
      {{"run", doc, "--threads", "1e9"}, "--threads"},
      {{"run", doc, "--threads", "99999999999"}, "--threads"},
      {{"train", doc, "--epochs", "-3"}, "--epochs takes an integer from 1"},
      {{"train", doc, "--epochs=0"}, "--epochs"},
      {{"train", doc, "--max-steps", "0"}, "--max-steps takes an integer from 1"},
      {{"train", doc, "--steps-per-run", "65"}, "from 1 to 64"},
      {{"plan", doc, "--budget=0.5"}, "--budget takes a whole, positive number of bytes"},
      {{"plan", doc, "--budget="}, "--budget"},
      {{"plan", doc, "--bind", "=5"}, "--bind takes NAME=SIZE"},
      {{"plan", doc, "--bind", "N=-1"}, "--bind takes NAME=SIZE"},
      {{"plan", doc, "--bind", "N=4", "--bind", "N=5"}, "two sizes"},
      {{"run", doc, "--out", ""}, "--out needs a non-empty value"},
      {{"train", doc, "--resume="}, "--resume"},
      {{"train", doc, "--resume", ""}, "--resume needs a non-empty value"},
      {{"conform", "--tier=prod", "--seed", "-1"}, "--seed takes a non-negative integer"},
      {{"train", doc, "--epoch", "3"}, "did you mean --epochs?"},
      {{"run", doc, "--thread=3"}, "did you mean --threads?"},
      {{"runn", doc}, "did you mean run?"},
      {{"run", doc, "second.json"}, "unexpected argument"},
      {{"run"}, "file is required"},
      {{}, "no command given"},
      {{"lower", doc}, "lower needs exactly one of"},
      {{"lower", doc, "--to=silicon"}, "--to takes doc"},
      {{"lower", doc, "--to=execplan", "--ranks=2"}, "--ranks and --chunks go with --to=workplan"},
      {{"lower", doc, "--to=workplan", "--ranks=0"}, "--ranks"},
      {{"train", doc, "--ranks=0"}, "--ranks"},
      {{"verify", "sha256:00", "--shard=-1"}, "--shard"},
      {{"plan", doc, "--tier=sometimes"}, "--tier"},
  };
  for (const Case& c : cases) {
    std::string joined;
    for (const std::string& a : c.args) joined += a + " ";
    Diagnostic d = Refusal(c.args);
    EXPECT_EQ(d.code, "bad-flag") << joined;
    EXPECT_NE((d.message + " " + d.help).find(c.needle), std::string::npos)
        << joined << ": " << d.message << " / " << d.help;
  }
}

TEST(CliFlags, ParserAcceptsGoodForms) {
  const std::string doc = Example("seed_mul_relu.json");
  auto run = ParseCommandLine({"run", doc, "--steps=3", "--threads", "2", "--budget=1000000G",
                               "--bind", "N=64", "--tier=prod"},
                              4);
  ASSERT_TRUE(run.ok()) << run.errors().front().Format();
  EXPECT_EQ(run->command, cli::Command::kRun);
  EXPECT_EQ(run->run.steps, 3);
  EXPECT_EQ(run->run.threads, 2);
  EXPECT_EQ(run->compile.budget_bytes, int64_t{1000000} << 30);
  EXPECT_TRUE(run->notes.empty());

  auto train = ParseCommandLine({"train", doc, "--epochs", "2", "--max-steps", "5"}, 4);
  ASSERT_TRUE(train.ok()) << train.errors().front().Format();
  EXPECT_EQ(train->train.epochs, 2);
  EXPECT_EQ(train->train.max_steps, 5);

  auto studio = ParseCommandLine(
      {"studio", "--port", "0", "--backend", "cpu", "--max-request-bytes", "1M", "--open"}, 4);
  ASSERT_TRUE(studio.ok()) << studio.errors().front().Format();
  EXPECT_EQ(studio->command, cli::Command::kStudio);
  EXPECT_EQ(studio->studio.port, 0);
  EXPECT_EQ(studio->studio.host, "127.0.0.1") << "loopback unless asked";
  EXPECT_EQ(studio->studio.max_request_bytes, int64_t{1} << 20);
  EXPECT_TRUE(studio->studio.open);
  for (std::vector<std::string> bad : {std::vector<std::string>{"studio", "--port", "70000"},
                                       {"studio", "--port", "-1"},
                                       {"studio", "--backend", "null"},
                                       {"studio", "--max-request-bytes", "0"}}) {
    auto r = ParseCommandLine(bad, 4);
    ASSERT_FALSE(r.ok()) << bad[2];
    EXPECT_EQ(r.errors().front().code, "bad-flag");
  }

  auto help = ParseCommandLine({"run", "--help"}, 4);
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(help->command, cli::Command::kHelp);
  EXPECT_NE(help->help.find("--steps"), std::string::npos) << help->help;
}

TEST(CliFlags, ThreadsAboveTheMachineAreCappedAndSaid) {
  auto r = ParseCommandLine({"run", Example("seed_mul_relu.json"), "--threads", "1000000"}, 4);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->run.threads, 4);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0].code, "threads-capped");
  auto at = ParseCommandLine({"train", Example("seed_mul_relu.json"), "--threads", "4"}, 4);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(at->train.threads, 4);
  EXPECT_TRUE(at->notes.empty());
}

TEST_F(Cli, BadFlagsAreRefusedBeforeAnyWork) {
  const std::string doc = Example("seed_mul_relu.json");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"run", doc, "--tier=prod", "--backend=cpu", "--steps", "0"},
           {"run", doc, "--tier=prod", "--steps", "0"},
           {"train", Example("fashion_mlp.json"), "--epochs", "-3"},
           {"train", Example("fashion_mlp.json"), "--max-steps", "0"},
           {"plan", doc, "--tier=prod", "--budget=0.5"},
           {"validate", doc, "--tier=prod", "--bind", "=5"},
           {"train", Example("fashion_mlp.json"), "--epoch", "3"}}) {
    CliRun r = RunScellis(args);
    std::string joined;
    for (const std::string& a : args) joined += a + " ";
    ASSERT_TRUE(r.exited) << joined;
    EXPECT_EQ(r.exit_code, 2) << joined << r.err;
    EXPECT_EQ(r.out, "") << joined;
    EXPECT_EQ(r.err.rfind("error[bad-flag]", 0), 0u) << joined << r.err;
    EXPECT_EQ(r.err.find("CPU REFERENCE"), std::string::npos) << joined << r.err;
  }
  // The word after an unknown flag is taken for its value, not refused a second time.
  CliRun typo = RunScellis({"train", Example("fashion_mlp.json"), "--epoch", "3"});
  EXPECT_NE(typo.err.find("did you mean --epochs?"), std::string::npos) << typo.err;
  EXPECT_EQ(typo.err.find("unexpected argument"), std::string::npos) << typo.err;
  // With --json the refusal itself is the JSON on stdout.
  CliRun j = RunScellis({"run", doc, "--json", "--steps", "0"});
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_EQ(Json::parse(j.out)["diagnostics"][0]["code"], "bad-flag") << j.out;
}

TEST_F(Cli, ThreadsAboveTheMachineRun) {
  CliRun r = RunScellis({"run", Example("seed_mul_relu.json"), "--tier=prod", "--backend=cpu",
                         "--threads", "1000000"});
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note[threads-capped]"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("values: shape [3] f32 [0, 60, 120]"), std::string::npos) << r.out;
}

TEST_F(Cli, OutputsAreRegularFilesAndNeverAnInput) {
  std::string doc = Write("doc.json", ReadWholeFile(Example("seed_mul_relu.json")));
  const std::string original = ReadWholeFile(doc);
  auto refused = [&](const std::vector<std::string>& args, const std::string& needle) {
    CliRun r = RunScellis(args);
    EXPECT_TRUE(r.exited);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("error[bad-output-path]"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("CPU REFERENCE"), std::string::npos) << r.err;  // refused up front
  };
  const std::vector<std::string> run = {"run", doc, "--tier=prod", "--backend=cpu", "--out"};
  auto with = [](std::vector<std::string> v, const std::string& last) {
    v.push_back(last);
    return v;
  };

  refused(with(run, "/dev/null"), "character device");
  struct stat st;
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));

  fs::create_symlink(dir_ / "elsewhere.json", dir_ / "link.json");
  refused(with(run, (dir_ / "link.json").string()), "symbolic link");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere.json"));

  // The document itself, by its name, another spelling, a symlink and a hard link.
  fs::create_symlink(doc, dir_ / "doc-link.json");
  fs::create_hard_link(doc, dir_ / "doc-hard.json");
  refused(with(run, doc), "same file as the document");
  refused(with(run, (dir_ / "." / "doc.json").string()), "same file as the document");
  refused(with({"run", (dir_ / "doc-link.json").string(), "--tier=prod", "--out"}, doc),
          "same file as the document");
  refused(with(run, (dir_ / "doc-hard.json").string()), "same file as the document");
  EXPECT_EQ(ReadWholeFile(doc), original);

  // Training: no output over the document, the checkpoint resumed from, or another output.
  std::string ck = Write("ck.safetensors", "not read: refused before");
  std::string train_doc = Example("fashion_mlp.json");
  refused({"train", train_doc, "--resume", ck, "--checkpoint", ck}, "same file as --resume");
  refused({"train", train_doc, "--init-out", train_doc}, "same file as the document");
  refused({"train", train_doc, "--checkpoint", (dir_ / "a").string(), "--losses-out",
           (dir_ / "." / "a").string()},
          "both name");
  refused({"train", train_doc, "--losses-out", "/dev/null"}, "character device");
  EXPECT_EQ(ReadWholeFile(ck), "not read: refused before");

  // A regular file is still replaced, atomically.
  std::string out = Write("out.json", "old");
  CliRun ok = RunScellis(with(run, out));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(Json::parse(ReadWholeFile(out))["backend"], "cpu");
}

TEST_F(Cli, DocumentThatIsNotARegularFileIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((dir_ / "doc.fifo").c_str(), 0644), 0);
  for (const std::string& path :
       {(dir_ / "doc.fifo").string(), std::string("/dev/zero"), dir_.string()}) {
    CliRun r = RunScellis({"validate", path, "--tier=prod"});
    EXPECT_TRUE(r.exited);
    EXPECT_EQ(r.exit_code, 2) << path << r.err;
    EXPECT_NE(r.err.find("error[not-a-regular-file]"), std::string::npos) << path << r.err;
  }
}

}  // namespace
}  // namespace scellis::testing
