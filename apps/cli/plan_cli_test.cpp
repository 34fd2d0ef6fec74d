// `plan` and `lower` as the command line shows them: the verdict and its exit code, every memory
// class under a shrinking budget, and the rung after a named pass or without an optional one.
#include <gtest/gtest.h>

#include "base/json_util.h"
#include "cli_test.h"

namespace scellis::testing {
namespace {
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
