// A user-defined kernel end to end: a five-point stencil whose WGSL is the document's and whose
// reference is a graph of built-in ops (examples/user_ops/jacobi5.json). It runs inside a repeated
// document on the CPU reference and on a WebGPU device (Dawn on SwiftShader), equal to the same
// document written with built-ins and to an independent float64 computation; it is marked
// unconformed until `conform` proves it, conformed after; a deliberately wrong kernel fails
// conformance naming its first mismatching element; WGSL that does not compile is a user
// diagnostic at the user's own line; a reference that computes another shape is refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "api/conform.h"
#include "api/run.h"
#include "conform/cases.h"

namespace scellis::api {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSwiftShaderIcd = "/usr/lib/chromium/vk_swiftshader_icd.json";
constexpr int64_t kRows = 33, kCols = 47;
constexpr int kRepeat = 16;

Json Example() {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/user_ops/jacobi5.json");
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

// The example with the user op's node replaced by its reference's nodes: the same computation
// written with built-ins only.
Json WithBuiltins() {
  Json j = Example();
  const Json reference = j["ops"]["jacobi5"]["reference"];
  j.erase("ops");
  j["version"] = 5;
  Json nodes = Json::array({j["nodes"][0]});
  for (const Json& n : reference["nodes"]) {
    if (n["op"] == "input") continue;
    Json m = n;
    m["id"] = n["id"].get<int>() + 100;
    for (const char* port : {"a", "b"})
      if (m.contains(port)) m[port] = m[port].get<int>() == 0 ? 0 : m[port].get<int>() + 100;
    nodes.push_back(m);
  }
  j["nodes"] = nodes;
  j["outputs"][0]["id"] = reference["output"].get<int>() + 100;
  return j;
}

uint64_t Seed() {
  static const uint64_t seed = [] {
    const char* s = std::getenv("SCELLIS_USER_OPS_SEED");
    uint64_t v = s && *s ? std::strtoull(s, nullptr, 10) : std::random_device{}();
    std::cout << "user-ops seed " << v << " (replay with SCELLIS_USER_OPS_SEED=" << v << ")\n";
    return v;
  }();
  return seed;
}

std::vector<float> RandomGrid() {
  std::mt19937_64 rng(Seed());
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> grid(kRows * kCols);
  for (float& v : grid) v = u(rng);
  return grid;
}

// `sweeps` Jacobi sweeps, zero outside the grid, in float64: independent of the engine.
std::vector<double> JacobiInDouble(const std::vector<float>& start, int sweeps = kRepeat) {
  std::vector<double> u(start.begin(), start.end()), next(u.size());
  auto at = [&](int64_t r, int64_t c) {
    return r < 0 || r >= kRows || c < 0 || c >= kCols ? 0.0 : u[r * kCols + c];
  };
  for (int s = 0; s < sweeps; ++s) {
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t c = 0; c < kCols; ++c)
        next[r * kCols + c] = 0.25 * (at(r - 1, c) + at(r + 1, c) + at(r, c - 1) + at(r, c + 1));
    std::swap(u, next);
  }
  return u;
}

std::string Describe(const std::vector<Diagnostic>& errors) {
  std::string out;
  for (const Diagnostic& d : errors) out += d.Format() + "\n";
  return out;
}

class UserOps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
      setenv("VK_ICD_FILENAMES", kSwiftShaderIcd, 1);
  }
  void SetUp() override {
    store_ = fs::temp_directory_path() / ("scellis-user-ops-" + std::to_string(::getpid()));
    fs::remove_all(store_);
  }
  void TearDown() override { fs::remove_all(store_); }

  Result<RunReport> RunOn(const std::string& backend, const Json& doc) {
    RunOptions o;
    o.select = {.requested = backend, .allow_software_adapter = true};
    o.store_root = store_.string();
    o.feeds["u"] = runtime::HostTensor::FromFloats(MakeType({kRows, kCols}), grid_);
    return api::Run(doc.dump(), o);
  }

  Result<ConformReport> ConformDoc(const Json& doc) {
    ConformOptions o;
    o.tier = "prod";
    o.ops = {"jacobi5"};
    o.seed = Seed();
    o.document = doc.dump();
    o.select = {.requested = "webgpu", .allow_software_adapter = true};
    o.store_root = store_.string();
    return Conform(o);
  }

  fs::path store_;
  std::vector<float> grid_ = RandomGrid();
};

TEST_F(UserOps, RunsOnTheReferenceAsItsBuiltInGraphDoes) {
  auto user = RunOn("cpu", Example());
  ASSERT_TRUE(user.ok()) << Describe(user.errors());
  auto builtin = RunOn("cpu", WithBuiltins());
  ASSERT_TRUE(builtin.ok()) << Describe(builtin.errors());
  const std::vector<float> got = user->outputs.at(0).second.ToFloats();
  const std::vector<float> want = builtin->outputs.at(0).second.ToFloats();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "at " << i;
  const std::vector<double> exact = JacobiInDouble(grid_);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], exact[i], 1e-5) << "at " << i;
}

// The Studio's format: the op defined beside the blocks, two blocks of it wired in a chain.
TEST_F(UserOps, RunsInAWorkflow) {
  const Json definition = Example()["ops"]["jacobi5"];
  Json workflow = {
      {"format", "scellis.workflow/1"},
      {"name", "two sweeps"},
      {"determinism", "prod"},
      {"dims", {{"H", kRows}, {"W", kCols}}},
      {"ops", {{"jacobi5", definition}}},
      {"nodes",
       {{{"id", "u"}, {"type", "input"}, {"params", {{"name", "u"}, {"shape", {"H", "W"}}}}},
        {{"id", "first"}, {"type", "jacobi5"}},
        {{"id", "second"}, {"type", "jacobi5"}}}},
      {"wires", {{{"from", "u"}, {"to", "first.u"}}, {{"from", "first"}, {"to", "second.u"}}}},
      {"outputs", {{{"name", "out"}, {"from", "second"}}}}};
  const std::vector<double> exact = JacobiInDouble(grid_, 2);
  for (const char* backend : {"cpu", "webgpu"}) {
    auto run = RunOn(backend, workflow);
    ASSERT_TRUE(run.ok()) << backend << ": " << Describe(run.errors());
    const std::vector<float> got = run->outputs.at(0).second.ToFloats();
    ASSERT_EQ(got.size(), exact.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], exact[i], 1e-6) << backend << " at " << i;
  }
}

TEST_F(UserOps, RunsOnTheDeviceUnconformedThenConformed) {
  auto before = RunOn("webgpu", Example());
  ASSERT_TRUE(before.ok()) << Describe(before.errors());
  ASSERT_EQ(before->backend, "webgpu");
  const std::vector<float> got = before->outputs.at(0).second.ToFloats();
  const std::vector<double> exact = JacobiInDouble(grid_);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], exact[i], 1e-5) << "at " << i;
  auto builtin = RunOn("webgpu", WithBuiltins());
  ASSERT_TRUE(builtin.ok()) << Describe(builtin.errors());
  const std::vector<float> want = builtin->outputs.at(0).second.ToFloats();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6) << "at " << i;

  ASSERT_TRUE(before->receipts);
  EXPECT_EQ(before->receipts->ToJson()["user_ops"]["jacobi5"], "unconformed");
  EXPECT_NE(before->receipts->Line().find("user op jacobi5: unconformed"), std::string::npos)
      << before->receipts->Line();

  auto conformed = ConformDoc(Example());
  ASSERT_TRUE(conformed.ok()) << Describe(conformed.errors());
  ASSERT_EQ(conformed->groups.size(), 1u);
  const conform::GroupResult& g = conformed->groups[0];
  std::string failures;
  for (const conform::CaseResult& c : g.cases)
    if (!c.passed()) failures += c.id + ": " + c.Failure() + "\n";
  EXPECT_TRUE(g.passed()) << failures;
  EXPECT_EQ(g.cases.size(),
            conform::CasesFor("jacobi5", *doc::Parse(Example().dump())->ops).size());
  EXPECT_EQ(conformed->receipts.count("jacobi5"), 1u);

  auto after = RunOn("webgpu", Example());
  ASSERT_TRUE(after.ok()) << Describe(after.errors());
  ASSERT_TRUE(after->receipts);
  EXPECT_EQ(after->receipts->ToJson()["user_ops"]["jacobi5"], "conformed");

  // The receipt is for this definition: the same WGSL under another definition is unconformed.
  Json changed = Example();
  changed["ops"]["jacobi5"]["tolerance"] = "default";
  auto other = RunOn("webgpu", changed);
  ASSERT_TRUE(other.ok()) << Describe(other.errors());
  EXPECT_EQ(other->receipts->ToJson()["user_ops"]["jacobi5"], "unconformed");
}

TEST_F(UserOps, AWrongKernelFailsConformanceNamingItsFirstMismatch) {
  Json wrong = Example();
  std::string wgsl = wrong["ops"]["jacobi5"]["wgsl"];
  const std::string right = "u_at(index + 1u)";
  ASSERT_NE(wgsl.find(right), std::string::npos);
  wgsl.replace(wgsl.find(right), right.size(), "u_at(index + 2u)");  // off by one
  wrong["ops"]["jacobi5"]["wgsl"] = wgsl;
  auto report = ConformDoc(wrong);
  ASSERT_TRUE(report.ok()) << Describe(report.errors());
  const conform::GroupResult& g = report->groups.at(0);
  EXPECT_FALSE(g.passed());
  EXPECT_TRUE(report->receipts.empty());
  // A 1x1 grid has no right neighbour to get wrong; a 1x9 row first differs at its first element,
  // which reads u[0, 2] where it should read u[0, 1].
  const conform::CaseResult& one = g.cases.at(0);
  EXPECT_EQ(one.id, "jacobi5/r2_1x1");
  EXPECT_TRUE(one.passed()) << one.Failure();
  const conform::CaseResult& row = g.cases.at(1);
  ASSERT_EQ(row.id, "jacobi5/r2_1x9");
  EXPECT_FALSE(row.passed());
  EXPECT_EQ(row.first_bad_at, "[0, 0]");
  const auto cases = conform::CasesFor("jacobi5", *doc::Parse(wrong.dump())->ops);
  const std::vector<float> u = conform::MakeFeeds(cases.at(1), Seed()).at("u").ToFloats();
  EXPECT_EQ(row.comparison.first_want, 0.25f * u[1]);
  EXPECT_EQ(row.comparison.first_got, 0.25f * u[2]);
  char text[96];
  std::snprintf(text, sizeof text, "first at [0, 0]: got %.3g, want %.3g", 0.25f * u[2],
                0.25f * u[1]);
  EXPECT_NE(row.Failure().find(text), std::string::npos) << row.Failure();
}

TEST_F(UserOps, WgslThatDoesNotCompileIsNamedAtTheUsersLine) {
  Json bad = Example();
  std::string wgsl = bad["ops"]["jacobi5"]["wgsl"];
  // Line 4 of the user's WGSL reads a constant that does not exist.
  const std::string cols = "let cols = U_SHAPE_1;";
  ASSERT_NE(wgsl.find(cols), std::string::npos);
  wgsl.replace(wgsl.find(cols), cols.size(), "let cols = U_SHAPE_7;");
  bad["ops"]["jacobi5"]["wgsl"] = wgsl;
  auto run = RunOn("webgpu", bad);
  ASSERT_FALSE(run.ok());
  const Diagnostic& d = run.errors().front();
  EXPECT_EQ(d.code, "user-wgsl-invalid") << d.Format();
  EXPECT_EQ(d.kind, ErrorKind::kUser);
  EXPECT_EQ(d.pointer, "/ops/jacobi5/wgsl");
  EXPECT_NE(d.message.find("line 4:"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("|   let cols = U_SHAPE_7;"), std::string::npos) << d.message;
}

TEST_F(UserOps, AReferenceOfAnotherShapeIsRefused) {
  Json j = Example();
  Json& nodes = j["ops"]["jacobi5"]["reference"]["nodes"];
  nodes.push_back({{"id", 10}, {"op", "sum"}, {"a", 9}, {"axis", 0}});
  j["ops"]["jacobi5"]["reference"]["output"] = 10;
  auto run = RunOn("cpu", j);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.errors().front().code, "user-reference-mismatch") << Describe(run.errors());
  EXPECT_EQ(run.errors().front().pointer, "/ops/jacobi5/reference");
  EXPECT_NE(run.errors().front().message.find("[47]"), std::string::npos)
      << run.errors().front().message;

  // The declared rank is checked where the op is used.
  Json flat = Example();
  flat["nodes"][0]["shape"] = {kRows * kCols};
  RunOptions o;
  o.select = {.requested = "cpu"};
  auto r = api::Run(flat.dump(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().code, "bad-rank") << Describe(r.errors());
}

}  // namespace
}  // namespace scellis::api
