// A streamed dataset trains to the same bits as a held one, and the plan counts the dataset: held
// whole where it fits, streamed (yellow) where only that fits, red with the largest batch below.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "base/json_util.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "pipeline/data_parallel.h"
#include "store/safetensors.h"
#include "support/cli.h"
#include "train/dataset_memory.h"
#include "train/trainer.h"
#include "workplan/workplan.h"

namespace scellis::train {
namespace {

namespace fs = std::filesystem;

void PutBe32(std::string& s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(v >> shift));
}

// An IDX file of `type` with dimensions `dims` and raw big-endian elements `body`.
std::string Idx(uint8_t type, const std::vector<uint32_t>& dims, const std::string& body) {
  std::string s{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) PutBe32(s, d);
  return s + body;
}

void WritePlain(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

void WriteGzip(const fs::path& p, const std::string& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A linear classifier of 6 pixels into 3 classes on the dataset `source`.
std::string Tiny(const std::string& source) {
  Json doc = Json::parse(R"({
    "format": "scellis.workflow/1", "name": "tiny_stream", "determinism": "prod",
    "tolerance": "default", "dims": {"B": 4},
    "nodes": [
      {"id": "data", "type": "dataset", "params": {"source": ""}},
      {"id": "x", "type": "input", "params": {"name": "images", "shape": ["B", 6]}},
      {"id": "y", "type": "input", "params": {"name": "labels", "shape": ["B"]}},
      {"id": "w", "type": "param",
       "params": {"shape": [6, 3], "init": {"kind": "kaiming_uniform", "seed": 5}}},
      {"id": "b", "type": "param",
       "params": {"shape": [3], "init": {"kind": "kaiming_uniform", "fan_in": 6, "seed": 6}}},
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
              "optimizer": {"kind": "adam", "lr": 0.05},
              "batch": 4, "eval_batch": 5, "epochs": 2, "shuffle_seed": 3}
  })");
  doc["nodes"][0]["params"]["source"] = source;
  return doc.dump();
}

class DatasetStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("scellis-dataset-stream-test");
    // 21 examples of 6 u8 pixels, fresh each run; labels 0..2.
    std::mt19937 rng(std::random_device{}());
    std::string pixels, labels;
    for (int i = 0; i < kExamples * 6; ++i) pixels.push_back(static_cast<char>(rng() % 256));
    for (int i = 0; i < kExamples; ++i) labels.push_back(static_cast<char>(rng() % 3));
    images_ = Idx(0x08, {kExamples, 2, 3}, pixels);
    labels_ = Idx(0x08, {kExamples}, labels);
    WriteGzip(dir_ / "images.gz", images_);
    WriteGzip(dir_ / "labels.gz", labels_);
    WritePlain(dir_ / "images.idx", images_);
    WritePlain(dir_ / "labels.idx", labels_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Source(bool gz) const {
    return "idx:" + (dir_ / (gz ? "images.gz" : "images.idx")).string() + "," +
           (dir_ / (gz ? "labels.gz" : "labels.idx")).string();
  }

  TrainOptions Cpu(bool stream, const std::string& checkpoint) const {
    TrainOptions o;
    o.select.requested = "cpu";
    o.steps_per_run = 2;
    o.stream_dataset = stream;
    o.store_root = (dir_ / "store").string();
    o.checkpoint = (dir_ / checkpoint).string();
    return o;
  }

  static constexpr int kExamples = 21;
  fs::path dir_;
  std::string images_, labels_;
};

// Losses, accuracy and the whole trained state (params and Adam moments, as the checkpoint's
// bytes) of a streamed run equal the held run's, from gzipped and from plain files.
TEST_F(DatasetStreamTest, StreamedTrainingEqualsHeldBitForBit) {
  for (bool gz : {true, false}) {
    SCOPED_TRACE(gz ? "gzipped" : "plain");
    const std::string doc = Tiny(Source(gz));
    auto held = Trainer(Cpu(false, "held.safetensors")).Train(doc);
    ASSERT_TRUE(held.ok()) << held.errors().front().Format();
    auto streamed = Trainer(Cpu(true, "streamed.safetensors")).Train(doc);
    ASSERT_TRUE(streamed.ok()) << streamed.errors().front().Format();
    EXPECT_FALSE(held->dataset_streamed);
    EXPECT_TRUE(streamed->dataset_streamed);
    ASSERT_EQ(held->losses.size(), 10u);  // 2 epochs of 21 / 4 steps
    ASSERT_EQ(streamed->losses.size(), held->losses.size());
    EXPECT_EQ(0, std::memcmp(held->losses.data(), streamed->losses.data(),
                             held->losses.size() * sizeof(float)));
    EXPECT_EQ(held->epochs.back().test_accuracy, streamed->epochs.back().test_accuracy);
    const std::string a = ReadAll(dir_ / "held.safetensors");
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, ReadAll(dir_ / "streamed.safetensors"));
  }
  // The gzipped files were inflated once into the store, filed under the compressed file's hash.
  EXPECT_TRUE(fs::exists(dir_ / "store" / "index" / "inflated-idx"));
}

// A run resumed from a checkpoint continues the same way held or streamed.
TEST_F(DatasetStreamTest, ResumedStreamedRunEqualsResumedHeldRun) {
  const std::string doc = Tiny(Source(true));
  TrainOptions first = Cpu(false, "epoch1.safetensors");
  first.epochs = 1;
  ASSERT_TRUE(Trainer(first).Train(doc).ok());
  TrainOptions held = Cpu(false, "held.safetensors"), streamed = Cpu(true, "streamed.safetensors");
  held.resume = streamed.resume = (dir_ / "epoch1.safetensors").string();
  auto h = Trainer(held).Train(doc);
  auto s = Trainer(streamed).Train(doc);
  ASSERT_TRUE(h.ok()) << h.errors().front().Format();
  ASSERT_TRUE(s.ok()) << s.errors().front().Format();
  ASSERT_EQ(h->losses.size(), 5u);  // the second epoch alone
  EXPECT_EQ(0, std::memcmp(h->losses.data(), s->losses.data(), h->losses.size() * sizeof(float)));
  EXPECT_EQ(ReadAll(dir_ / "held.safetensors"), ReadAll(dir_ / "streamed.safetensors"));
}

// Data parallel in one process (2 chunks of 2 examples): each chunk's rows read from the files at
// their offsets give the held chunked run's losses and trained state bit for bit. The held chunked
// run is not its own oracle: its first step's loss is checked here against float64 arithmetic on
// the initial state and the written pixels, and chunked runs against MPI ranks and shard re-runs
// elsewhere (tools/run_mpi_tests.sh, ShardsTest).
TEST_F(DatasetStreamTest, ChunkedStreamedTrainingEqualsChunkedHeldBitForBit) {
  const std::string doc = Tiny(Source(true));
  TrainOptions held = Cpu(false, "held.safetensors"), streamed = Cpu(true, "streamed.safetensors");
  held.chunks = streamed.chunks = 2;
  streamed.init_out = (dir_ / "init.safetensors").string();
  auto h = Trainer(held).Train(doc);
  ASSERT_TRUE(h.ok()) << h.errors().front().Format();
  auto st = Trainer(streamed).Train(doc);
  ASSERT_TRUE(st.ok()) << st.errors().front().Format();
  EXPECT_FALSE(h->dataset_streamed);
  EXPECT_TRUE(st->dataset_streamed);
  EXPECT_EQ(st->chunks, 2);
  ASSERT_EQ(st->losses.size(), 10u);  // 2 epochs of 21 / 4 steps
  ASSERT_EQ(h->losses.size(), st->losses.size());
  EXPECT_EQ(0, std::memcmp(h->losses.data(), st->losses.data(), h->losses.size() * sizeof(float)));
  EXPECT_EQ(h->epochs.back().test_accuracy, st->epochs.back().test_accuracy);
  const std::string a = ReadAll(dir_ / "held.safetensors");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, ReadAll(dir_ / "streamed.safetensors"));

  // The first step's loss in float64: the mean cross entropy of x·w + b over the epoch's first 4
  // examples, pixels scaled by 1/255, from the initial weights the run wrote.
  auto init = store::LoadSafetensors((dir_ / "init.safetensors").string(), nullptr);
  ASSERT_TRUE(init.ok()) << init.errors().front().Format();
  std::vector<double> w, b;
  for (const store::NamedTensor& t : *init) {
    std::vector<float> v(t.bytes.size() / 4);
    std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
    if (t.name == "w") w.assign(v.begin(), v.end());
    if (t.name == "b") b.assign(v.begin(), v.end());
  }
  ASSERT_EQ(w.size(), 18u);
  ASSERT_EQ(b.size(), 3u);
  const std::vector<int64_t> order = data::EpochOrder(kExamples, 3, 0);
  const size_t header = 4 + 3 * 4, label_header = 4 + 4;
  double loss = 0;
  for (int i = 0; i < 4; ++i) {
    const int64_t ex = order[i];
    double logits[3];
    for (int c = 0; c < 3; ++c) {
      logits[c] = b[c];
      for (int k = 0; k < 6; ++k) {
        const double x = static_cast<uint8_t>(images_[header + ex * 6 + k]) / 255.0;
        logits[c] += x * w[k * 3 + c];
      }
    }
    const double m = std::max({logits[0], logits[1], logits[2]});
    const double lse =
        m + std::log(std::exp(logits[0] - m) + std::exp(logits[1] - m) + std::exp(logits[2] - m));
    loss += lse - logits[static_cast<uint8_t>(labels_[label_header + ex])];
  }
  EXPECT_NEAR(st->losses[0], loss / 4, 1e-5);
}

// A data-parallel rank's plan counts what the rank holds: streamed, its chunks of one batch (one
// chunk of 2 examples, as each of 2 ranks holds) and the evaluation batch; held, both splits whole
// and the evaluation batch. Held over the budget, the rank streams (yellow `streamed-dataset`).
TEST_F(DatasetStreamTest, ARanksPlanCountsWhatTheRankHolds) {
  const std::string doc = Tiny(Source(false));
  auto parsed = pipeline::Compile(doc, {.up_to = pipeline::Rung::kBlock});
  ASSERT_TRUE(parsed.ok()) << parsed.errors().front().Format();
  auto d = DatasetHeld(*parsed->program);
  ASSERT_TRUE(d.ok() && d->has_value());
  const int64_t example = (6 + 1) * 4;            // 6 pixels and a label, as f32
  const int64_t whole = 2 * kExamples * example;  // the test split is the same files here
  EXPECT_EQ((*d)->bytes, whole);
  EXPECT_EQ((*d)->eval_batch, 5);
  auto halves = pipeline::SplitTrainStep(doc, {}, 2);
  ASSERT_TRUE(halves.ok()) << halves.errors().front().Format();
  pipeline::CompileOptions o = halves->gradients;
  o.plan.limits = execplan::HostMemoryLimits("cpu", "test");
  auto held = PlanWithDataset(doc, o, **d, 1, DatasetMode::kAuto);
  ASSERT_TRUE(held.ok()) << held.errors().front().Format();
  EXPECT_FALSE(held->streamed);
  EXPECT_EQ(held->compiled.plan->dataset_bytes, whole + 5 * example);
  auto streamed = PlanWithDataset(doc, o, **d, 1, DatasetMode::kStreamed);
  ASSERT_TRUE(streamed.ok()) << streamed.errors().front().Format();
  EXPECT_TRUE(streamed->streamed);
  EXPECT_EQ(streamed->compiled.plan->dataset_bytes, 1 * 2 * example + 5 * example);
  const execplan::MemoryPlan& m = streamed->compiled.plan->memory;
  EXPECT_EQ(m.by_class[static_cast<int>(execplan::MemClass::kDataset)], 7 * example);

  // A budget the held set is over and the streamed one fits: the rank streams.
  o.plan.budget_bytes = held->compiled.plan->memory.allocated - 1;
  auto tight = PlanWithDataset(doc, o, **d, 1, DatasetMode::kAuto);
  ASSERT_TRUE(tight.ok()) << tight.errors().front().Format();
  EXPECT_TRUE(tight->streamed);
  EXPECT_NE(tight->compiled.plan->verdict, execplan::Verdict::kRed);
  EXPECT_EQ(tight->compiled.plan->findings.front().code, "streamed-dataset");
}

// The step planned as the trainer runs it in one process (PlanStep): on the CPU reference each
// batch is gathered on the host; on a GPU it is gathered on the device from the train split held
// there (the tables among the device's inputs, the host holding the larger of the split's copy and
// a submission's row indices), unless --host-batches, a streamed set or a host too small for the
// split's copy says otherwise, each saying why.
TEST_F(DatasetStreamTest, TheStepIsPlannedAsTheTrainerRunsIt) {
  const std::string doc = Tiny(Source(false));
  auto parsed = pipeline::Compile(doc, {.up_to = pipeline::Rung::kBlock});
  ASSERT_TRUE(parsed.ok()) << parsed.errors().front().Format();
  auto d = DatasetHeld(*parsed->program);
  ASSERT_TRUE(d.ok() && d->has_value());
  const int64_t example = 7 * 4;  // 6 pixels and a label, as f32

  pipeline::CompileOptions cpu_options;
  cpu_options.plan.limits = execplan::HostMemoryLimits("cpu", "test");
  StepPlanChoices choices{.batch = 4, .steps_per_run = 3};
  auto cpu = PlanStep(doc, cpu_options, **d, choices);
  ASSERT_TRUE(cpu.ok()) << cpu.errors().front().Format();
  EXPECT_FALSE(cpu->batches_on_device);
  EXPECT_EQ(cpu->host_batches_reason, "");
  EXPECT_EQ(cpu->options.plan.staged_steps, 6);  // two runs in flight
  EXPECT_EQ(cpu->options.plan.watched, std::vector<std::string>{"loss"});
  EXPECT_EQ(cpu->options.plan.caller_host_bytes, 3 * 4 * example);
  EXPECT_EQ(cpu->options.lower.dataset_examples_on_device, 0);

  // A GPU with its own memory, as large as a test needs.
  pipeline::CompileOptions gpu_options;
  execplan::DeviceLimits& gpu = gpu_options.plan.limits;
  gpu.backend = "webgpu";
  gpu.device = "a test GPU";
  gpu.buffers_in_host_memory = false;
  gpu.device_memory_bytes = int64_t{1} << 30;
  gpu.host_memory_bytes = int64_t{1} << 30;
  gpu.max_storage_buffers_per_kernel = 8;
  choices.gpu = true;
  auto device = PlanStep(doc, gpu_options, **d, choices);
  ASSERT_TRUE(device.ok()) << device.errors().front().Format();
  EXPECT_TRUE(device->batches_on_device);
  EXPECT_EQ(device->host_batches_reason, "");
  EXPECT_EQ(device->options.lower.dataset_examples_on_device, kExamples);
  // The split's copy (21 examples) outweighs 3 steps' row indices (3 x 4 i32).
  EXPECT_EQ(device->options.plan.caller_host_bytes, kExamples * example);
  EXPECT_EQ(device->options.plan.caller_host_what, "the train split's copy handed to the device");
  const execplan::Plan& on_device = *device->compiled.plan;
  EXPECT_NE(execplan::Print(on_device).find("the train split also copied to the device once, " +
                                            execplan::FormatBytes(kExamples * example)),
            std::string::npos)
      << execplan::Print(on_device);

  choices.host_batches = true;
  auto asked = PlanStep(doc, gpu_options, **d, choices);
  ASSERT_TRUE(asked.ok());
  EXPECT_FALSE(asked->batches_on_device);
  EXPECT_EQ(asked->host_batches_reason, "--host-batches");
  EXPECT_EQ(asked->options.lower.dataset_examples_on_device, 0);
  EXPECT_EQ(asked->options.plan.caller_host_bytes, 3 * 4 * example);
  EXPECT_EQ(execplan::Print(*asked->compiled.plan).find("copied to the device"), std::string::npos);

  choices.host_batches = false;
  choices.stream_dataset = true;
  auto streamed = PlanStep(doc, gpu_options, **d, choices);
  ASSERT_TRUE(streamed.ok());
  EXPECT_TRUE(streamed->streamed);
  EXPECT_FALSE(streamed->batches_on_device);
  EXPECT_EQ(streamed->host_batches_reason, "the dataset is streamed from its files");
  EXPECT_EQ(streamed->options.plan.caller_host_bytes, 0);  // the streamed set's batches

  // A host with the memory the host-fed step needs and not that of the split's copy handed to
  // the device (at one step a run, where the copy, 588 B, outweighs what feeding batches holds):
  // the batches are then fed from the host, by the host-fed plan.
  choices.stream_dataset = false;
  choices.steps_per_run = 1;
  choices.host_batches = true;
  auto fed = PlanStep(doc, gpu_options, **d, choices);
  ASSERT_TRUE(fed.ok());
  choices.host_batches = false;
  gpu.host_memory_bytes = fed->compiled.plan->memory.host_staging;
  auto tight = PlanStep(doc, gpu_options, **d, choices);
  ASSERT_TRUE(tight.ok());
  EXPECT_NE(tight->compiled.plan->verdict, execplan::Verdict::kRed);
  EXPECT_EQ(tight->compiled.plan->memory.host_staging, fed->compiled.plan->memory.host_staging);
  EXPECT_FALSE(tight->batches_on_device);
  EXPECT_EQ(tight->host_batches_reason.rfind(
                "the train split held on the device does not fit: memory-over-host: ", 0),
            0u)
      << tight->host_batches_reason;
}

// A rank whose whole step (both halves, its chunk gradients, the gathered partials) is over the
// budget with the set held streams it, though its gradient half alone fits held; one byte more
// budget and it holds the set. Either way the same losses, bit for bit.
TEST_F(DatasetStreamTest, ARankStreamsWhenItsWholeStepIsOverWithTheSetHeld) {
  const std::string doc = Tiny(Source(false));
  auto parsed = pipeline::Compile(doc, {.up_to = pipeline::Rung::kBlock});
  ASSERT_TRUE(parsed.ok()) << parsed.errors().front().Format();
  auto d = DatasetHeld(*parsed->program);
  ASSERT_TRUE(d.ok() && d->has_value());
  auto halves = pipeline::SplitTrainStep(doc, {}, 2);
  ASSERT_TRUE(halves.ok()) << halves.errors().front().Format();
  const execplan::DeviceLimits limits = execplan::HostMemoryLimits("cpu", "cpu");
  pipeline::CompileOptions g = halves->gradients, u = halves->update;
  g.plan.limits = u.plan.limits = limits;
  g.plan.dataset = (*d)->Held();
  g.plan.caller_host_bytes = (*d)->BatchBytes(4);  // the rank's 2 chunks of 2, gathered
  auto gc = pipeline::Compile(doc, g);
  auto uc = pipeline::Compile(doc, u);
  ASSERT_TRUE(gc.ok() && uc.ok());
  auto w = workplan::FromExecPlans(std::make_shared<execplan::Plan>(*gc->plan),
                                   std::make_shared<execplan::Plan>(*uc->plan),
                                   workplan::DeviceSet::Uniform(1, limits), 4, {.chunks = 2});
  ASSERT_TRUE(w.ok()) << w.errors().front().Format();
  const int64_t whole_step = w->memory[0].total;
  ASSERT_GT(whole_step - 1, gc->plan->memory.allocated);  // the gradient half alone fits

  TrainOptions base = Cpu(false, "held.safetensors");
  base.chunks = 2;
  auto reference = Trainer(base).Train(doc);
  ASSERT_TRUE(reference.ok()) << reference.errors().front().Format();
  for (int64_t budget : {whole_step - 1, whole_step}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    TrainOptions o = Cpu(false, "budgeted.safetensors");
    o.chunks = 2;
    o.compile.plan.budget_bytes = budget;
    std::vector<Diagnostic> notes;
    TrainEvents events;
    events.note = [&](const Diagnostic& n) { notes.push_back(n); };
    auto r = Trainer(o, events).Train(doc);
    ASSERT_TRUE(r.ok()) << r.errors().front().Format();
    const bool over = budget < whole_step;
    EXPECT_EQ(r->dataset_streamed, over);
    const bool warned = std::any_of(notes.begin(), notes.end(), [](const Diagnostic& n) {
      return n.code == "streamed-dataset" &&
             n.message.find("held whole a rank's step would need") != std::string::npos;
    });
    EXPECT_EQ(warned, over) << "whole step " << whole_step << ": "
                            << (notes.empty() ? "" : notes.front().Format());
    ASSERT_EQ(r->losses.size(), reference->losses.size());
    EXPECT_EQ(0, std::memcmp(r->losses.data(), reference->losses.data(),
                             r->losses.size() * sizeof(float)));
  }
}

// Rows read at their offsets are the values written, for a type other than u8 too (f32 taken as
// it is, not scaled); a gzipped file is refused by name.
TEST_F(DatasetStreamTest, ReadsRowsAtOffsetsAsWritten) {
  const std::vector<float> values = {0.1f, -2.5f, 3e38f, -0.0f, 7.25f, 1e-30f};
  std::string body;
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    PutBe32(body, bits);
  }
  WritePlain(dir_ / "f32.idx", Idx(0x0d, {3, 2}, body));
  auto rows = data::IdxRows::Open((dir_ / "f32.idx").string());
  ASSERT_TRUE(rows.ok()) << rows.errors().front().Format();
  EXPECT_EQ(rows->rows(), 3);
  EXPECT_EQ(rows->row_elements(), 2);
  std::vector<float> got(4);
  ASSERT_TRUE(rows->Read(1, 2, got.data()).ok());
  EXPECT_EQ(0, std::memcmp(got.data(), values.data() + 2, 4 * sizeof(float)));
  auto gz = data::IdxRows::Open((dir_ / "images.gz").string());
  ASSERT_FALSE(gz.ok());
  EXPECT_EQ(gz.errors().front().code, "idx-gzipped");
}

// The Fashion-MNIST workflow's plan: green with the dataset class under the default budget;
// yellow `streamed-dataset` under a budget between the model with one submission's batches and
// the model with the whole set (exit 0); red below, naming the largest batch that fits, which
// then plans green or yellow.
TEST(DatasetPlanTest, FashionMnistPlanTurnsYellowThenRed) {
  if (!data::FindFashionMnistDir()) GTEST_SKIP() << "Fashion-MNIST is not installed";
  const std::string doc = std::string(SCELLIS_SOURCE_DIR) + "/examples/fashion_mlp.json";
  auto plan = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"plan", doc, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    testing::CliRun r = testing::RunScellis(args);
    EXPECT_TRUE(r.exited);
    return std::make_pair(r.exit_code, Json::parse(r.out, nullptr, false));
  };
  auto [code, green] = plan({});
  ASSERT_EQ(code, 0);
  ASSERT_FALSE(green.is_discarded());
  EXPECT_EQ(green["verdict"], "green");
  const int64_t whole = int64_t{4} * (70000 * 784 + 70000);  // both splits, f32
  const int64_t eval = int64_t{1000} * 785 * 4;              // the evaluation batch gathered
  EXPECT_EQ(green["memory"]["by_class"]["dataset"], whole + eval);
  EXPECT_EQ(green["dataset"]["eval_batch"], 1000);
  EXPECT_EQ(green["dataset"]["streamed"], false);
  const int64_t model = green["memory"]["allocated"].get<int64_t>() - whole - eval;
  const int64_t submission = int64_t{8} * 64 * 785 * 4;  // 8 batches of 64 examples

  auto [yellow_code, yellow] = plan({"--budget=" + std::to_string(model + whole / 2)});
  EXPECT_EQ(yellow_code, 0);
  EXPECT_EQ(yellow["verdict"], "yellow");
  EXPECT_EQ(yellow["findings"][0]["code"], "streamed-dataset");
  EXPECT_EQ(yellow["dataset"]["streamed"], true);
  EXPECT_EQ(yellow["memory"]["by_class"]["dataset"], submission + eval);

  const std::string tight = "--budget=" + std::to_string(model + eval + submission / 2);
  auto [red_code, red] = plan({tight});
  EXPECT_EQ(red_code, 2);
  EXPECT_EQ(red["verdict"], "red");
  ASSERT_TRUE(red.contains("batch_fit"));
  const int64_t largest = red["batch_fit"]["largest"].get<int64_t>();
  EXPECT_GT(largest, 0);
  EXPECT_LT(largest, 64);
  auto [fit_code, fit] = plan({tight, "--bind", "B=" + std::to_string(largest)});
  EXPECT_EQ(fit_code, 0);
  EXPECT_NE(fit["verdict"], "red");
  EXPECT_EQ(fit["dataset"]["streamed"], true);
  auto [over_code, over] = plan({tight, "--bind", "B=" + std::to_string(largest + 1)});
  EXPECT_EQ(over_code, 2);
}

}  // namespace
}  // namespace scellis::train
