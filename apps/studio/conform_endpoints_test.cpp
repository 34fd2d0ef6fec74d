// Conformance over the Studio's API, called without a socket: on the server's device
// (conform_endpoints.h) refused by name where there is no GPU, and on the browser tab's device
// (tab_conform.h) played by the test, judged, and minted into a receipt.
#include "conform_endpoints.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "handler_test.h"

namespace scellis::studio {
namespace {

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

}  // namespace
}  // namespace scellis::studio
