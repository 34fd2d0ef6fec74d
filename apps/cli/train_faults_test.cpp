// Training under an injected allocation failure, with a checkpoint: wherever the failure strikes
// (before the first step, mid-epoch, while a checkpoint is read back), `scellis train` stops with
// the device's named error, writes no losses file, leaves no temporary file beside its outputs,
// and any checkpoint it leaves is the whole state of the last finished epoch — byte for byte the
// checkpoint an unfaulted run writes after that epoch, and resumable to the unfaulted run's end.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "support/cli.h"

namespace scellis::testing {
namespace {

namespace fs = std::filesystem;

// An IDX file: big-endian magic and sizes, then unsigned bytes.
void WriteIdx(const fs::path& path, uint32_t magic, const std::vector<uint32_t>& dims,
              const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  auto put = [&out](uint32_t v) {
    const char be[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    out.write(be, 4);
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

class TrainFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 0);
    dir_ = MakeTempDir("scellis-train-faults");
    // 32 examples of 4x4 images over 3 classes: batch 8 gives 4 steps an epoch, two epochs.
    std::mt19937 gen(20261202);
    std::vector<uint8_t> pixels(32 * 16), labels(32);
    for (uint8_t& p : pixels) p = uint8_t(gen() % 256);
    for (uint8_t& l : labels) l = uint8_t(gen() % 3);
    WriteIdx(dir_ / "images.idx", 0x803, {32, 4, 4}, pixels);
    WriteIdx(dir_ / "labels.idx", 0x801, {32}, labels);
    std::ofstream(dir_ / "train.json") << R"({
      "format": "scellis.workflow/1", "name": "tiny_train", "determinism": "debug",
      "nodes": [
        {"id": "d", "type": "dataset", "params": {"source": "idx:)"
                                       << (dir_ / "images.idx").string() << ","
                                       << (dir_ / "labels.idx").string() << R"("}},
        {"id": "x", "type": "input", "params": {"name": "x", "shape": [8, 16]}},
        {"id": "y", "type": "input", "params": {"name": "y", "shape": [8]}},
        {"id": "w", "type": "param", "params": {"name": "w", "shape": [16, 3],
          "init": {"kind": "kaiming_uniform", "seed": 1}}},
        {"id": "b", "type": "param", "params": {"name": "b", "shape": [3],
          "init": {"kind": "uniform", "low": -0.1, "high": 0.1, "seed": 2}}},
        {"id": "xw", "type": "matmul"}, {"id": "logits", "type": "add"},
        {"id": "loss", "type": "cross_entropy"}],
      "wires": [
        {"from": "x", "to": "xw.a"}, {"from": "w", "to": "xw.b"},
        {"from": "xw", "to": "logits.a"}, {"from": "b", "to": "logits.b"},
        {"from": "logits", "to": "loss.a"}, {"from": "y", "to": "loss.target"}],
      "outputs": [{"name": "loss", "from": "loss"}, {"name": "logits", "from": "logits"}],
      "train": {"loss": "loss", "eval_output": "logits",
        "data": {"dataset": "d", "images": "x", "labels": "y"},
        "optimizer": {"kind": "adam", "lr": 0.01}, "batch": 8, "eval_batch": 8, "epochs": 2,
        "shuffle_seed": 1}})";
  }
  void TearDown() override { fs::remove_all(dir_); }

  CliRun Train(const fs::path& out_dir, std::vector<std::string> extra) {
    std::vector<std::string> args = {"train",
                                     (dir_ / "train.json").string(),
                                     "--backend=webgpu",
                                     "--allow-software-adapter",
                                     "--checkpoint",
                                     (out_dir / "state.safetensors").string(),
                                     "--losses-out",
                                     (out_dir / "losses.json").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunScellis(args);
  }

  fs::path dir_;
};

TEST_F(TrainFaults, AnAllocationFailureLeavesOnlyAWholeEarlierCheckpoint) {
  // The unfaulted runs: the state after epoch 1, and after epoch 2.
  const fs::path one = dir_ / "one", two = dir_ / "two";
  fs::create_directories(one);
  fs::create_directories(two);
  CliRun r1 = Train(one, {"--epochs", "1"});
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  CliRun r2 = Train(two, {});
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  const std::string after_epoch_1 = ReadWholeFile(one / "state.safetensors");
  const std::string after_epoch_2 = ReadWholeFile(two / "state.safetensors");
  ASSERT_FALSE(after_epoch_1.empty());
  ASSERT_NE(after_epoch_1, after_epoch_2);

  // Every fourth buffer the run creates fails in turn, until a run creates fewer buffers than
  // that (it then succeeds, and the sweep is over). Strides keep the test short; the buffers
  // of both epochs, the evaluation and the checkpoint read-back are all reached.
  int failed_without_checkpoint = 0, failed_with_checkpoint = 0;
  bool finished = false;
  for (int nth = 1; nth <= 300 && !finished; nth += 4) {
    SCOPED_TRACE("allocation " + std::to_string(nth));
    const fs::path out = dir_ / ("fault-" + std::to_string(nth));
    fs::create_directories(out);
    setenv("SCELLIS_FAULT_ALLOCATION", std::to_string(nth).c_str(), 1);
    CliRun r = Train(out, {});
    unsetenv("SCELLIS_FAULT_ALLOCATION");
    ASSERT_TRUE(r.exited) << "killed by signal " << r.signal;
    if (r.exit_code == 0) {
      EXPECT_EQ(ReadWholeFile(out / "state.safetensors"), after_epoch_2);
      finished = true;
      continue;
    }
    EXPECT_NE(r.err.find("gpu-out-of-memory"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out / "losses.json"));
    for (const fs::directory_entry& e : fs::directory_iterator(out))
      EXPECT_EQ(e.path().filename(), "state.safetensors") << "a stray file: " << e.path();
    if (!fs::exists(out / "state.safetensors")) {
      ++failed_without_checkpoint;
      continue;
    }
    ++failed_with_checkpoint;
    EXPECT_EQ(ReadWholeFile(out / "state.safetensors"), after_epoch_1);
    // The surviving checkpoint resumes to the unfaulted run's end (only once: it is the same
    // file every time).
    if (failed_with_checkpoint == 1) {
      const fs::path resumed = dir_ / "resumed";
      fs::create_directories(resumed);
      CliRun rr = Train(resumed, {"--resume", (out / "state.safetensors").string()});
      ASSERT_EQ(rr.exit_code, 0) << rr.err;
      EXPECT_EQ(ReadWholeFile(resumed / "state.safetensors"), after_epoch_2);
    }
  }
  EXPECT_TRUE(finished) << "every run failed: the sweep never passed the last allocation";
  EXPECT_GT(failed_without_checkpoint, 0);
  EXPECT_GT(failed_with_checkpoint, 0);
}

}  // namespace
}  // namespace scellis::testing
