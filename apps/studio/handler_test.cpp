// The Studio's requests, called without a socket: what the server says of itself (version, ops,
// the gallery, the probe), its built files, and hostile requests — each refused with its status
// and named code, with nothing read from outside the store and the web directory and nothing
// written to the store.
#include "handler.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "handler_test.h"

namespace scellis::studio {
namespace {

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

TEST_F(StudioHandler, ProbeSaysWhatAutoWouldChoose) {
  Response r = Get("/api/probe");
  ASSERT_EQ(r.status, 200);
  Json j = Body(r);
  EXPECT_TRUE(j["backends"].is_array());
  EXPECT_TRUE(j.contains("auto_choice"));
}

}  // namespace
}  // namespace scellis::studio
