// `scellis plan` on a training workflow states the host memory its dataset takes: the trainer
// holds both splits decoded whole and the evaluation batch it gathers, so the bytes are counted
// from the files' headers.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <random>

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

}  // namespace
}  // namespace scellis::testing
