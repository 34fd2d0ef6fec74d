// The `scellis` command as users meet it: warnings that must be seen, the loud CPU banner,
// machine-readable diagnostics, exit codes and the rungs `lower` prints.
#include "cli_test.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/json_util.h"

namespace scellis::testing {
namespace {

namespace fs = std::filesystem;

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

// `scellis ops --json` gives the table as data (what the browser runtime's tracer is held to):
// a few entries checked by hand.
TEST_F(Cli, OpsAsJson) {
  CliRun r = RunScellis({"ops", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json table = Json::parse(r.out);
  std::map<std::string, Json> by_name;
  for (const char* part : {"ops", "node_types"})
    for (const Json& spec : table.at(part)) by_name[spec.at("name")] = spec;
  auto ports = [&](const std::string& op) {
    std::vector<std::string> names;
    for (const Json& p : by_name.at(op).at("inputs")) names.push_back(p.at("name"));
    return names;
  };
  EXPECT_EQ(ports("matmul"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ports("where"), (std::vector<std::string>{"cond", "a", "b"}));
  EXPECT_EQ(by_name.at("matmul").at("family"), "matmul");
  EXPECT_EQ(by_name.at("shift").at("min_version"), 5);
  EXPECT_TRUE(by_name.at("input").at("inputs").empty());
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
