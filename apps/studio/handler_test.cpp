// The Studio's requests, called without a socket: every endpoint on the examples, the values of
// seed 000's center-columns run against hand-worked numbers, and hostile requests — each refused
// with its status and named code, with nothing read from outside the store and the web directory
// and nothing written to the store.
#include "handler.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "data/dataset.h"
#include "record/run_record.h"
#include "support/cli.h"

namespace scellis::studio {
namespace {

namespace fs = std::filesystem;

Json Example(const std::string& name) {
  std::ifstream in(fs::path(SCELLIS_SOURCE_DIR) / "examples" / (name + ".json"));
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

// Center columns with weights that are inline data, not a seeded draw, so y can be worked by hand:
// x is [[1,2,3],[4,5,6],[7,8,9],[10,11,12]], its column means [5.5, 6.5, 7.5], so every row of
// x - mean is one value a repeated: a = -4.5, -1.5, 1.5, 4.5. With w = [[1,0],[0,1],[1,1]],
// y = [a + a, a + a] per row: [-9,-9], [-3,-3], [3,3], [9,9].
Json CenterColumnsConstantWeights() {
  Json d = Example("center_columns");
  d["nodes"][1] = Json::parse(R"({"id": "w", "type": "input",
      "params": {"name": "weights", "shape": ["D", "K"], "data": [1, 0, 0, 1, 1, 1]}})");
  return d;
}

class StudioHandler : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("scellis-studio-test");
    store_ = dir_ / "store";
    web_ = dir_ / "web";
    fs::create_directories(web_ / "assets");
    Write(web_ / "index.html", "<!doctype html><title>studio</title>");
    Write(web_ / "assets" / "app.js", "console.log('studio')");
    Write(dir_ / "secret.txt", "outside the web directory");
    fs::create_symlink(dir_ / "secret.txt", web_ / "assets" / "escape.txt");
    engine_ = Open({});
  }
  void TearDown() override {
    engine_.reset();
    fs::remove_all(dir_);
  }

  static void Write(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
  }

  std::unique_ptr<Engine> Open(EngineOptions o) {
    o.store_root = store_.string();
    o.select.requested = "cpu";
    if (o.web_dir.empty()) o.web_dir = web_.string();
    auto e = Engine::Open(o);
    EXPECT_TRUE(e.ok()) << e.errors().front().Format();
    return std::move(e.value());
  }

  Response Get(const std::string& path, Engine* e = nullptr) {
    return Handle(e ? *e : *engine_, {"GET", path, "", ""});
  }
  Response Post(const std::string& path, const Json& body, Engine* e = nullptr) {
    return Handle(e ? *e : *engine_, {"POST", path, "application/json", body.dump()});
  }
  static Json Body(const Response& r) { return Json::parse(r.body); }

  // The lines a streamed answer writes.
  static std::vector<Json> Lines(const Response& r) {
    std::vector<Json> lines;
    EXPECT_TRUE(r.stream) << "not a stream: " << r.status << " " << r.body;
    if (!r.stream) return lines;
    r.stream([&](const std::string& line) {
      EXPECT_EQ(line.find('\n'), std::string::npos);
      lines.push_back(Json::parse(line));
      return true;
    });
    return lines;
  }

  // Every file under the store, for "nothing was written".
  std::set<std::string> StoreFiles() const {
    std::set<std::string> files;
    if (!fs::exists(store_)) return files;
    for (const auto& e : fs::recursive_directory_iterator(store_)) files.insert(e.path().string());
    return files;
  }

  void ExpectError(const Response& r, int status, const std::string& code) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    Json j = Body(r);
    EXPECT_EQ(j["error"]["code"], code) << r.body;
    EXPECT_TRUE(j["error"].contains("pointer"));
    EXPECT_TRUE(j["error"].contains("help"));
    EXPECT_TRUE(j["diagnostics"].is_array());
  }

  fs::path dir_, store_, web_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(StudioHandler, VersionOpsAndExamples) {
  Response v = Get("/api/version");
  ASSERT_EQ(v.status, 200);
  EXPECT_EQ(Body(v)["backend"], "cpu");
  EXPECT_TRUE(Body(v)["protocol"].is_array());

  Response ops = Get("/api/ops");
  ASSERT_EQ(ops.status, 200);
  std::set<std::string> ops_seen, types_seen;
  const Json palette = Body(ops);
  for (const Json& o : palette["ops"]) ops_seen.insert(o["name"]);
  for (const Json& t : palette["node_types"]) types_seen.insert(t["name"]);
  EXPECT_TRUE(ops_seen.count("matmul") && ops_seen.count("mean") && ops_seen.count("life"));
  EXPECT_TRUE(types_seen.count("input") && types_seen.count("param") &&
              types_seen.count("dataset"));

  Response ex = Get("/api/examples");
  ASSERT_EQ(ex.status, 200);
  std::map<std::string, Json> examples;
  const Json gallery = Body(ex);
  for (const Json& e : gallery["examples"]) examples[e["name"]] = e;
  for (const char* name : {"center_columns", "fashion_mlp", "life_glider", "mlp_step"}) {
    ASSERT_TRUE(examples.count(name)) << name;
    EXPECT_EQ(examples[name]["document"], Example(name)) << "embedded as the file holds it";
    EXPECT_FALSE(examples[name]["title"].get<std::string>().empty());
  }
}

TEST_F(StudioHandler, ValidateLowerRungsAndPlan) {
  const Json doc = Example("center_columns");
  Response v = Post("/api/validate", {{"document", doc}});
  ASSERT_EQ(v.status, 200) << v.body;
  EXPECT_TRUE(Body(v)["ok"].get<bool>());
  EXPECT_EQ(Body(v)["content_id"], ContentId(doc));

  for (const char* rung : {"doc", "block", "webir", "kernel", "execplan"}) {
    Response l = Post("/api/lower", {{"document", doc}, {"rung", rung}});
    ASSERT_EQ(l.status, 200) << rung << " " << l.body;
    EXPECT_EQ(Body(l)["rung"], rung);
    EXPECT_FALSE(Body(l)["text"].get<std::string>().empty());
    EXPECT_FALSE(Body(l)["json"].is_null());
  }
  Json webir = Body(Post("/api/lower", {{"document", doc}, {"rung", "webir"}}));
  EXPECT_NE(webir["text"].get<std::string>().find("matmul %xc, %w"), std::string::npos)
      << webir["text"];
  ExpectError(Post("/api/lower", {{"document", doc}, {"rung", "wgsl"}}), 400, "bad-request-field");

  Response r = Post("/api/rungs", {{"document", doc}});
  ASSERT_EQ(r.status, 200) << r.body;
  Json rungs = Body(r);
  for (const char* rung : {"doc", "block", "webir", "kernel", "execplan"})
    EXPECT_TRUE(rungs["rungs"][rung]["text"].is_string()) << rung;
  ASSERT_FALSE(rungs["rungs"]["kernel"]["wgsl"].empty());
  EXPECT_NE(rungs["rungs"]["kernel"]["wgsl"][0]["source"].get<std::string>().find("@compute"),
            std::string::npos);
  // The matmul's kernel and plan step lead back to document node "y".
  ASSERT_TRUE(rungs["links"]["doc"].contains("y"));
  EXPECT_EQ(rungs["links"]["doc"]["y"]["kernels"].size(), 1u);
  EXPECT_EQ(rungs["links"]["steps"].size(), rungs["links"]["kernels"].size());

  Response p = Post("/api/plan", {{"document", doc}});
  ASSERT_EQ(p.status, 200);
  EXPECT_EQ(Body(p)["verdict"], "green");
  EXPECT_NE(Body(p)["text"].get<std::string>().find("verdict"), std::string::npos);
  // A red plan is an answer to "plan", with what failed.
  Response red = Post("/api/plan", {{"document", doc}, {"budget", 100}});
  ASSERT_EQ(red.status, 200) << red.body;
  EXPECT_EQ(Body(red)["verdict"], "red");
  EXPECT_EQ(Body(red)["findings"][0]["code"], "memory-over-budget");
}

TEST_F(StudioHandler, TierAndBindFollowTheCommandLineRules) {
  Json doc = Example("center_columns");
  doc.erase("determinism");
  ExpectError(Post("/api/validate", {{"document", doc}}), 422, "missing-determinism-tier");
  EXPECT_EQ(Post("/api/validate", {{"document", doc}, {"tier", "debug"}}).status, 200);
  ExpectError(Post("/api/validate", {{"document", doc}, {"tier", "fastest"}}), 400,
              "bad-request-field");
  Json bound = Example("center_columns");
  bound["dims"].erase("N");
  EXPECT_EQ(Post("/api/validate", {{"document", bound}, {"bind", {{"N", 4}}}}).status, 200);
  ExpectError(Post("/api/validate", {{"document", bound}, {"bind", {{"N", -1}}}}), 400,
              "bad-request-field");
}

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

TEST_F(StudioHandler, DocumentProblemsAre422WithTheirPointerAndNode) {
  Json doc = Example("center_columns");
  doc["nodes"][2]["colour"] = "red";
  const auto before = StoreFiles();
  for (const char* path : {"/api/validate", "/api/plan", "/api/run", "/api/documents"}) {
    Response r = Post(path, {{"document", doc}});
    ExpectError(r, 422, "unknown-field");
    Json j = Body(r);
    EXPECT_EQ(j["error"]["pointer"], "/nodes/2/colour") << path;
    EXPECT_EQ(j["diagnostics"][0]["node"], "mean") << path;
  }
  EXPECT_EQ(StoreFiles(), before) << "nothing stored for a bad document";
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

TEST_F(StudioHandler, HostileRequestsAreRefusedAndNothingIsStoredOrRead) {
  const auto before = StoreFiles();
  const std::string doc = Json{{"document", Example("center_columns")}}.dump();

  // Oversized: refused from its size, before parsing.
  EngineOptions small;
  small.max_request_bytes = 256;
  auto capped = Open(small);
  Response big = Handle(*capped, {"POST", "/api/documents", "application/json", doc});
  ExpectError(big, 413, "request-too-large");
  // Wrong content type, with and without parameters.
  ExpectError(Handle(*engine_, {"POST", "/api/documents", "text/plain", doc}), 415,
              "unsupported-media-type");
  ExpectError(Handle(*engine_, {"POST", "/api/validate", "", doc}), 415, "unsupported-media-type");
  EXPECT_EQ(
      Handle(*engine_, {"POST", "/api/validate", "Application/JSON; charset=utf-8", doc}).status,
      200);
  // Malformed JSON, nesting past the cap, a body that is no object, an unknown request field.
  ExpectError(Handle(*engine_, {"POST", "/api/documents", "application/json", "{\"document\": {"}),
              400, "bad-json");
  ExpectError(Handle(*engine_, {"POST", "/api/validate", "application/json",
                                std::string(100000, '[') + std::string(100000, ']')}),
              400, "bad-json");
  ExpectError(Handle(*engine_, {"POST", "/api/validate", "application/json", "[1]"}), 400,
              "bad-request");
  ExpectError(Post("/api/validate", {{"document", Example("center_columns")}, {"tier_", "prod"}}),
              400, "unknown-field");
  ExpectError(Post("/api/validate", {{"document", "center_columns.json"}}), 400,
              "bad-request-field");
  // Path traversal in an id, encoded or not: refused by its form; nothing is looked up.
  ExpectError(Get("/api/documents/..%2f..%2fetc%2fpasswd"), 400, "bad-id");
  ExpectError(Get("/api/documents/../../etc/passwd"), 400, "bad-id");
  ExpectError(Get("/api/runs/sha256:../../../etc/passwd"), 400, "bad-id");
  ExpectError(Get("/api/documents/sha256:" + std::string(64, 'A')), 400, "bad-id");
  ExpectError(Get("/w/..%2f..%2fetc%2fpasswd"), 400, "bad-id");
  // Path traversal in a static path, and a symlink out of the web directory.
  for (const char* p : {"/assets/../../etc/passwd", "/../secret.txt", "/assets/escape.txt",
                        "/assets/%2e%2e/%2e%2e/secret.txt", "/.hidden", "/assets//app.js",
                        "/assets/./app.js", "/assets/"}) {
    Response r = Get(p);
    EXPECT_EQ(r.status, 404) << p;
    EXPECT_EQ(r.body.find("outside the web directory"), std::string::npos) << p;
  }
  EXPECT_EQ(Get("/assets/app.js").body, "console.log('studio')");
  EXPECT_EQ(Get("/assets/app.js").content_type, "text/javascript; charset=utf-8");
  // A dataset read from files the request names.
  Json train = Example("fashion_mlp");
  train["nodes"][0]["params"]["source"] = "idx:/etc/passwd,/etc/passwd";
  ExpectError(Post("/api/train", {{"document", train}}), 422, "dataset-path-refused");
  // Routes and methods.
  ExpectError(Get("/api/nothing"), 404, "not-found");
  ExpectError(Get("/api/validate"), 405, "method-not-allowed");
  ExpectError(Post("/api/version", Json::object()), 405, "method-not-allowed");
  ExpectError(Handle(*engine_, {"DELETE", "/api/documents/sha256:" + std::string(64, '0'), "", ""}),
              405, "method-not-allowed");
  ExpectError(Handle(*engine_, {"POST", "/index.html", "application/json", "{}"}), 405,
              "method-not-allowed");
  EXPECT_EQ(StoreFiles(), before) << "nothing stored by a refused request";
}

TEST_F(StudioHandler, WithoutBuiltAssetsTheRootSaysHowToBuildThem) {
  EngineOptions o;
  o.web_dir = (dir_ / "no-such-dist").string();
  auto bare = Open(o);
  Response root = Get("/", bare.get());
  EXPECT_EQ(root.status, 200);
  EXPECT_EQ(root.content_type, "text/html; charset=utf-8");
  EXPECT_NE(root.body.find("not built"), std::string::npos);
  EXPECT_NE(root.body.find("npm --prefix web run build"), std::string::npos);
  EXPECT_EQ(Get("/assets/app.js", bare.get()).status, 404);
  EXPECT_EQ(Get("/api/version", bare.get()).status, 200) << "the API still works";
}

TEST_F(StudioHandler, ProgramForTheBrowserRuntime) {
  Response r = Post("/api/program", {{"document", Example("center_columns")}});
  ASSERT_EQ(r.status, 200) << r.body;
  Json program = Body(r);
  EXPECT_EQ(program["format"], "scellis.device-program/1");
  // center_columns lowers to three kernels: mean, the broadcast subtraction, the matmul.
  EXPECT_EQ(program["dispatches"].size(), 3u) << program.dump();
  for (const Json& p : program["pipelines"])
    EXPECT_NE(p["wgsl"].get<std::string>().find("@compute"), std::string::npos);
  ExpectError(Post("/api/program", {{"document", Example("center_columns")}, {"budget", 100}}), 422,
              "memory-over-budget");
}

TEST_F(StudioHandler, ConformWithoutAGpuIsRefusedByName) {
  Response r = Post("/api/conform", {{"tier", "prod"}, {"ops", {"add"}}});
  ExpectError(r, 422, "no-gpu");
  ExpectError(Post("/api/conform", {{"ops", {"add"}}}), 422, "missing-determinism-tier");
  ExpectError(Post("/api/conform", {{"tier", "prod"}, {"ops", {"addd"}}}), 422, "unknown-op");
}

// Base64 (RFC 4648) to bytes, written here so the test does not trust the server's encoder.
std::vector<std::byte> FromBase64(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::vector<std::byte> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = value(c);
    if (v < 0) continue;  // padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::byte>((acc >> bits) & 0xff));
    }
  }
  return out;
}

const Json kSwiftShaderTab = {
    {"vendor", "google"},
    {"architecture", "swiftshader"},
    {"device", ""},
    {"description", "SwiftShader device"},
    {"software", true},
    {"limits", {{"maxStorageBufferBindingSize", 134217728}, {"maxBufferSize", 268435456}}}};

// The tab's side of browser conformance, played by the test: relu computed here, by its rule
// (x < 0 ? 0 : x, so -0 and NaN pass through), from the feeds the server handed out.
TEST_F(StudioHandler, BrowserConformanceJudgesTheTabsOutputsAndMintsItsReceipt) {
  auto Put = [&](const std::string& path, const std::string& bytes, const std::string& type) {
    return Handle(*engine_, {"PUT", path, type, bytes});
  };
  auto start = [&](Json body) { return Post("/api/conform/browser", body); };

  ExpectError(start({{"tier", "prod"}, {"op", "relu"}}), 400, "bad-request-field");
  ExpectError(start({{"tier", "prod"}, {"op", "relu"}, {"adapter", {{"vendr", "x"}}}}), 400,
              "unknown-field");
  ExpectError(start({{"tier", "prod"}, {"op", "relux"}, {"adapter", kSwiftShaderTab}}), 422,
              "unknown-op");
  ExpectError(start({{"op", "relu"}, {"adapter", kSwiftShaderTab}}), 422,
              "missing-determinism-tier");
  ExpectError(Post("/api/conform/browser/nosuchjob/judge", Json::object()), 404, "not-found");

  for (bool break_one : {true, false}) {
    Response r =
        start({{"tier", "prod"}, {"op", "relu"}, {"seed", 7}, {"adapter", kSwiftShaderTab}});
    ASSERT_EQ(r.status, 200) << r.body.substr(0, 400);
    Json job = Body(r);
    EXPECT_EQ(job["runs"], 1);
    EXPECT_EQ(job["profile"].get<std::string>().rfind("webgpu;browser;", 0), 0u) << job["profile"];
    const std::string base = "/api/conform/browser/" + job["job"].get<std::string>() + "/";
    ASSERT_FALSE(job["cases"].empty());
    for (size_t i = 0; i < job["cases"].size(); ++i) {
      const Json& c = job["cases"][i];
      ASSERT_TRUE(c["error"].is_null()) << c["error"];
      EXPECT_EQ(c["program"]["format"], "scellis.device-program/1");
      ASSERT_EQ(c["feeds"].size(), 1u);
      std::vector<std::byte> x = FromBase64(c["feeds"].begin().value()["data"].get<std::string>());
      std::vector<float> y(x.size() / 4);
      std::memcpy(y.data(), x.data(), x.size());
      for (float& v : y) v = v < 0 ? 0.0f : v;
      if (break_one && i == 0) y[0] += 1.0f;
      std::string bytes(reinterpret_cast<const char*>(y.data()), y.size() * 4);
      ASSERT_EQ(static_cast<int64_t>(bytes.size()), c["output"]["bytes"].get<int64_t>());
      const std::string at = base + std::to_string(i) + "/0/";
      // In two chunks, in order; a chunk out of order or of another type is refused.
      const size_t half = bytes.size() / 8 * 4;
      ExpectError(Put(at + "0", bytes, "application/json"), 415, "unsupported-media-type");
      if (half > 0)
        ExpectError(Put(at + std::to_string(half), bytes.substr(half), "application/octet-stream"),
                    409, "bad-offset");
      ASSERT_EQ(Put(at + "0", bytes.substr(0, half), "application/octet-stream").status, 200);
      ASSERT_EQ(
          Put(at + std::to_string(half), bytes.substr(half), "application/octet-stream").status,
          200);
      ExpectError(Put(at + std::to_string(bytes.size()), "abcd", "application/octet-stream"), 422,
                  "answer-too-long");
    }
    Response judged = Post(base + "judge", Json::object());
    ASSERT_EQ(judged.status, 200) << judged.body.substr(0, 400);
    Json report = Body(judged);
    EXPECT_EQ(report["ok"], !break_one) << judged.body.substr(0, 600);
    ASSERT_EQ(report["ops"].size(), 1u);
    EXPECT_EQ(report["ops"][0]["receipt"].is_string(), !break_one);
    EXPECT_EQ(report["profile"], job["profile"]);
    // A judged job is gone.
    ExpectError(Post(base + "judge", Json::object()), 404, "not-found");
  }
  // The receipt counts for a document's relu kernel on that profile, and on no other.
  Json doc = Json::parse(R"({"version": 1, "nodes": [
      {"id": 0, "op": "input", "shape": [3], "data": [-2, 3, 4]},
      {"id": 1, "op": "relu", "a": 0}], "outputs": [{"name": "y", "id": 1}]})");
  Response held =
      Post("/api/receipts", {{"document", doc}, {"tier", "prod"}, {"adapter", kSwiftShaderTab}});
  ASSERT_EQ(held.status, 200) << held.body;
  EXPECT_EQ(Body(held)["kernels"], 1) << held.body;
  EXPECT_EQ(Body(held)["conformed"], 1) << held.body;
  Json other = kSwiftShaderTab;
  other["description"] = "another device";
  Response none = Post("/api/receipts", {{"document", doc}, {"tier", "prod"}, {"adapter", other}});
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_EQ(Body(none)["conformed"], 0) << none.body;
  EXPECT_EQ(Body(none)["missing"], Json::array({"relu"})) << none.body;
}

TEST_F(StudioHandler, ProbeSaysWhatAutoWouldChoose) {
  Response r = Get("/api/probe");
  ASSERT_EQ(r.status, 200);
  Json j = Body(r);
  EXPECT_TRUE(j["backends"].is_array());
  EXPECT_TRUE(j.contains("auto_choice"));
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
  Response Replay(const std::string& id) { return Post("/api/runs/" + id + "/replay", Json::object()); }
  // The record `id` made again with one change, stored as a record of its own.
  std::string Edited(const std::string& id, const std::function<void(Json&)>& edit) {
    auto store = store::Store::Open(store_.string()).value();
    Json j = store.Get(id).value();
    edit(j);
    return store.Put(j).value();
  }
};

TEST_F(StudioRecords, AStudioRunReplaysOnTheCommandLineAndOnThePage) {
  const std::string id = StudioRun({{"document", CenterColumnsConstantWeights()}, {"tier", "prod"}});
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
  const std::string file = (fs::path(SCELLIS_SOURCE_DIR) / "examples" / "seed_mul_relu.json").string();
  testing::CliRun run = testing::RunScellis({"run", file, "--tier=prod", "--backend=cpu", "--json"});
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
  const std::string id = StudioRun({{"document", CenterColumnsConstantWeights()}, {"tier", "prod"}});
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
  const std::string id = StudioRun({{"document", CenterColumnsConstantWeights()}, {"tier", "debug"}});
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
  const std::string id = StudioRun({{"document", CenterColumnsConstantWeights()}, {"tier", "prod"}});
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
  const std::string old = engine_->store().Put({{"kind", "scellis.run-record/1"}, {"tier", "prod"}}).value();
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
