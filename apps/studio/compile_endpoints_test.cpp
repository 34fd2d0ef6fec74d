// The Studio's endpoints that compile (compile_endpoints.h), called without a socket: every rung,
// the plan and the browser runtime's program of the examples, the command line's rules for tier
// and bind, and a document's problems answered with their pointer and node.
#include "compile_endpoints.h"

#include <gtest/gtest.h>

#include <string>

#include "handler_test.h"

namespace scellis::studio {
namespace {

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

}  // namespace
}  // namespace scellis::studio
