// The trainer refuses what cannot give a meaningful run — no step to take, labels the model
// cannot score, a checkpoint that does not hold this run's state — before anything runs, and never
// ends a diverged run with success. Datasets and checkpoints are written by hand here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/json_util.h"
#include "pipeline/compile.h"
#include "support/cli.h"
#include "support/examples.h"
#include "train/trainer.h"

namespace scellis::train {
namespace {

namespace fs = std::filesystem;

// --- IDX files ----------------------------------------------------------------------------------

void PutBe32(std::string& s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(v >> shift));
}

// u8 images, `count` of `features` pixels.
std::string U8Images(const std::vector<uint8_t>& pixels, uint32_t count, uint32_t features) {
  std::string s{'\0', '\0', '\x08', '\x02'};
  PutBe32(s, count);
  PutBe32(s, features);
  for (uint8_t p : pixels) s.push_back(static_cast<char>(p));
  return s;
}

// f32 images (big-endian), for values a u8 file cannot hold.
std::string F32Images(const std::vector<float>& pixels, uint32_t count, uint32_t features) {
  std::string s{'\0', '\0', '\x0d', '\x02'};
  PutBe32(s, count);
  PutBe32(s, features);
  for (float p : pixels) {
    uint32_t bits;
    std::memcpy(&bits, &p, 4);
    PutBe32(s, bits);
  }
  return s;
}

// i8 labels, so that a negative one can be written.
std::string I8Labels(const std::vector<int8_t>& labels) {
  std::string s{'\0', '\0', '\x09', '\x01'};
  PutBe32(s, static_cast<uint32_t>(labels.size()));
  for (int8_t l : labels) s.push_back(static_cast<char>(l));
  return s;
}

void Write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A linear classifier of 4 pixels into 3 classes.
std::string Tiny(int64_t batch, int64_t eval_batch, const std::string& optimizer) {
  Json doc = Json::parse(R"({
    "format": "scellis.workflow/1", "name": "tiny", "determinism": "prod",
    "tolerance": "default", "dims": {"B": 2},
    "nodes": [
      {"id": "data", "type": "dataset", "params": {"source": "fashion-mnist"}},
      {"id": "x", "type": "input", "params": {"name": "images", "shape": ["B", 4]}},
      {"id": "y", "type": "input", "params": {"name": "labels", "shape": ["B"]}},
      {"id": "w", "type": "param",
       "params": {"shape": [4, 3], "init": {"kind": "kaiming_uniform", "seed": 1}}},
      {"id": "b", "type": "param",
       "params": {"shape": [3], "init": {"kind": "kaiming_uniform", "fan_in": 4, "seed": 2}}},
      {"id": "lin", "type": "matmul"},
      {"id": "logits", "type": "add"},
      {"id": "loss", "type": "cross_entropy"}
    ],
    "wires": [
      {"from": "x", "to": "lin.a"}, {"from": "w", "to": "lin.b"},
      {"from": "lin", "to": "logits.a"}, {"from": "b", "to": "logits.b"},
      {"from": "logits", "to": "loss.a"}, {"from": "y", "to": "loss.target"}
    ],
    "outputs": [{"name": "loss", "from": "loss"}, {"name": "logits", "from": "logits"}],
    "train": {"loss": "loss", "eval_output": "logits",
              "data": {"dataset": "data", "images": "x", "labels": "y"},
              "epochs": 1, "shuffle_seed": 1}
  })");
  doc["train"]["batch"] = batch;
  doc["train"]["eval_batch"] = eval_batch;
  doc["train"]["optimizer"] = Json::parse(optimizer);
  return doc.dump();
}

constexpr const char* kAdam = R"({"kind": "adam", "lr": 0.01})";

// --- safetensors, laid out by hand --------------------------------------------------------------

struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

std::string Checkpoint(const std::vector<RawTensor>& tensors, const std::string& content_id) {
  Json header = Json::object();
  header["__metadata__"] = {{"epoch", "0"}, {"step", "0"}, {"content_id", content_id}};
  std::string data;
  for (const RawTensor& t : tensors) {
    size_t begin = data.size();
    data.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4);
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((text.size() >> (8 * i)) & 0xff));
  return out + text + data;
}

class TrainerInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("scellis-trainer-input-test");
    if (const char* old = std::getenv("SCELLIS_FASHION_MNIST_DIR")) old_env_ = old;
    ::setenv("SCELLIS_FASHION_MNIST_DIR", dir_.c_str(), 1);
    // Six training and four test examples of four pixels, labels 0 to 2.
    std::vector<uint8_t> train(24), test(16);
    for (size_t i = 0; i < train.size(); ++i) train[i] = static_cast<uint8_t>(37 * i % 256);
    for (size_t i = 0; i < test.size(); ++i) test[i] = static_cast<uint8_t>(91 * i % 256);
    WriteSplits(U8Images(train, 6, 4), I8Labels({0, 1, 2, 0, 1, 2}), U8Images(test, 4, 4),
                I8Labels({2, 1, 0, 1}));
  }
  void TearDown() override {
    if (old_env_) {
      ::setenv("SCELLIS_FASHION_MNIST_DIR", old_env_->c_str(), 1);
    } else {
      ::unsetenv("SCELLIS_FASHION_MNIST_DIR");
    }
    fs::remove_all(dir_);
  }

  void WriteSplits(const std::string& train_images, const std::string& train_labels,
                   const std::string& test_images, const std::string& test_labels) {
    Write(dir_ / "train-images-idx3-ubyte.gz", train_images);
    Write(dir_ / "train-labels-idx1-ubyte.gz", train_labels);
    Write(dir_ / "t10k-images-idx3-ubyte.gz", test_images);
    Write(dir_ / "t10k-labels-idx1-ubyte.gz", test_labels);
  }

  static TrainOptions Cpu() {
    TrainOptions o;
    o.select.requested = "cpu";
    o.steps_per_run = 1;
    return o;
  }

  // Trains `text`; expects a refusal with `code` whose message holds `says`.
  static void ExpectRefused(const std::string& text, const TrainOptions& o, const std::string& code,
                            const std::string& says, const std::string& pointer = "") {
    Trainer trainer(o);
    auto r = trainer.Train(text);
    ASSERT_FALSE(r.ok()) << "trained " << r->losses.size() << " steps";
    const Diagnostic& d = r.errors().front();
    EXPECT_EQ(d.code, code) << d.Format();
    EXPECT_NE(d.message.find(says), std::string::npos) << d.Format();
    if (!pointer.empty()) {
      EXPECT_EQ(d.pointer, pointer) << d.Format();
    }
  }

  static std::string ContentId(const std::string& text) {
    pipeline::CompileOptions o;
    o.up_to = pipeline::Rung::kBlock;
    auto c = pipeline::Compile(text, o);
    return c.ok() ? c->doc.content_id : "";
  }

  fs::path dir_;
  std::optional<std::string> old_env_;
};

TEST_F(TrainerInputTest, TrainsTheTinyModel) {
  // The refusals below are of this document, which itself trains.
  Trainer trainer(Cpu());
  auto r = trainer.Train(Tiny(2, 2, kAdam));
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(r->losses.size(), 3u);  // 6 examples in batches of 2
  ASSERT_EQ(r->epochs.size(), 1u);
  EXPECT_EQ(r->epochs[0].examples, 4);
}

// On a GPU the train split is held on the device and each step's batch gathered there from its
// fed row indices: the same batches, moved as bits, so the losses and the scored accuracy are
// those of the batches gathered on the host and fed (--host-batches), bit for bit, and the CPU
// reference's within its tolerance. A streamed set is fed from the host, saying why.
TEST_F(TrainerInputTest, BatchesGatheredOnTheDeviceGiveTheHostFedBits) {
  if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  // 192 training and 100 test examples of 784 random pixels, labels 0 to 9: three batches of 64.
  std::mt19937 rng(20261205);
  auto pixels = [&](size_t n) {
    std::vector<uint8_t> p(n);
    for (uint8_t& v : p) v = static_cast<uint8_t>(rng() % 256);
    return p;
  };
  auto labels = [&](size_t n) {
    std::vector<int8_t> l(n);
    for (int8_t& v : l) v = static_cast<int8_t>(rng() % 10);
    return l;
  };
  WriteSplits(U8Images(pixels(192 * 784), 192, 784), I8Labels(labels(192)),
              U8Images(pixels(100 * 784), 100, 784), I8Labels(labels(100)));
  Json doc = Json::parse(testing::FashionMlp());
  doc["train"]["eval_batch"] = 100;
  const std::string text = doc.dump();

  TrainOptions o = Cpu();
  o.epochs = 2;
  o.steps_per_run = 2;
  auto reference = Trainer(o).Train(text);
  ASSERT_TRUE(reference.ok()) << reference.errors().front().Format();
  EXPECT_EQ(reference->batches, "host");
  EXPECT_FALSE(reference->host_batches_reason.has_value());

  o.select.requested = "webgpu";
  o.select.allow_software_adapter = true;
  auto on_device = Trainer(o).Train(text);
  ASSERT_TRUE(on_device.ok()) << on_device.errors().front().Format();
  EXPECT_EQ(on_device->batches, "device");
  EXPECT_FALSE(on_device->host_batches_reason.has_value());
  EXPECT_EQ(on_device->ToJson()["batches"], "device");

  o.host_batches = true;
  auto from_host = Trainer(o).Train(text);
  ASSERT_TRUE(from_host.ok()) << from_host.errors().front().Format();
  EXPECT_EQ(from_host->batches, "host");
  EXPECT_EQ(from_host->host_batches_reason.value_or(""), "--host-batches");

  ASSERT_EQ(on_device->losses.size(), 6u);  // 2 epochs of 3 steps
  ASSERT_EQ(from_host->losses.size(), 6u);
  ASSERT_EQ(reference->losses.size(), 6u);
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(on_device->losses[k], from_host->losses[k]) << "step " << k + 1;
    EXPECT_NEAR(on_device->losses[k], reference->losses[k],
                1e-5 * std::max(1.0f, reference->losses[k]))
        << "step " << k + 1;
  }
  ASSERT_EQ(on_device->epochs.size(), 2u);
  for (size_t e = 0; e < 2; ++e)
    EXPECT_EQ(on_device->epochs[e].test_accuracy, from_host->epochs[e].test_accuracy);

  // Two steps of a streamed set suffice to see where its batches come from.
  o.host_batches = false;
  o.stream_dataset = true;
  o.store_root = (dir_ / "store").string();
  o.epochs = 1;
  o.max_steps = 2;
  auto streamed = Trainer(o).Train(text);
  ASSERT_TRUE(streamed.ok()) << streamed.errors().front().Format();
  EXPECT_EQ(streamed->batches, "host");
  EXPECT_EQ(streamed->host_batches_reason.value_or(""), "the dataset is streamed from its files");
  EXPECT_EQ(streamed->losses,
            std::vector<float>(from_host->losses.begin(), from_host->losses.begin() + 2));
}

TEST_F(TrainerInputTest, RefusesABatchLargerThanTheTrainSplit) {
  ExpectRefused(Tiny(7, 2, kAdam), Cpu(), "empty-training", "larger than the train split's 6",
                "/train/batch");
}

TEST_F(TrainerInputTest, RefusesAnEvalBatchLargerThanTheTestSplit) {
  ExpectRefused(Tiny(2, 5, kAdam), Cpu(), "empty-training", "larger than the test split's 4",
                "/train/eval_batch");
}

TEST_F(TrainerInputTest, RefusesAnOutputThatIsADatasetFile) {
  // Through another spelling of the path: the check is by file, not by string.
  TrainOptions o = Cpu();
  o.losses_out = (dir_ / "." / "t10k-labels-idx1-ubyte.gz").string();
  const std::string before = ReadAll(dir_ / "t10k-labels-idx1-ubyte.gz");
  ExpectRefused(Tiny(2, 2, kAdam), o, "bad-output-path", "is the dataset file");
  EXPECT_EQ(ReadAll(dir_ / "t10k-labels-idx1-ubyte.gz"), before);
}

TEST_F(TrainerInputTest, RefusesAnEmptyTrainSplit) {
  WriteSplits(U8Images({}, 0, 4), I8Labels({}), U8Images(std::vector<uint8_t>(16), 4, 4),
              I8Labels({0, 1, 2, 0}));
  ExpectRefused(Tiny(2, 2, kAdam), Cpu(), "empty-training", "holds no examples");
}

TEST_F(TrainerInputTest, RefusesLabelsOutsideTheClassesInEitherSplit) {
  std::vector<uint8_t> train(24, 7), test(16, 9);
  // Class 3 of a 3-class model, at training example 4.
  WriteSplits(U8Images(train, 6, 4), I8Labels({0, 1, 2, 0, 3, 2}), U8Images(test, 4, 4),
              I8Labels({0, 1, 2, 0}));
  ExpectRefused(Tiny(2, 2, kAdam), Cpu(), "bad-dataset", "example 4 of \"fashion-mnist:train\"");
  // A negative label at test example 2.
  WriteSplits(U8Images(train, 6, 4), I8Labels({0, 1, 2, 0, 1, 2}), U8Images(test, 4, 4),
              I8Labels({0, 1, -1, 0}));
  ExpectRefused(Tiny(2, 2, kAdam), Cpu(), "bad-dataset", "example 2 of \"fashion-mnist:test\"");
}

TEST_F(TrainerInputTest, ANonFiniteLossEndsTheRunWithoutACheckpoint) {
  std::vector<float> train(24, 0.5f);
  train[5] = std::numeric_limits<float>::infinity();
  WriteSplits(F32Images(train, 6, 4), I8Labels({0, 1, 2, 0, 1, 2}),
              F32Images(std::vector<float>(16, 0.5f), 4, 4), I8Labels({0, 1, 2, 0}));
  TrainOptions o = Cpu();
  o.checkpoint = (dir_ / "ckpt.safetensors").string();
  Trainer trainer(o);
  auto r = trainer.Train(Tiny(6, 2, kAdam));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().code, "non-finite-readback") << r.errors().front().Format();
  EXPECT_FALSE(fs::exists(o.checkpoint));
}

TEST_F(TrainerInputTest, NonFiniteWeightsEndTheRunWithoutACheckpoint) {
  // SGD's weight decay multiplies each weight by (1 - lr * weight_decay) per step: -1e31 here
  // (settings validate accepts), so the weights leave f32's range on the second step. Whichever
  // guard sees the non-finite value first, the run is an error and nothing is written.
  std::vector<uint8_t> train(24, 100);
  WriteSplits(U8Images(train, 6, 4), I8Labels({0, 1, 2, 0, 1, 2}), U8Images(train, 6, 4),
              I8Labels({0, 1, 2, 0, 1, 2}));
  TrainOptions o = Cpu();
  o.checkpoint = (dir_ / "ckpt.safetensors").string();
  Trainer trainer(o);
  auto r = trainer.Train(Tiny(2, 2, R"({"kind": "sgd", "lr": 10, "weight_decay": 1e30})"));
  ASSERT_FALSE(r.ok()) << "trained " << r->losses.size() << " steps";
  const std::string code = r.errors().front().code;
  EXPECT_TRUE(code == "non-finite-state" || code == "non-finite-readback")
      << r.errors().front().Format();
  EXPECT_FALSE(fs::exists(o.checkpoint));
}

// The state of Tiny under Adam, as a checkpoint holds it: each param and its two moments.
std::vector<RawTensor> TinyState() {
  std::vector<RawTensor> t;
  for (const char* suffix : {"", "@m", "@v"}) {
    t.push_back({std::string("w") + suffix, "F32", {4, 3}, std::vector<float>(12, 0.25f)});
    t.push_back({std::string("b") + suffix, "F32", {3}, std::vector<float>(3, 0.125f)});
  }
  return t;
}

TEST_F(TrainerInputTest, ResumesAHandWrittenCheckpoint) {
  const std::string text = Tiny(2, 2, kAdam);
  TrainOptions o = Cpu();
  o.resume = (dir_ / "resume.safetensors").string();
  Write(o.resume, Checkpoint(TinyState(), ContentId(text)));
  Trainer trainer(o);
  auto r = trainer.Train(text);
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  EXPECT_EQ(r->losses.size(), 3u);
}

TEST_F(TrainerInputTest, RefusesACheckpointThatIsNotThisRunsState) {
  const std::string text = Tiny(2, 2, kAdam);
  TrainOptions o = Cpu();
  o.resume = (dir_ / "resume.safetensors").string();
  auto refused = [&](std::vector<RawTensor> state, const std::string& says,
                     const std::string& pointer) {
    Write(o.resume, Checkpoint(state, ContentId(text)));
    ExpectRefused(text, o, "bad-checkpoint", says, pointer);
  };
  {
    SCOPED_TRACE("transposed: as many elements, another shape");
    std::vector<RawTensor> s = TinyState();
    s[0].shape = {3, 4};
    refused(s, "is F32 [3, 4], expected F32 [4, 3]", "/w");
  }
  {
    SCOPED_TRACE("a moment of another dtype");
    std::vector<RawTensor> s = TinyState();
    s[3].dtype = "I32";
    refused(s, "is I32 [3], expected F32 [3]", "/b@m");
  }
  {
    SCOPED_TRACE("NaN in a weight");
    std::vector<RawTensor> s = TinyState();
    s[0].values[7] = std::nanf("");
    refused(s, "\"w\" holds NaN at element 7", "/w");
  }
  {
    SCOPED_TRACE("infinity in a moment");
    std::vector<RawTensor> s = TinyState();
    s[5].values[2] = -std::numeric_limits<float>::infinity();
    refused(s, "\"b@v\" holds -infinity at element 2", "/b@v");
  }
  {
    SCOPED_TRACE("a missing moment");
    std::vector<RawTensor> s = TinyState();
    s.erase(s.begin() + 4);
    refused(s, "has no tensor \"w@v\"", "/w@v");
  }
  {
    SCOPED_TRACE("an extra tensor");
    std::vector<RawTensor> s = TinyState();
    s.push_back({"w2", "F32", {1}, {1.0f}});
    refused(s, "\"w2\" that is not part of this run's state", "/w2");
  }
}

TEST_F(TrainerInputTest, RefusesToResumeFromANonRegularFile) {
  TrainOptions o = Cpu();
  o.resume = "/dev/zero";
  ExpectRefused(Tiny(2, 2, kAdam), o, "not-a-regular-file", "not a regular file");
}

}  // namespace
}  // namespace scellis::train
