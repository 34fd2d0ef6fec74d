// The Studio's endpoints over the store (store_endpoints.h), called without a socket: documents
// stored by content id, and run records made by the Studio or the command line, opened and
// replayed by either, with tampered, disagreeing and unreplayable records refused by name.
#include "store_endpoints.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "handler_test.h"
#include "record/run_record.h"
#include "support/cli.h"

namespace scellis::studio {
namespace {

TEST_F(StudioHandler, DocumentsAreStoredByContentIdAfterValidation) {
  const Json doc = Example("center_columns");
  Response put = Post("/api/documents", {{"document", doc}});
  ASSERT_EQ(put.status, 200) << put.body;
  const std::string id = Body(put)["content_id"];
  EXPECT_EQ(id, ContentId(doc));
  EXPECT_EQ(Body(Post("/api/documents", {{"document", doc}}))["content_id"], id) << "idempotent";
  Response get = Get("/api/documents/" + id);
  ASSERT_EQ(get.status, 200);
  EXPECT_EQ(Body(get)["document"], doc);
  EXPECT_EQ(Body(get)["content_id"], id);
  // A document is no run record.
  ExpectError(Get("/api/runs/" + id), 404, "not-a-run-record");
  ExpectError(Get("/api/documents/sha256:" + std::string(64, '0')), 404, "store-object-missing");
}

// ---------------------------------------------------------------- run records (src/record)

class StudioRecords : public StudioHandler {
 protected:
  void SetUp() override {
    StudioHandler::SetUp();
    // The command line's store is the Studio's: a record made by one opens in the other.
    setenv("SCELLIS_STORE", store_.c_str(), 1);
    unsetenv("SCELLIS_NO_RECORD");
  }
  void TearDown() override {
    unsetenv("SCELLIS_STORE");
    StudioHandler::TearDown();
  }
  fs::path ObjectFile(const std::string& id) const {
    const std::string hex = id.substr(7);
    return store_ / "objects" / hex.substr(0, 2) / (hex + ".json");
  }
  std::string StudioRun(const Json& body) {
    std::vector<Json> lines = Lines(Post("/api/run", body));
    EXPECT_FALSE(lines.empty());
    if (lines.empty() || lines.back()["event"] != "result") return "";
    return lines.back()["run_id"].is_string() ? lines.back()["run_id"].get<std::string>() : "";
  }
  Response Replay(const std::string& id) {
    return Post("/api/runs/" + id + "/replay", Json::object());
  }
  // The record `id` made again with one change, stored as a record of its own.
  std::string Edited(const std::string& id, const std::function<void(Json&)>& edit) {
    auto store = store::Store::Open(store_.string()).value();
    Json j = store.Get(id).value();
    edit(j);
    return store.Put(j).value();
  }
};

TEST_F(StudioRecords, AStudioRunReplaysOnTheCommandLineAndOnThePage) {
  const std::string id =
      StudioRun({{"document", CenterColumnsConstantWeights()}, {"tier", "prod"}});
  ASSERT_FALSE(id.empty());
  testing::CliRun cli = testing::RunScellis({"replay", id, "--json"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const Json verdict = Json::parse(cli.out);
  EXPECT_TRUE(verdict["agree"]);
  EXPECT_EQ(verdict["guarantee"], "bit-exact");
  // `scellis runs` lists it.
  testing::CliRun runs = testing::RunScellis({"runs", "--json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_EQ(Json::parse(runs.out)["runs"][0]["run_id"], id);

  Response page = Replay(id);
  ASSERT_EQ(page.status, 200) << page.body;
  const Json v = Body(page);
  EXPECT_TRUE(v["agree"]);
  EXPECT_EQ(v["guarantee"], "bit-exact");
  EXPECT_TRUE(v["disagreement"].is_null());
  ASSERT_EQ(v["outputs"].size(), 2u);
  for (const Json& o : v["outputs"]) EXPECT_TRUE(o["digest_equal"]) << o.dump();
}

TEST_F(StudioRecords, ACommandLineRunOpensAndReplaysInTheStudio) {
  const std::string file =
      (fs::path(SCELLIS_SOURCE_DIR) / "examples" / "seed_mul_relu.json").string();
  testing::CliRun run =
      testing::RunScellis({"run", file, "--tier=prod", "--backend=cpu", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const Json report = Json::parse(run.out);
  const std::string id = report["run_id"];
  Response rec = Get("/api/runs/" + id);
  ASSERT_EQ(rec.status, 200) << rec.body;
  const Json record = Body(rec);
  EXPECT_EQ(record["command"], "run");
  EXPECT_EQ(record["backend"], "cpu");
  ASSERT_TRUE(record["values"].is_object());
  for (const auto& [name, out] : report["outputs"].items())
    EXPECT_EQ(record["values"][name]["data"], out["data"]) << name;
  EXPECT_EQ(Get("/r/" + id).status, 200);
  Response doc = Get("/api/documents/" + record["document_id"].get<std::string>());
  ASSERT_EQ(doc.status, 200) << doc.body;
  EXPECT_EQ(Body(doc)["document"], Json::parse(testing::ReadWholeFile(file)));

  Response page = Replay(id);
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_TRUE(Body(page)["agree"]);
}

TEST_F(StudioRecords, AReplayThatDisagreesNamesTheElement) {
  const std::string id =
      StudioRun({{"document", CenterColumnsConstantWeights()}, {"tier", "prod"}});
  ASSERT_FALSE(id.empty());
  // The same record saying y[3] was 5 where the hand-worked value (and the reference) is -3.
  const std::string other = Edited(id, [&](Json& j) {
    auto store = store::Store::Open(store_.string()).value();
    runtime::HostTensor t = record::KeptTensor(store, j["outputs"]["y"]).value();
    ASSERT_EQ(t.ValueAt(3), -3.0);
    t.SetValue(3, 5);
    j["outputs"]["y"] = record::TensorDigest(store, t).value();
  });
  Response page = Replay(other);
  ASSERT_EQ(page.status, 200) << page.body;
  const Json v = Body(page);
  EXPECT_FALSE(v["agree"]);
  EXPECT_EQ(v["disagreement"]["code"], "replay-disagrees");
  EXPECT_NE(v["disagreement"]["message"].get<std::string>().find("output \"y\""),
            std::string::npos);
  for (const Json& o : v["outputs"]) {
    if (o["name"] != "y") continue;
    EXPECT_FALSE(o["ok"]);
    EXPECT_EQ(o["first_difference"]["element"], 3);
    EXPECT_EQ(o["first_difference"]["replayed"], -3.0);
    EXPECT_EQ(o["first_difference"]["recorded"], 5.0);
  }
}

TEST_F(StudioRecords, ReplaysThatCannotKeepTheGuaranteeAreRefusedByName) {
  const std::string id =
      StudioRun({{"document", CenterColumnsConstantWeights()}, {"tier", "debug"}});
  ASSERT_FALSE(id.empty());
  // Bit-exactness promised on another device profile: refused, never downgraded.
  const std::string elsewhere = Edited(id, [](Json& j) { j["device_profile"] = "another-device"; });
  ExpectError(Replay(elsewhere), 422, "replay-profile-mismatch");
  // A backend this machine does not have.
  const std::string absent = Edited(id, [](Json& j) { j["backend"] = "tpu"; });
  ExpectError(Replay(absent), 422, "replay-backend-unavailable");
  // Not a record at all, or no such object.
  ExpectError(Replay(record::LoadRecord(engine_->store(), id).value()["document_id"]), 404,
              "not-a-run-record");
  ExpectError(Replay("sha256:" + std::string(64, '0')), 404, "store-object-missing");
  ExpectError(Replay("sha256:nothex"), 400, "bad-id");
  EXPECT_EQ(Get("/api/runs/" + id + "/replay").status, 405);
}

TEST_F(StudioRecords, ATamperedRecordOrKeptTensorIsRefused) {
  const std::string id =
      StudioRun({{"document", CenterColumnsConstantWeights()}, {"tier", "prod"}});
  ASSERT_FALSE(id.empty());
  const Json record = Body(Get("/api/runs/" + id));
  // One kept output's blob changed: the record is refused as a whole.
  const std::string blob = record["outputs"]["y"]["blob"];
  const fs::path blob_file = store_ / "blobs" / blob.substr(7, 2) / blob.substr(7);
  ASSERT_TRUE(fs::exists(blob_file));
  std::string bytes = testing::ReadWholeFile(blob_file);
  bytes[0] = static_cast<char>(bytes[0] ^ 1);
  Write(blob_file, bytes);
  ExpectError(Get("/api/runs/" + id), 422, "store-object-corrupt");

  // One character of the record itself changed: "prod" becomes "fast".
  std::string text = testing::ReadWholeFile(ObjectFile(id));
  const size_t at = text.find("\"prod\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 6, "\"fast\"");
  Write(ObjectFile(id), text);
  ExpectError(Get("/api/runs/" + id), 422, "store-object-corrupt");
  ExpectError(Replay(id), 422, "store-object-corrupt");
}

TEST_F(StudioRecords, RecordsOfTheFirstFormatAreNoLongerShown) {
  const std::string old =
      engine_->store().Put({{"kind", "scellis.run-record/1"}, {"tier", "prod"}}).value();
  ExpectError(Get("/api/runs/" + old), 404, "not-a-run-record");
}

TEST_F(StudioRecords, NoRecordWhenRecordingIsOff) {
  setenv("SCELLIS_NO_RECORD", "1", 1);
  const auto before = StoreFiles();
  std::vector<Json> lines = Lines(Post("/api/run", {{"document", CenterColumnsConstantWeights()}}));
  unsetenv("SCELLIS_NO_RECORD");
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back()["event"], "result");
  EXPECT_TRUE(lines.back()["run_id"].is_null());
  EXPECT_EQ(StoreFiles(), before);
}

}  // namespace
}  // namespace scellis::studio
