// Run records and replay against a store of the test's own: the record round trip, replays that
// agree (the CPU reference, SwiftShader), replays that disagree or are refused, tampering, and
// the store's verify and gc.
#include "record/run_record.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/sha256.h"
#include "record/replay.h"

namespace scellis::record {
namespace {

namespace fs = std::filesystem;

// relu of an inline [1, -1, 2.5] and of a fed x, times 2: hand-worked outputs below.
constexpr const char* kDocument = R"({"format": "scellis.workflow/1", "determinism": "prod",
  "nodes": [{"id": "c", "type": "input", "params": {"shape": [3], "data": [1, -1, 2.5]}},
            {"id": "x", "type": "input", "params": {"shape": [2]}},
            {"id": "r", "type": "relu"},
            {"id": "two", "type": "input", "params": {"shape": [2], "data": [2, 2]}},
            {"id": "m", "type": "mul"}],
  "wires": [{"from": "c", "to": "r.a"}, {"from": "x", "to": "m.a"}, {"from": "two", "to": "m.b"}],
  "outputs": [{"name": "relu", "from": "r"}, {"name": "twice", "from": "m"}]})";

std::string Why(const Status& s) {
  std::string why;
  for (const Diagnostic& d : s.errors()) why += d.Format() + "\n";
  return why;
}

std::string BytesOf(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

class RunRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("scellis-record-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    store_ = std::make_unique<store::Store>(store::Store::Open(root_.string()).value());
  }
  void TearDown() override { fs::remove_all(root_); }

  api::RunOptions Options(const std::string& backend) {
    api::RunOptions o;
    o.select = {.requested = backend, .allow_software_adapter = true, .cpu_threads = 1};
    o.store_root = root_.string();
    const float x[] = {-3, 0.5f};
    o.feeds["x"] = runtime::HostTensor::FromFloats(MakeType({2}), x);
    return o;
  }
  // Runs the document and records the run; "" with a skip when the backend is not here.
  std::string RunAndRecord(const std::string& backend, api::RunReport* out = nullptr) {
    api::RunOptions o = Options(backend);
    auto report = api::Run(kDocument, o);
    if (!report.ok()) {
      EXPECT_EQ(report.errors().front().code, "backend-unavailable") << Why(report.status());
      return "";
    }
    if (out) *out = report.value();
    auto id = RecordRun(*store_, kDocument, o, report.value());
    EXPECT_TRUE(id.ok()) << Why(id.status());
    return id.ok() ? id.value() : "";
  }
  fs::path ObjectFile(const std::string& id) const {
    std::string hex = id.substr(7);
    return root_ / "objects" / hex.substr(0, 2) / (hex + ".json");
  }
  fs::path BlobFile(const std::string& id) const {
    std::string hex = id.substr(7);
    return root_ / "blobs" / hex.substr(0, 2) / hex;
  }
  // Stores `record` changed by `edit` as a record of its own (as another machine might have
  // written it) and returns its id.
  std::string Variant(const std::string& id, const std::function<void(Json&)>& edit) {
    Json j = store_->Get(id).value();
    edit(j);
    std::string v = store_->Put(j).value();
    EXPECT_TRUE(store_->Index(kRecordIndex, "", "2000-01-01", v).ok());
    return v;
  }

  fs::path root_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(RunRecords, RecordHoldsWhatReproducesTheRun) {
  const std::string id = RunAndRecord("cpu");
  ASSERT_FALSE(id.empty());
  auto r = LoadRecord(*store_, id);
  ASSERT_TRUE(r.ok()) << Why(r.status());
  const Json& j = r.value();
  EXPECT_EQ(j["command"], "run");
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["device_profile"], "cpu;reference");
  EXPECT_EQ(j["tier"], "prod");
  EXPECT_EQ(j["settings"]["steps"], 1);
  EXPECT_EQ(j["settings"]["backend"], "cpu");
  EXPECT_EQ(j["plan_hash"].get<std::string>().size(), 64u);
  const auto tol = policy::ParseTolerance(j["tolerance"]["class"].get<std::string>());
  ASSERT_TRUE(tol);
  const policy::Thresholds want = policy::ResolveThresholds(*tol, policy::Tier::kProd);
  EXPECT_EQ(j["tolerance"]["atol"].get<double>(), want.atol);
  EXPECT_EQ(j["tolerance"]["rtol"].get<double>(), want.rtol);
  // The document is kept, and it is the one whose content id the record names.
  auto doc = store_->Get(j["document_id"].get<std::string>());
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc.value(), Json::parse(kDocument));
  EXPECT_EQ(j["content_id"], j["document_id"]);
  // Digests, worked out independently: SHA-256 over "f32;<shape>;" and the f32 bytes.
  const std::string relu = BytesOf({1, 0, 2.5f}), twice = BytesOf({-6, 1});
  EXPECT_EQ(j["outputs"]["relu"]["sha256"], Sha256Hex("f32;3;" + relu));
  EXPECT_EQ(j["outputs"]["twice"]["sha256"], Sha256Hex("f32;2;" + twice));
  EXPECT_EQ(j["inputs"]["x"]["sha256"], Sha256Hex("f32;2;" + BytesOf({-3, 0.5f})));
  EXPECT_EQ(store_->GetBlob(j["outputs"]["relu"]["blob"].get<std::string>()).value(), relu);
  // Listed, newest first.
  const std::string later = RunAndRecord("cpu");
  std::vector<RunSummary> runs = ListRuns(*store_, 0);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, later);
  EXPECT_EQ(runs[1].id, id);
  EXPECT_EQ(ListRuns(*store_, 1).size(), 1u);
}

TEST_F(RunRecords, ReplayOnTheReferenceIsBitExact) {
  const std::string id = RunAndRecord("cpu");
  ASSERT_FALSE(id.empty());
  auto r = Replay(id, {.store_root = root_.string(), .cpu_threads = 3});
  ASSERT_TRUE(r.ok()) << Why(r.status());
  EXPECT_TRUE(r->agree);
  EXPECT_EQ(r->guarantee, "bit-exact");
  ASSERT_EQ(r->outputs.size(), 2u);
  for (const OutputComparison& c : r->outputs) EXPECT_TRUE(c.digest_equal) << c.name;
}

TEST_F(RunRecords, ReplayOnSwiftShaderAgreesWithinTheRecordedTolerance) {
  api::RunReport report;
  const std::string id = RunAndRecord("webgpu", &report);
  if (id.empty()) GTEST_SKIP() << "no WebGPU adapter here";
  auto r = Replay(id, {.store_root = root_.string(), .cpu_threads = 0});
  ASSERT_TRUE(r.ok()) << Why(r.status());
  EXPECT_TRUE(r->agree);
  EXPECT_EQ(r->guarantee, "tolerance");
  EXPECT_EQ(r->profile, report.profile);
  // A record whose value is off by less than its tolerance still agrees, by value; one off by
  // more names the element.
  auto nudged = [&](float delta) {
    return Variant(id, [&](Json& j) {
      runtime::HostTensor t = KeptTensor(*store_, j["outputs"]["relu"]).value();
      t.SetValue(2, t.ValueAt(2) + delta);
      j["outputs"]["relu"] = TensorDigest(*store_, t).value();
    });
  };
  auto close = Replay(nudged(1e-6f), {.store_root = root_.string(), .cpu_threads = 0});
  ASSERT_TRUE(close.ok()) << Why(close.status());
  EXPECT_TRUE(close->agree);
  EXPECT_FALSE(close->outputs[0].digest_equal);
  EXPECT_TRUE(close->outputs[0].compared_values);
  auto far = Replay(nudged(0.5f), {.store_root = root_.string(), .cpu_threads = 0});
  ASSERT_TRUE(far.ok()) << Why(far.status());
  EXPECT_FALSE(far->agree);
  ASSERT_NE(far->first_disagreement(), nullptr);
  EXPECT_EQ(far->first_disagreement()->name, "relu");
  EXPECT_EQ(far->first_disagreement()->first_difference, 2);
  EXPECT_EQ(far->first_disagreement()->replayed, 2.5);
  EXPECT_EQ(far->first_disagreement()->recorded, 3.0);
}

TEST_F(RunRecords, ReplayThatDiffersNamesTheOutputAndElement) {
  const std::string id = RunAndRecord("cpu");
  ASSERT_FALSE(id.empty());
  // A record that says twice[1] was 1.0000001: on the reference, one ulp is a disagreement.
  const std::string off = Variant(id, [&](Json& j) {
    runtime::HostTensor t = KeptTensor(*store_, j["outputs"]["twice"]).value();
    t.view<float>()[1] = std::nextafter(1.0f, 2.0f);
    j["outputs"]["twice"] = TensorDigest(*store_, t).value();
  });
  auto r = Replay(off, {.store_root = root_.string(), .cpu_threads = 0});
  ASSERT_TRUE(r.ok()) << Why(r.status());
  EXPECT_FALSE(r->agree);
  const OutputComparison* bad = r->first_disagreement();
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->name, "twice");
  EXPECT_EQ(bad->first_difference, 1);
  EXPECT_EQ(bad->replayed, 1.0);
}

TEST_F(RunRecords, ReplayThatCannotHonourItsGuaranteeIsRefused) {
  const std::string id = RunAndRecord("cpu");
  ASSERT_FALSE(id.empty());
  auto code = [&](const std::string& v) {
    auto r = Replay(v, {.store_root = root_.string(), .cpu_threads = 0});
    return r.ok() ? std::string("ran") : r.errors().front().code;
  };
  // Bit-exact on another device profile: refused, never compared within a tolerance instead.
  EXPECT_EQ(code(Variant(id, [](Json& j) { j["device_profile"] = "cpu;another-reference"; })),
            "replay-profile-mismatch");
  // A debug record of a GPU run elsewhere: refused whether or not this machine has a GPU.
  std::string gpu = code(Variant(id, [](Json& j) {
    j["backend"] = "webgpu";
    j["tier"] = "debug";
    j["device_profile"] = "webgpu;backend=vulkan;device=a GPU that is not here";
  }));
  EXPECT_TRUE(gpu == "replay-profile-mismatch" || gpu == "replay-backend-unavailable") << gpu;
  EXPECT_EQ(code(Variant(id, [](Json& j) { j["backend"] = "quantum"; })),
            "replay-backend-unavailable");
  // A tolerance needs the recorded values: a record that kept only a digest cannot be judged.
  EXPECT_EQ(code(Variant(id, [](Json& j) {
              j["backend"] = "null";
              j["device_profile"] = "null";
              j["outputs"]["relu"]["blob"] = nullptr;
            })),
            "record-tensor-not-kept");
  EXPECT_EQ(code(store_->Put({{"kind", "something-else"}}).value()), "not-a-run-record");
}

TEST_F(RunRecords, TamperedRecordBlobOrReceiptIsRefusedByName) {
  const std::string id = RunAndRecord("cpu");
  ASSERT_FALSE(id.empty());
  const Json record = store_->Get(id).value();
  auto code = [&](const std::string& v) {
    auto r = Replay(v, {.store_root = root_.string(), .cpu_threads = 0});
    return r.ok() ? std::string("ran") : r.errors().front().code;
  };
  // A recorded output changed in place: the blob no longer matches its name.
  const std::string with_receipt = Variant(id, [&](Json& j) {
    j["receipts"] = {store_->Put({{"kind", "conformance-receipt"}, {"op", "relu"}}).value()};
    j["outputs"]["twice"]["blob"] = store_->PutBlob("12345678").value();
    j["outputs"]["twice"]["sha256"] = Sha256Hex("f32;2;" + std::string("12345678"));
  });
  EXPECT_EQ(code(with_receipt), "ran");  // 12345678 is not what the reference computes...
  auto differs = Replay(with_receipt, {.store_root = root_.string(), .cpu_threads = 0});
  ASSERT_TRUE(differs.ok());
  EXPECT_FALSE(differs->agree);  // ...so it disagrees, but it was read honestly.
  std::ofstream(BlobFile(record["outputs"]["relu"]["blob"].get<std::string>()), std::ios::binary)
      << BytesOf({1, 0, 2.25f});
  {
    // Bit-exact compares digests first: a tampered blob of a matching run goes unread. A
    // tolerance replay must read it, and refuses.
    const std::string tol = Variant(id, [](Json& j) {
      j["backend"] = "null";
      j["device_profile"] = "null";
    });
    EXPECT_EQ(code(tol), "store-object-corrupt");
  }
  // The receipt a record relied on, edited: refused.
  const std::string receipt = store_->Get(with_receipt).value()["receipts"][0];
  std::ofstream(ObjectFile(receipt)) << R"({"kind":"conformance-receipt","op":"mul"})";
  EXPECT_EQ(code(with_receipt), "store-object-corrupt");
  // The record itself, edited: refused.
  std::ofstream(ObjectFile(id)) << R"({"kind":"scellis.run-record/2","backend":"cpu"})";
  EXPECT_EQ(code(id), "store-object-corrupt");
  // Verify finds all three; the listing leaves out the corrupt record and says so.
  std::vector<Diagnostic> problems = store_->Verify();
  EXPECT_EQ(problems.size(), 3u);
  for (const Diagnostic& d : problems) EXPECT_EQ(d.code, "store-object-corrupt");
  std::vector<Diagnostic> listing;
  for (const RunSummary& s : ListRuns(*store_, 0, &listing)) EXPECT_NE(s.id, id);
  EXPECT_EQ(listing.size(), 1u);
}

TEST_F(RunRecords, VerifyPassesASoundStoreAndNamesADanglingEntry) {
  EXPECT_TRUE(store_->Verify().empty());  // no store yet
  const std::string id = RunAndRecord("cpu");
  ASSERT_FALSE(id.empty());
  EXPECT_TRUE(store_->Verify().empty());
  fs::remove(ObjectFile(id));
  std::vector<Diagnostic> problems = store_->Verify();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].code, "store-index-dangling");
}

TEST_F(RunRecords, GcRemovesOrphansAndKeepsWhatRecordsReach) {
  const std::string id = RunAndRecord("cpu");
  ASSERT_FALSE(id.empty());
  const Json record = store_->Get(id).value();
  const std::string orphan_blob = store_->PutBlob("nobody names me").value();
  const std::string orphan_object = store_->Put({{"note", "nobody names me either"}}).value();
  // A record a front end stored without indexing it, and the document it names.
  const std::string studio_doc = store_->Put({{"format", "scellis.workflow/1"}}).value();
  const std::string studio_record =
      store_->Put({{"kind", "scellis.run-record/1"}, {"document_id", studio_doc}}).value();

  auto dry = store_->Gc(IsRecordObject, /*dry_run=*/true);
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(dry->removed.size(), 2u);
  EXPECT_TRUE(fs::exists(BlobFile(orphan_blob)));

  auto gc = store_->Gc(IsRecordObject, /*dry_run=*/false);
  ASSERT_TRUE(gc.ok());
  std::vector<std::string> removed = gc->removed;
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> want = {orphan_blob, orphan_object};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(removed, want);
  EXPECT_FALSE(fs::exists(BlobFile(orphan_blob)));
  EXPECT_FALSE(store_->Contains(orphan_object));
  // Kept: the indexed record, its document, its kept tensors; the unindexed record and its
  // document.
  EXPECT_TRUE(store_->Contains(id));
  EXPECT_TRUE(store_->Contains(record["document_id"].get<std::string>()));
  for (const char* out : {"relu", "twice"})
    EXPECT_TRUE(store_->GetBlob(record["outputs"][out]["blob"].get<std::string>()).ok());
  EXPECT_TRUE(store_->GetBlob(record["inputs"]["x"]["blob"].get<std::string>()).ok());
  EXPECT_TRUE(store_->Contains(studio_record));
  EXPECT_TRUE(store_->Contains(studio_doc));
  auto after = Replay(id, {.store_root = root_.string(), .cpu_threads = 0});
  ASSERT_TRUE(after.ok()) << Why(after.status());
  EXPECT_TRUE(after->agree);
  // A record deleted by hand leaves a dangling entry; gc removes it, and what only it named.
  fs::remove(ObjectFile(id));
  auto again = store_->Gc(IsRecordObject, false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->dangling_entries, 1);
  EXPECT_FALSE(store_->Contains(record["document_id"].get<std::string>()));
  EXPECT_TRUE(store_->Verify().empty());
}

TEST_F(RunRecords, TrainingRecordReplaysBitExactlyOnTheReference) {
  std::ifstream in(fs::path(SCELLIS_SOURCE_DIR) / "examples" / "fashion_mlp.json");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  train::TrainOptions o;
  o.select.requested = "cpu";
  o.epochs = 1;
  o.max_steps = 4;
  o.steps_per_run = 3;
  train::Trainer trainer(o);
  auto result = trainer.Train(doc);
  ASSERT_TRUE(result.ok()) << Why(result.status());
  auto id = RecordTraining(*store_, doc, o, result.value());
  ASSERT_TRUE(id.ok()) << Why(id.status());
  const Json record = store_->Get(id.value()).value();
  EXPECT_EQ(record["command"], "train");
  EXPECT_EQ(record["settings"]["max_steps"], 4);
  EXPECT_EQ(record["settings"]["steps_per_run"], 3);
  // The losses digest is that of the losses the trainer reported, as f32 bytes.
  std::vector<float> losses = result->losses;
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_EQ(record["outputs"]["losses"]["sha256"], Sha256Hex("f32;4;" + BytesOf(losses)));

  auto r = Replay(id.value(), {.store_root = root_.string(), .cpu_threads = 0});
  ASSERT_TRUE(r.ok()) << Why(r.status());
  EXPECT_TRUE(r->agree);
  EXPECT_EQ(r->guarantee, "bit-exact");
  // A run that resumed from a checkpoint cannot be replayed from the record alone.
  auto resumed = Replay(Variant(id.value(), [](Json& j) { j["settings"]["resumed"] = true; }),
                        {.store_root = root_.string(), .cpu_threads = 0});
  ASSERT_FALSE(resumed.ok());
  EXPECT_EQ(resumed.errors().front().code, "replay-needs-checkpoint");
}

}  // namespace
}  // namespace scellis::record
