#include "base/diagnostic_json.h"

#include <gtest/gtest.h>

namespace scellis {
namespace {

TEST(DiagnosticJson, CarriesEveryFieldAndNullsTheEmptyOnes) {
  Diagnostic d = UserError("shape-mismatch", "/nodes/1/params/axis", "the axis is 3, expected 0 or 1",
                           "use axis 0");
  d.where = "mean \"m\"";
  Json doc = Json::parse(R"({"nodes": [{"id": "x"}, {"id": "m"}]})");
  Json j = DiagnosticToJson(d, &doc);
  EXPECT_EQ(j["code"], "shape-mismatch");
  EXPECT_EQ(j["severity"], "error");
  EXPECT_EQ(j["kind"], "user");
  EXPECT_EQ(j["pointer"], "/nodes/1/params/axis");
  EXPECT_EQ(j["where"], "mean \"m\"");
  EXPECT_EQ(j["help"], "use axis 0");
  EXPECT_EQ(j["node"], "m");

  Json bare = DiagnosticToJson(Note("cpu-run", "on the reference"));
  EXPECT_EQ(bare["severity"], "note");
  EXPECT_TRUE(bare["pointer"].is_null());
  EXPECT_TRUE(bare["help"].is_null());
  EXPECT_TRUE(bare["where"].is_null());
  EXPECT_TRUE(bare["node"].is_null());
  EXPECT_EQ(DiagnosticToJson(Warning("w", "", "m"))["severity"], "warning");
  EXPECT_EQ(DiagnosticToJson(InternalError("partition", "x"))["kind"], "internal");
}

TEST(DiagnosticJson, NodeIdOnlyForAPointerIntoAnExistingNode) {
  Json graph = Json::parse(R"({"nodes": [{"id": 0}, {"id": 7}], "outputs": []})");
  auto node = [&](const std::string& pointer) {
    return DiagnosticToJson(UserError("c", pointer, "m"), &graph)["node"];
  };
  EXPECT_EQ(node("/nodes/1"), "7") << "graph ids are integers, given as text";
  EXPECT_TRUE(node("/nodes/2").is_null()) << "past the end";
  EXPECT_TRUE(node("/nodes/1x").is_null());
  EXPECT_TRUE(node("/nodes/").is_null());
  EXPECT_TRUE(node("/outputs/0").is_null());
  EXPECT_TRUE(node("/nodes/99999999999999999999999").is_null());
  EXPECT_TRUE(DiagnosticToJson(UserError("c", "/nodes/0", "m"))["node"].is_null())
      << "no document, no id";
}

}  // namespace
}  // namespace scellis
