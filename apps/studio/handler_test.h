// The Studio handler's tests' shared pieces: the shipped examples as JSON, a document whose run is
// worked by hand, and a fixture with an engine over a scratch store and web directory, and the
// calls every endpoint test makes (GET, POST, the lines of a stream, the store's files, an error
// of the contract's shape).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "handler.h"
#include "support/cli.h"

namespace scellis::studio {

namespace fs = std::filesystem;

inline Json Example(const std::string& name) {
  std::ifstream in(fs::path(SCELLIS_SOURCE_DIR) / "examples" / (name + ".json"));
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

// Center columns with weights that are inline data, not a seeded draw, so y can be worked by hand:
// x is [[1,2,3],[4,5,6],[7,8,9],[10,11,12]], its column means [5.5, 6.5, 7.5], so every row of
// x - mean is one value a repeated: a = -4.5, -1.5, 1.5, 4.5. With w = [[1,0],[0,1],[1,1]],
// y = [a + a, a + a] per row: [-9,-9], [-3,-3], [3,3], [9,9].
inline Json CenterColumnsConstantWeights() {
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

}  // namespace scellis::studio
