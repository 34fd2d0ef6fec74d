// The Studio's streamed endpoints (streams.h), called without a socket: the values of seed 000's
// center-columns run against hand-worked numbers, runs of the game of life, a run cancelled when
// its page goes away and one that waits its turn at the device, a red plan refused before
// anything runs, and a training whose loss falls.
#include "streams.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "data/dataset.h"
#include "handler_test.h"

namespace scellis::studio {
namespace {

TEST_F(StudioHandler, RunGivesTheHandWorkedValuesAndStoresItsRecord) {
  const Json doc = CenterColumnsConstantWeights();
  Response r = Post("/api/run", {{"document", doc}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/x-ndjson");
  std::vector<Json> lines = Lines(r);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines.front()["event"], "start");
  EXPECT_EQ(lines.front()["backend"], "cpu");
  const Json& result = lines.back();
  ASSERT_EQ(result["event"], "result") << result.dump();
  const Json& report = result["report"];
  EXPECT_EQ(report["backend"], "cpu");
  EXPECT_EQ(report["determinism_tier"], "prod");

  const double a[] = {-4.5, -1.5, 1.5, 4.5};
  const Json& y = report["outputs"]["y"];
  ASSERT_EQ(y["shape"], Json::array({4, 2}));
  const Json& centered = report["outputs"]["centered"];
  for (int row = 0; row < 4; ++row) {
    for (int k = 0; k < 2; ++k) EXPECT_NEAR(y["data"][row * 2 + k].get<double>(), 2 * a[row], 1e-5);
    for (int d = 0; d < 3; ++d) EXPECT_EQ(centered["data"][row * 3 + d].get<double>(), a[row]);
  }

  // The record: what ran, where, and its values; the document under its content id.
  const std::string run_id = result["run_id"];
  Response rec = Get("/api/runs/" + run_id);
  ASSERT_EQ(rec.status, 200) << rec.body;
  Json record = Body(rec);
  EXPECT_EQ(record["run_id"], run_id);
  EXPECT_EQ(record["kind"], "scellis.run-record/2");
  EXPECT_EQ(record["command"], "run");
  EXPECT_EQ(record["tier"], "prod");
  EXPECT_EQ(record["backend"], "cpu");
  EXPECT_EQ(record["executor"], report["executor"]);
  EXPECT_EQ(record["content_id"], report["content_id"]);
  EXPECT_TRUE(record.contains("fallback_reason"));
  EXPECT_TRUE(record["receipts"].is_array());
  EXPECT_TRUE(record["date"].is_string());
  EXPECT_TRUE(record["outputs"]["y"]["sha256"].is_string());
  // The kept values, read back from their blob, are the ones the run sent.
  EXPECT_EQ(record["values"]["y"], y);
  EXPECT_EQ(record["document_id"], ContentId(doc));
  Response d = Get("/api/documents/" + record["document_id"].get<std::string>());
  ASSERT_EQ(d.status, 200);
  EXPECT_EQ(Body(d)["document"], doc);
  // The pages that open them are the Studio's index.
  EXPECT_EQ(Get("/r/" + run_id).body, "<!doctype html><title>studio</title>");
  EXPECT_EQ(Get("/w/" + record["document_id"].get<std::string>()).status, 200);
}

TEST_F(StudioHandler, RunOfTheSeededExampleCentersExactly) {
  // The weights are a seeded draw here; the centered columns do not depend on them.
  Response r = Post("/api/run", {{"document", Example("center_columns")}, {"backend", "cpu"}});
  std::vector<Json> lines = Lines(r);
  ASSERT_FALSE(lines.empty());
  const Json& out = lines.back()["report"]["outputs"];
  EXPECT_EQ(out["y"]["shape"], Json::array({4, 2}));
  EXPECT_EQ(out["centered"]["data"][0].get<double>(), -4.5);
  EXPECT_EQ(out["centered"]["data"][11].get<double>(), 4.5);
}

TEST_F(StudioHandler, RunsOfTheGameOfLife) {
  // Four generations in one graph: the glider is back in its shape, one cell down and right.
  Response r = Post("/api/run", {{"document", Example("life_glider")}, {"tier", "prod"}});
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<Json> lines = Lines(r);
  ASSERT_EQ(lines.back()["event"], "result") << lines.back().dump();
  const Json glider = Example("life_glider");
  const Json& first = glider["nodes"][0]["data"];
  const Json& grid = lines.back()["report"]["outputs"]["grid"]["data"];
  ASSERT_EQ(grid.size(), 64u);
  for (int row = 0; row < 8; ++row)
    for (int c = 0; c < 8; ++c) {
      double want = (row > 0 && c > 0) ? first[(row - 1) * 8 + (c - 1)].get<double>() : 0.0;
      EXPECT_EQ(grid[row * 8 + c].get<double>(), want) << row << "," << c;
    }

  // Many steps of a carried grid, with the history of every step.
  Response s = Post(
      "/api/run",
      {{"document", Example("life_steps")}, {"tier", "prod"}, {"steps", 4}, {"history", {"next"}}});
  ASSERT_EQ(s.status, 200) << s.body;
  lines = Lines(s);
  ASSERT_EQ(lines.back()["event"], "result") << lines.back().dump();
  const Json& report = lines.back()["report"];
  ASSERT_EQ(report["history"]["next"]["steps"].size(), 4u);
  EXPECT_EQ(report["history"]["next"]["steps"][3], report["outputs"]["next"]["data"]);
  ExpectError(
      Post("/api/run", {{"document", Example("life_steps")}, {"tier", "prod"}, {"steps", 0}}), 400,
      "bad-request-field");
}

TEST_F(StudioHandler, APageThatGoesAwayCancelsItsRunAndFreesTheDevice) {
  // 640 steps are ten runs of 64; the page is gone after the first progress line.
  Response r =
      Post("/api/run", {{"document", Example("life_steps")}, {"tier", "prod"}, {"steps", 640}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(r.stream);
  std::vector<Json> seen;
  const auto before = StoreFiles();
  r.stream([&](const std::string& line) {
    seen.push_back(Json::parse(line));
    return seen.back()["event"] != "progress";
  });
  int progress = 0;
  for (const Json& l : seen) progress += l["event"] == "progress";
  EXPECT_EQ(progress, 1) << "nothing is written after the page is gone";
  EXPECT_NE(seen.back()["event"], "result");
  EXPECT_EQ(StoreFiles(), before) << "a cancelled run stores no record";
  // The device is free: the next run starts at once (no "queued") and finishes.
  std::vector<Json> next = Lines(
      Post("/api/run", {{"document", Example("life_steps")}, {"tier", "prod"}, {"steps", 128}}));
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.front()["event"], "start");
  EXPECT_EQ(next.back()["event"], "result");
  int next_progress = 0;
  for (const Json& l : next) next_progress += l["event"] == "progress";
  EXPECT_EQ(next_progress, 2) << "a progress line per run of 64 steps";
}

TEST_F(StudioHandler, ASecondRunWaitsItsTurnAndSaysSo) {
  std::unique_lock<std::mutex> busy(engine_->worker());
  Response r = Post("/api/run", {{"document", CenterColumnsConstantWeights()}});
  ASSERT_TRUE(r.stream);
  std::vector<Json> lines;
  std::mutex m;
  std::thread t([&] {
    r.stream([&](const std::string& line) {
      std::lock_guard<std::mutex> g(m);
      lines.push_back(Json::parse(line));
      return true;
    });
  });
  for (int i = 0; i < 2000; ++i) {
    {
      std::lock_guard<std::mutex> g(m);
      if (!lines.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  {
    std::lock_guard<std::mutex> g(m);
    ASSERT_EQ(lines.size(), 1u) << "only the queued line while the worker is busy";
    EXPECT_EQ(lines[0]["event"], "queued");
  }
  busy.unlock();
  t.join();
  EXPECT_EQ(lines.back()["event"], "result");
}

TEST_F(StudioHandler, RedPlanOnRunIs422AndNothingRuns) {
  const auto before = StoreFiles();
  Response r = Post("/api/run", {{"document", Example("center_columns")}, {"budget", 100}});
  ExpectError(r, 422, "memory-over-budget");
  EXPECT_FALSE(r.stream);
  ExpectError(Post("/api/validate", {{"document", Example("center_columns")}, {"budget", 100}}),
              422, "memory-over-budget");
  EXPECT_EQ(StoreFiles(), before);
}

TEST_F(StudioHandler, TrainStreamsProgressBeforeTheResultAndTheLossFalls) {
  if (!data::LoadDataset("fashion-mnist", "test").ok())
    GTEST_SKIP() << "the fashion-mnist dataset is not installed";
  // The example's MLP made small: 784-16-10, a few steps.
  Json doc = Example("fashion_mlp");
  for (Json& n : doc["nodes"]) {
    if (n["id"] == "w1") n["params"]["shape"] = Json::array({784, 16});
    if (n["id"] == "b1") n["params"]["shape"] = Json::array({16});
    if (n["id"] == "w2") n["params"]["shape"] = Json::array({16, 10});
    if (n["id"] == "b2") n["params"]["init"]["fan_in"] = 16;
  }
  doc["train"]["optimizer"]["lr"] = 0.01;

  // A page that goes away after the first progress line stops the training there.
  Response gone = Post("/api/train",
                       {{"document", doc}, {"epochs", 1}, {"max_steps", 40}, {"steps_per_run", 8}});
  ASSERT_EQ(gone.status, 200) << gone.body;
  std::vector<Json> seen;
  const auto before = StoreFiles();
  gone.stream([&](const std::string& line) {
    seen.push_back(Json::parse(line));
    return seen.back()["event"] != "progress";
  });
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back()["event"], "progress") << "nothing is written after the page is gone";
  EXPECT_EQ(seen.back()["step"], 8);
  EXPECT_EQ(StoreFiles(), before) << "a cancelled training stores no record";

  Response r = Post("/api/train",
                    {{"document", doc}, {"epochs", 1}, {"max_steps", 40}, {"steps_per_run", 8}});
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<Json> lines = Lines(r);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front()["event"], "start");
  std::vector<int64_t> steps;
  size_t result_at = lines.size(), epoch_at = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i]["event"] == "progress") {
      EXPECT_LT(i, epoch_at) << "progress comes before the epoch's line";
      steps.push_back(lines[i]["step"]);
    }
    if (lines[i]["event"] == "epoch") epoch_at = i;
    if (lines[i]["event"] == "result") result_at = i;
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{8, 16, 24, 32, 40}));
  ASSERT_EQ(result_at, lines.size() - 1) << lines.back().dump();
  EXPECT_LT(epoch_at, result_at);
  const Json& result = lines.back();
  std::vector<float> losses = result["losses"].get<std::vector<float>>();
  ASSERT_EQ(losses.size(), 40u);
  double first = 0, last = 0;
  for (int i = 0; i < 8; ++i) {
    first += losses[i];
    last += losses[32 + i];
  }
  EXPECT_LT(last, first * 0.8) << "the mean loss of the last 8 steps is well below the first 8's";
  Response rec = Get("/api/runs/" + result["run_id"].get<std::string>());
  ASSERT_EQ(rec.status, 200);
  EXPECT_EQ(Body(rec)["backend"], "cpu");
  EXPECT_EQ(Body(rec)["command"], "train");
  EXPECT_EQ(Body(rec)["values"]["losses"]["data"].size(), 40u);
  EXPECT_EQ(Body(rec)["values"]["losses"]["data"][39].get<float>(), losses[39]);
}

}  // namespace
}  // namespace scellis::studio
