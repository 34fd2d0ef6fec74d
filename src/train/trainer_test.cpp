#include "train/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/cli.h"
#include "support/examples.h"

namespace scellis::train {
namespace {

namespace fs = std::filesystem;

using scellis::testing::FashionMlp;

TrainOptions QuickCpu() {
  TrainOptions o;
  o.select.requested = "cpu";
  o.epochs = 2;
  o.max_steps = 12;
  o.steps_per_run = 5;
  return o;
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("scellis-trainer-test"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TrainerTest, ReportsEverySubmissionAndEpochAndRecordsEveryLoss) {
  TrainOptions o = QuickCpu();
  o.losses_out = (dir_ / "losses.json").string();
  std::vector<Progress> progress;
  std::vector<EpochResult> epochs;
  std::string backend;
  TrainEvents events;
  events.backend = [&](const std::string& b, const std::optional<std::string>&) { backend = b; };
  events.progress = [&](const Progress& p) { progress.push_back(p); };
  events.epoch = [&](const EpochResult& e) { epochs.push_back(e); };
  Trainer trainer(o, events);
  auto r = trainer.Train(FashionMlp());
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(backend, "cpu");
  EXPECT_EQ(r->backend, "cpu");
  EXPECT_EQ(r->executor, "reference");

  // 12 steps at 5 per run: 5, 10, 12 in each epoch.
  ASSERT_EQ(progress.size(), 6u);
  const int64_t want_steps[] = {5, 10, 12, 5, 10, 12};
  ASSERT_EQ(r->losses.size(), 24u);
  for (size_t i = 0; i < progress.size(); ++i) {
    EXPECT_EQ(progress[i].epoch, static_cast<int>(i / 3) + 1);
    EXPECT_EQ(progress[i].epochs, 2);
    EXPECT_EQ(progress[i].step, want_steps[i]);
    EXPECT_EQ(progress[i].total, 12);
    // The reported loss is the latest step's.
    EXPECT_EQ(progress[i].loss, r->losses[(i / 3) * 12 + want_steps[i] - 1]);
  }

  ASSERT_EQ(epochs.size(), 2u);
  ASSERT_EQ(r->epochs.size(), 2u);
  for (int e = 0; e < 2; ++e) {
    double sum = 0;
    for (int k = 0; k < 12; ++k) sum += r->losses[e * 12 + k];
    EXPECT_DOUBLE_EQ(epochs[e].mean_loss, sum / 12);
    EXPECT_EQ(epochs[e].epoch, e + 1);
    EXPECT_EQ(epochs[e].steps, 12);
    EXPECT_EQ(epochs[e].examples, 10000);  // the whole test split, in batches of 1000
    EXPECT_GT(epochs[e].test_accuracy, 0.0);
    EXPECT_LE(epochs[e].test_accuracy, 1.0);
    EXPECT_EQ(r->epochs[e].test_accuracy, epochs[e].test_accuracy);
  }
  // Training moved: the second epoch's loss is below the first's.
  EXPECT_LT(epochs[1].mean_loss, epochs[0].mean_loss);

  Json written = Json::parse(testing::ReadWholeFile(dir_ / "losses.json"));
  EXPECT_EQ(written.get<std::vector<float>>(), r->losses);
  Json j = r->ToJson();
  EXPECT_EQ(j["epochs"].size(), 2u);
  EXPECT_EQ(j["test_accuracy"].size(), 2u);
  EXPECT_EQ(j["steps_per_run"], 5);
}

// The main job's MLP with dropout on its hidden layer, whose mask follows the step number.
std::string FashionMlpWithDropout() {
  std::string doc = FashionMlp();
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = doc.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) doc.replace(at, from.size(), to);
  };
  replace(R"({"id": "h", "type": "relu"},)",
          R"({"id": "h", "type": "relu"},
             {"id": "step", "type": "input", "params": {"name": "step", "shape": []}},
             {"id": "h_drop", "type": "dropout", "params": {"p": 0.5, "seed": 3}},)");
  replace(R"({"from": "h", "to": "o_lin.a"})",
          R"({"from": "h", "to": "h_drop.a"}, {"from": "step", "to": "h_drop.step"},
             {"from": "h_drop", "to": "o_lin.a"})");
  return doc;
}

// The MLP with dropout on its hidden layer, reading the step number from the document's "step"
// input: training feeds it every step (a fresh mask), evaluation runs without dropout.
TEST_F(TrainerTest, TrainsAndEvaluatesAForwardWithDropout) {
  const std::string doc = FashionMlpWithDropout();
  TrainOptions o = QuickCpu();
  o.epochs = 1;
  Trainer dropped(o, {});
  auto r = dropped.Train(doc);
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  Trainer plain(o, {});
  auto without = plain.Train(FashionMlp());
  ASSERT_TRUE(without.ok()) << without.errors().front().Format();
  // The same weights and batches: the first losses differ by the dropped hidden units only.
  ASSERT_EQ(r->losses.size(), 12u);
  EXPECT_NE(r->losses[0], without->losses[0]);
  ASSERT_EQ(r->epochs.size(), 1u);
  EXPECT_EQ(r->epochs[0].examples, 10000);
  EXPECT_GT(r->epochs[0].test_accuracy, 0.3);  // 12 steps of training; chance is 0.1
}

// On the GPU two runs are in flight (the next recorded while the device runs the one before):
// the losses still come back in step order, each step with its own number (the dropout mask
// follows it), as the CPU reference, which runs each run whole, gives them. A cancellation
// after the first run waits for the run behind it and keeps nothing of it.
TEST_F(TrainerTest, RunsInFlightOnTheGpuGiveTheReferencesLossesInOrder) {
  if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  const std::string doc = FashionMlpWithDropout();
  TrainOptions o = QuickCpu();
  o.epochs = 1;
  o.compile.lower.tier = policy::Tier::kDebug;
  Trainer on_cpu(o, {});
  auto reference = on_cpu.Train(doc);
  ASSERT_TRUE(reference.ok()) << reference.errors().front().Format();

  o.select.requested = "webgpu";
  o.select.allow_software_adapter = true;
  std::vector<int64_t> steps_reported;
  TrainEvents events;
  events.progress = [&](const Progress& p) { steps_reported.push_back(p.step); };
  Trainer on_gpu(o, events);
  auto r = on_gpu.Train(doc);
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(r->backend, "webgpu");
  EXPECT_EQ(steps_reported, (std::vector<int64_t>{5, 10, 12}));
  ASSERT_EQ(r->losses.size(), 12u);
  ASSERT_EQ(reference->losses.size(), 12u);
  for (size_t k = 0; k < 12; ++k)
    EXPECT_NEAR(r->losses[k], reference->losses[k], 1e-5 * std::max(1.0f, reference->losses[k]))
        << "step " << k + 1;

  TrainEvents cancel_after_one;
  int submissions = 0;
  cancel_after_one.progress = [&](const Progress&) { ++submissions; };
  cancel_after_one.cancelled = [&] { return submissions >= 1; };
  Trainer cancelled(o, cancel_after_one);
  auto stopped = cancelled.Train(doc);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.errors().front().code, "cancelled");
  EXPECT_NE(stopped.errors().front().message.find("after 5 steps"), std::string::npos)
      << stopped.errors().front().message;
}

TEST_F(TrainerTest, NamesWhatAFailureConcerns) {
  struct Case {
    std::string name;
    TrainOptions options;
    std::string text;
    Trainer::Concern concern;
    std::string code;
  };
  std::vector<Case> cases;
  TrainOptions bad_flag = QuickCpu();
  bad_flag.steps_per_run = 65;
  cases.push_back(
      {"steps per run", bad_flag, FashionMlp(), Trainer::Concern::kOptions, "bad-flag"});
  TrainOptions graph = QuickCpu();
  graph.compile.lower.tier = policy::Tier::kProd;
  cases.push_back({"no train section", graph,
                   R"({"version": 1, "nodes": [{"id": 0, "op": "input", "shape": [1],
                       "data": [1]}], "outputs": [{"name": "x", "id": 0}]})",
                   Trainer::Concern::kDocument, "no-train-section"});
  TrainOptions foreign = QuickCpu();
  foreign.resume = (dir_ / "foreign.safetensors").string();
  std::ofstream(foreign.resume, std::ios::binary) << std::string(4, '\0');
  cases.push_back({"truncated checkpoint", foreign, FashionMlp(), Trainer::Concern::kResume,
                   "safetensors-truncated"});
  TrainOptions unwritable = QuickCpu();
  unwritable.epochs = 1;
  unwritable.max_steps = 1;
  unwritable.checkpoint = (dir_ / "no" / "such" / "dir" / "ckpt.safetensors").string();
  cases.push_back(
      {"checkpoint", unwritable, FashionMlp(), Trainer::Concern::kCheckpoint, "write-failed"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Trainer trainer(c.options);
    auto r = trainer.Train(c.text);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.errors().front().code, c.code) << r.errors().front().Format();
    EXPECT_EQ(trainer.failure_concern(), c.concern);
  }
}

// A batch of 2^24 examples needs 2^24 × 784 × 4 B = 49 GiB for the images input alone: refused by
// the plan's verdict, before the session allocates a buffer or gathers a batch.
TEST_F(TrainerTest, RefusesABatchOf2To24BeforeAllocatingIt) {
  // Once a bad_alloc; now refused before any batch is gathered: no step could run. (A batch the
  // dataset holds but the host cannot is refused in planning: the trainer declares its gathered
  // batches to the plan, tested in Session.CallerHostBytesBeyondTheMachineAreRefusedInPlanning.)
  Json doc = Json::parse(FashionMlp());
  doc["train"]["batch"] = int64_t{1} << 24;
  Trainer trainer(QuickCpu());
  auto r = trainer.Train(doc.dump());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().code, "empty-training") << r.errors().front().Format();
  EXPECT_EQ(r.errors().front().pointer, "/train/batch");
}

}  // namespace
}  // namespace scellis::train
