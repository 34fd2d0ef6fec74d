// `scellis plan` on a training workflow states the host memory its dataset takes: the trainer
// holds both splits decoded whole and the evaluation batch it gathers, so the bytes are counted
// from the files' headers.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include "base/json_util.h"
#include "support/cli.h"

namespace scellis::testing {
namespace {

namespace fs = std::filesystem;

// An IDX file of u8 values with the given dimensions, gzipped or plain.
void WriteIdx(const fs::path& path, const std::vector<uint32_t>& dims, bool gzip, unsigned seed) {
  std::string bytes = {0, 0, 0x08, static_cast<char>(dims.size())};
  size_t count = 1;
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) bytes.push_back(static_cast<char>((d >> shift) & 0xff));
    count *= d;
  }
  std::mt19937 rng(seed);
  for (size_t i = 0; i < count; ++i) bytes.push_back(static_cast<char>(rng() % 10));
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
}

// The main job's document (examples/fashion_mlp.json) reading plain IDX files of `examples` random
// images and labels written in `dir`; returns the document's path.
std::string FashionDocOn(const fs::path& dir, uint32_t examples, unsigned seed) {
  WriteIdx(dir / "images", {examples, 28, 28}, false, seed);
  WriteIdx(dir / "labels", {examples}, false, seed + 1);
  Json doc =
      Json::parse(std::ifstream(fs::path(SCELLIS_SOURCE_DIR) / "examples" / "fashion_mlp.json"));
  doc["nodes"][0]["params"]["source"] =
      "idx:" + (dir / "images").string() + "," + (dir / "labels").string();
  const std::string file = (dir / "mlp.json").string();
  std::ofstream(file) << doc.dump();
  return file;
}

TEST(DatasetPlanCli, TheDatasetsHostBytesAreStated) {
  const fs::path dir = MakeTempDir("scellis-dataset-plan");
  const unsigned seed = std::random_device{}();
  const uint32_t examples = 37 + seed % 50;
  WriteIdx(dir / "images.gz", {examples, 28, 28}, true, seed);
  WriteIdx(dir / "labels", {examples}, false, seed + 1);
  Json doc =
      Json::parse(std::ifstream(fs::path(SCELLIS_SOURCE_DIR) / "examples" / "fashion_mlp.json"));
  doc["nodes"][0]["params"]["source"] =
      "idx:" + (dir / "images.gz").string() + "," + (dir / "labels").string();
  ASSERT_EQ(doc["nodes"][0]["type"], "dataset");
  const fs::path file = dir / "mlp.json";
  std::ofstream(file) << doc.dump();

  // An idx source serves the same files as both splits: two copies of images and labels as f32,
  // and the evaluation batch gathered from the test split (eval_batch 1000, so all of it here).
  const int64_t want = 2 * 4 * (int64_t{examples} * 784 + examples) + int64_t{examples} * 785 * 4;
  CliRun json = RunScellis({"plan", file.string(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json j = Json::parse(json.out);
  EXPECT_EQ(j["dataset"]["host_bytes"], want) << "examples " << examples;
  EXPECT_EQ(j["dataset"]["train_examples"], examples);
  EXPECT_EQ(j["dataset"]["features"], 784);
  EXPECT_EQ(j["dataset"]["streamed"], false);
  EXPECT_EQ(j["dataset"]["eval_batch"], examples);
  CliRun text = RunScellis({"plan", file.string()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("  dataset          : \"idx:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(std::to_string(examples) + " train + " + std::to_string(examples) +
                          " test examples of 784 f32"),
            std::string::npos)
      << text.out;

  // A document without a dataset has no such line.
  CliRun plain = RunScellis(
      {"plan", (fs::path(SCELLIS_SOURCE_DIR) / "examples" / "center_columns.json").string()});
  EXPECT_EQ(plain.out.find("dataset          :"), std::string::npos) << plain.out;
  fs::remove_all(dir);
}

// `scellis plan --backend=webgpu` plans a training step as `scellis train` runs it there: the
// train split held on the device and each batch gathered from it (SwiftShader); --host-batches, or
// the CPU reference, feeds the batches from the host.
TEST(DatasetPlanCli, AGpuPlanHoldsTheTrainSplitOnTheDevice) {
  const fs::path dir = MakeTempDir("scellis-dataset-plan-gpu");
  const unsigned seed = std::random_device{}();
  const uint32_t examples = 37 + seed % 50;
  const std::string file = FashionDocOn(dir, examples, seed);

  CliRun device = RunScellis({"plan", file, "--backend=webgpu", "--allow-software-adapter"});
  ASSERT_EQ(device.exit_code, 0) << device.err;
  EXPECT_NE(device.out.find("the train split also copied to the device once"), std::string::npos)
      << device.out;
  EXPECT_EQ(device.out.find("pinned: %x\n"), std::string::npos) << device.out;
  EXPECT_NE(device.out.find("dispatches       : 5 kernels"), std::string::npos) << device.out;
  // The gathers are folded into their readers: the images' rows read by the first product and the
  // first layer's weight gradient, the labels' by the loss.
  auto times = [&](const std::string& needle) {
    int n = 0;
    for (size_t at = device.out.find(needle); at != std::string::npos;
         at = device.out.find(needle, at + 1))
      ++n;
    return n;
  };
  for (const char* buffer : {"\n    b0 [^\n]* %images@dataset\n", "\n    b1 [^\n]* %batch_index\n",
                             "\n    b2 [^\n]* %labels@dataset\n"})
    EXPECT_TRUE(std::regex_search(device.out, std::regex(buffer))) << buffer << device.out;
  EXPECT_EQ(times("  rows of b0 by b1"), 2) << device.out;  // b0 the images, b1 the index
  EXPECT_EQ(times("  rows of b2 by b1"), 1) << device.out;  // b2 the labels

  CliRun host =
      RunScellis({"plan", file, "--backend=webgpu", "--allow-software-adapter", "--host-batches"});
  ASSERT_EQ(host.exit_code, 0) << host.err;
  EXPECT_NE(host.err.find("each step's batch is gathered on the host and fed: --host-batches"),
            std::string::npos)
      << host.err;
  EXPECT_NE(host.out.find("pinned: %x\n"), std::string::npos) << host.out;
  EXPECT_EQ(host.out.find("@dataset"), std::string::npos) << host.out;

  CliRun reference = RunScellis({"plan", file});
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  EXPECT_EQ(reference.out.find("@dataset"), std::string::npos) << reference.out;
  EXPECT_EQ(reference.err.find("gathered on the host"), std::string::npos) << reference.err;
  fs::remove_all(dir);
}

// The first line of `text` holding `needle`, or "".
std::string LineWith(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  const size_t begin = text.rfind('\n', at) + 1;  // npos + 1 is 0
  return text.substr(begin, text.find('\n', at) - begin);
}

// `scellis run` judges a training workflow's plan as `plan` does, its dataset counted: under a
// budget the whole set is over it says the same `streamed-dataset` warning, under one even the
// streamed set is over it is refused with the same finding and the same largest batch; and since a
// run reads no dataset, it then refuses by name, never leaving the dataset's inputs unfed.
TEST(DatasetPlanCli, RunJudgesATrainingWorkflowsPlanAsPlanDoes) {
  const fs::path dir = MakeTempDir("scellis-dataset-run");
  const unsigned seed = std::random_device{}();
  // Enough examples that the whole set (both splits and the evaluation batch) outweighs the
  // streamed one (8 batches of 64 and the evaluation batch).
  const uint32_t examples = 300 + seed % 50;
  const std::string file = FashionDocOn(dir, examples, seed);

  CliRun held = RunScellis({"plan", file, "--json"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  const Json h = Json::parse(held.out);
  const int64_t example = 785 * 4;
  const int64_t whole = h["dataset"]["host_bytes"];
  EXPECT_EQ(whole, (3 * int64_t{examples}) * example);  // two splits and the evaluation batch
  const int64_t model = h["memory"]["allocated"].get<int64_t>() - whole;
  const int64_t streamed = (8 * 64 + int64_t{examples}) * example;

  CliRun run = RunScellis({"run", file, "--backend=cpu"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("/nodes/1: error[dataset-not-read]"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("missing-input-data"), std::string::npos) << run.err;

  const std::string yellow = "--budget=" + std::to_string(model + (whole + streamed) / 2);
  CliRun plan_yellow = RunScellis({"plan", file, yellow});
  ASSERT_EQ(plan_yellow.exit_code, 0) << plan_yellow.err;
  const std::string warning = LineWith(plan_yellow.out, "warning[streamed-dataset]");
  ASSERT_FALSE(warning.empty()) << plan_yellow.out;
  CliRun run_yellow = RunScellis({"run", file, "--backend=cpu", yellow});
  EXPECT_EQ(run_yellow.exit_code, 2);
  // The plan prints its finding indented under the verdict; the run says it on stderr.
  EXPECT_NE(run_yellow.err.find(warning.substr(warning.find("/nodes/0:"))), std::string::npos)
      << run_yellow.err << "\nplan: " << warning;
  EXPECT_NE(run_yellow.err.find("error[dataset-not-read]"), std::string::npos) << run_yellow.err;

  const std::string red = "--budget=" + std::to_string(model + streamed / 2);
  CliRun plan_red = RunScellis({"plan", file, red});
  ASSERT_EQ(plan_red.exit_code, 2);
  const std::string over = LineWith(plan_red.err, "error[memory-over-budget]");
  const std::string fix = LineWith(plan_red.err, "the largest batch that fits is B=");
  ASSERT_FALSE(over.empty()) << plan_red.err;
  ASSERT_FALSE(fix.empty()) << plan_red.err;
  CliRun run_red = RunScellis({"run", file, "--backend=cpu", red});
  EXPECT_EQ(run_red.exit_code, 2);
  EXPECT_EQ(LineWith(run_red.err, "error[memory-over-budget]"), over) << run_red.err;
  EXPECT_EQ(LineWith(run_red.err, "the largest batch that fits is B="), fix) << run_red.err;
  EXPECT_EQ(run_red.err.find("dataset-not-read"), std::string::npos) << run_red.err;
  fs::remove_all(dir);
}

// `scellis plan --ranks` plans a data-parallel step as `scellis train --ranks` does: each rank's
// gradient half counts the dataset it holds and the chunks it gathers, and a rank whose whole step
// does not fit with the set held streams it.
TEST(DatasetPlanCli, RanksPlanTheDataParallelStepWithItsDataset) {
  const fs::path dir = MakeTempDir("scellis-dataset-ranks");
  const unsigned seed = std::random_device{}();
  const uint32_t examples = 40 + seed % 50;
  const std::string file = FashionDocOn(dir, examples, seed);
  auto ranks_plan = [&](std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"plan", file, "--ranks", "2"});
    return RunScellis(flags);
  };
  auto dataset_line = [](const CliRun& r) { return LineWith(r.out, "  dataset          :"); };
  CliRun held = ranks_plan({"--json"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  CliRun bare = RunScellis({"lower", file, "--to=workplan", "--ranks", "2", "--json"});
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  const Json rank = Json::parse(held.out)["memory"][0];
  // Beyond the step's own plan, a rank's gradient half holds both splits and the evaluation
  // batch (eval_batch 1000: every example here), and gathers its one chunk of 32 examples.
  EXPECT_EQ(rank["gradients_plan"].get<int64_t>() -
                Json::parse(bare.out)["memory"][0]["gradients_plan"].get<int64_t>(),
            (3 * int64_t{examples} + 32) * 785 * 4)
      << "examples " << examples;
  CliRun text = ranks_plan({});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(dataset_line(text).find("held whole for the run"), std::string::npos) << text.out;

  // A byte under the rank's whole step with the set held: streamed, and said why.
  const int64_t whole_step = rank["total"];
  CliRun streamed = ranks_plan({"--budget=" + std::to_string(whole_step - 1)});
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_NE(streamed.err.find("held whole a rank's step would need"), std::string::npos)
      << streamed.err;
  EXPECT_NE(dataset_line(streamed).find("streamed"), std::string::npos) << streamed.out;
  CliRun exact = ranks_plan({"--budget=" + std::to_string(whole_step)});
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  EXPECT_EQ(exact.err.find("streamed-dataset"), std::string::npos) << exact.err;
  CliRun red = ranks_plan({"--budget=64K"});
  EXPECT_EQ(red.exit_code, 2);
  EXPECT_NE(red.err.find("error[memory-over-budget]"), std::string::npos) << red.err;
  CliRun untrained = RunScellis(
      {"plan", (fs::path(SCELLIS_SOURCE_DIR) / "examples" / "center_columns.json").string(),
       "--ranks", "2"});
  EXPECT_EQ(untrained.exit_code, 2);
  EXPECT_NE(untrained.err.find("error[bad-flag]"), std::string::npos) << untrained.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace scellis::testing
