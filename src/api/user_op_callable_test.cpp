// A user op defined through the C++ API with its reference as a callable (api/user_ops.h): a
// five-point stencil whose reference is a C++ function. On the CPU reference the function runs in
// the op's place (values against an independent float64 computation); conformance on a WebGPU
// device (Dawn on SwiftShader) proves the WGSL against it and mints a receipt keyed on the
// signature, the WGSL and the reference's version string; a wrong kernel fails naming its first
// mismatching element; a function that throws, fails or returns another shape is a diagnostic.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>

#include "api/conform.h"
#include "api/run.h"
#include "api/user_ops.h"
#include "conform/cases.h"

namespace scellis::api {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSwiftShaderIcd = "/usr/lib/chromium/vk_swiftshader_icd.json";

constexpr const char* kWgsl = R"(fn stencil(index: u32) -> f32 {
  let rows = U_SHAPE_0;
  let cols = U_SHAPE_1;
  let r = index / cols;
  let c = index % cols;
  var s = 0.0;
  if (r > 0u) { s = s + u_at(index - cols); }
  if (r + 1u < rows) { s = s + u_at(index + cols); }
  if (c > 0u) { s = s + u_at(index - 1u); }
  if (c + 1u < cols) { s = s + u_at(index + 1u); }
  return 0.25 * s + w_at(index);
}
)";

// The stencil plus a second input, in float64 and rounded once: independent of the engine's
// kernels, and within the "tight" class of the f32 WGSL.
Result<HostTensor> StencilReference(std::span<const HostTensor> in) {
  const std::vector<int64_t> shape = in[0].type.sizes();
  const int64_t rows = shape.at(0), cols = shape.at(1);
  const std::vector<float> u = in[0].ToFloats(), w = in[1].ToFloats();
  auto at = [&](int64_t r, int64_t c) {
    return r < 0 || r >= rows || c < 0 || c >= cols ? 0.0 : double(u[r * cols + c]);
  };
  std::vector<float> out(u.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = static_cast<float>(
          0.25 * (at(r - 1, c) + at(r + 1, c) + at(r, c - 1) + at(r, c + 1)) + w[r * cols + c]);
  return HostTensor::FromFloats(in[0].type, out);
}

UserOpDefinition Stencil(ops::UserReference reference = StencilReference, std::string wgsl = kWgsl,
                         std::string version = "1") {
  return {.name = "stencil",
          .signature = {{"inputs", {{{"name", "u"}, {"rank", 2}}, {{"name", "w"}}}},
                        {"shape", "u"},
                        {"tolerance", "tight"},
                        {"wgsl", wgsl}},
          .reference = std::move(reference),
          .reference_version = std::move(version)};
}

// A document using the op by name, as it uses a built-in: no "ops" section.
Json Document(int64_t rows, int64_t cols) {
  return {{"version", 6},
          {"name", "callable stencil"},
          {"determinism", "prod"},
          {"nodes",
           {{{"id", 0}, {"op", "input"}, {"name", "u"}, {"shape", {rows, cols}}},
            {{"id", 1}, {"op", "input"}, {"name", "w"}, {"shape", {rows, cols}}},
            {{"id", 2}, {"op", "stencil"}, {"u", 0}, {"w", 1}}}},
          {"outputs", {{{"name", "out"}, {"id", 2}}}}};
}

std::vector<float> Random(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

std::string Describe(const std::vector<Diagnostic>& errors) {
  std::string out;
  for (const Diagnostic& d : errors) out += d.Format() + "\n";
  return out;
}

class UserOpCallable : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
      setenv("VK_ICD_FILENAMES", kSwiftShaderIcd, 1);
  }
  void SetUp() override {
    store_ = fs::temp_directory_path() / ("scellis-user-op-callable-" + std::to_string(::getpid()));
    fs::remove_all(store_);
  }
  void TearDown() override { fs::remove_all(store_); }

  Result<RunReport> RunOn(const std::string& backend, const UserOpDefinition& op) {
    auto table = DefineOps({op});
    if (!table.ok()) return table.status();
    RunOptions o;
    o.compile.lower.ops = *table;
    o.select = {.requested = backend, .allow_software_adapter = true};
    o.store_root = store_.string();
    o.feeds["u"] = HostTensor::FromFloats(MakeType({kRows, kCols}), u_);
    o.feeds["w"] = HostTensor::FromFloats(MakeType({kRows, kCols}), w_);
    return api::Run(Document(kRows, kCols).dump(), o);
  }

  Result<ConformReport> ConformOp(const UserOpDefinition& op) {
    auto table = DefineOps({op});
    if (!table.ok()) return table.status();
    ConformOptions o;
    o.tier = "prod";
    o.user_ops = *table;  // no `ops`: every op the table defines
    o.seed = seed_;
    o.select = {.requested = "webgpu", .allow_software_adapter = true};
    o.store_root = store_.string();
    return Conform(o);
  }

  static constexpr int64_t kRows = 9, kCols = 14;
  const uint64_t seed_ = std::random_device{}();
  std::vector<float> u_ = Random(kRows * kCols, seed_);
  std::vector<float> w_ = Random(kRows * kCols, seed_ + 1);
  fs::path store_;
};

TEST_F(UserOpCallable, TheCpuReferenceRunsTheCallable) {
  std::atomic<int> calls = 0;
  auto counted = [&](std::span<const HostTensor> in) {
    ++calls;
    return StencilReference(in);
  };
  auto run = RunOn("cpu", Stencil(counted));
  ASSERT_TRUE(run.ok()) << Describe(run.errors());
  EXPECT_EQ(calls.load(), 1);
  // Hand-written here, apart from the reference function: the stencil in float64.
  const std::vector<float> got = run->outputs.at(0).second.ToFloats();
  ASSERT_EQ(got.size(), u_.size());
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) {
      double s = 0;
      if (r > 0) s += u_[(r - 1) * kCols + c];
      if (r + 1 < kRows) s += u_[(r + 1) * kCols + c];
      if (c > 0) s += u_[r * kCols + c - 1];
      if (c + 1 < kCols) s += u_[r * kCols + c + 1];
      ASSERT_NEAR(got[r * kCols + c], 0.25 * s + w_[r * kCols + c], 1e-6) << r << ", " << c;
    }
  }
}

TEST_F(UserOpCallable, ConformsOnTheDeviceAndItsReceiptNamesTheVersion) {
  auto before = RunOn("webgpu", Stencil());
  ASSERT_TRUE(before.ok()) << Describe(before.errors());
  ASSERT_TRUE(before->receipts);
  EXPECT_EQ(before->receipts->ToJson()["user_ops"]["stencil"], "unconformed");

  auto report = ConformOp(Stencil());
  ASSERT_TRUE(report.ok()) << Describe(report.errors());
  ASSERT_EQ(report->groups.size(), 1u);
  const conform::GroupResult& g = report->groups[0];
  std::string failures;
  for (const conform::CaseResult& c : g.cases)
    if (!c.passed()) failures += c.id + ": " + c.Failure() + "\n";
  EXPECT_TRUE(g.passed()) << failures;
  EXPECT_EQ(g.cases.size(), 6u);  // the rank-2 edge sizes
  EXPECT_EQ(report->receipts.count("stencil"), 1u);

  auto after = RunOn("webgpu", Stencil());
  ASSERT_TRUE(after.ok()) << Describe(after.errors());
  EXPECT_EQ(after->receipts->ToJson()["user_ops"]["stencil"], "conformed");
  // The device's values are the stencil's too.
  const std::vector<float> got = after->outputs.at(0).second.ToFloats();
  auto want = StencilReference(
      std::vector<HostTensor>{HostTensor::FromFloats(MakeType({kRows, kCols}), u_),
                              HostTensor::FromFloats(MakeType({kRows, kCols}), w_)});
  const std::vector<float> expected = want->ToFloats();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-5) << i;

  // Another reference version is another definition: unconformed until conform runs again.
  auto other = RunOn("webgpu", Stencil(StencilReference, kWgsl, "2"));
  ASSERT_TRUE(other.ok()) << Describe(other.errors());
  EXPECT_EQ(other->receipts->ToJson()["user_ops"]["stencil"], "unconformed");
}

TEST_F(UserOpCallable, AWrongKernelFailsNamingItsFirstMismatch) {
  std::string wrong = kWgsl;
  const std::string right = "u_at(index + 1u)";
  wrong.replace(wrong.find(right), right.size(), "u_at(index + 2u)");
  auto report = ConformOp(Stencil(StencilReference, wrong));
  ASSERT_TRUE(report.ok()) << Describe(report.errors());
  const conform::GroupResult& g = report->groups.at(0);
  EXPECT_FALSE(g.passed());
  EXPECT_TRUE(report->receipts.empty());
  // A 1x9 row first differs at its first element, which reads u[0, 2] for u[0, 1].
  const conform::CaseResult& row = g.cases.at(1);
  ASSERT_EQ(row.id, "stencil/r2_1x9");
  EXPECT_FALSE(row.passed());
  EXPECT_EQ(row.first_bad_at, "[0, 0]");
  auto table = DefineOps({Stencil()});
  ASSERT_TRUE(table.ok());
  const runtime::Feeds feeds =
      conform::MakeFeeds(conform::CasesFor("stencil", **table).at(1), seed_);
  const std::vector<float> u = feeds.at("u").ToFloats(), w = feeds.at("w").ToFloats();
  EXPECT_NEAR(row.comparison.first_want, 0.25 * u[1] + w[0], 1e-6);
  EXPECT_NEAR(row.comparison.first_got, 0.25 * u[2] + w[0], 1e-6);
  EXPECT_NE(row.Failure().find("first at [0, 0]"), std::string::npos) << row.Failure();
}

TEST_F(UserOpCallable, AFailingCallableIsADiagnostic) {
  auto throws = RunOn("cpu", Stencil([](std::span<const HostTensor>) -> Result<HostTensor> {
                        throw std::runtime_error("no data for this size");
                      }));
  ASSERT_FALSE(throws.ok());
  EXPECT_EQ(throws.errors()[0].code, "user-reference-failed");
  EXPECT_EQ(throws.errors()[0].pointer, "/ops/stencil/reference");
  EXPECT_NE(throws.errors()[0].message.find("no data for this size"), std::string::npos);

  auto fails = RunOn("cpu", Stencil([](std::span<const HostTensor>) -> Result<HostTensor> {
                       return UserError("my-own-code", "", "cannot compute that");
                     }));
  ASSERT_FALSE(fails.ok());
  EXPECT_EQ(fails.errors()[0].code, "user-reference-failed");
  EXPECT_NE(fails.errors()[0].message.find("cannot compute that"), std::string::npos);

  auto shape = RunOn("cpu", Stencil([](std::span<const HostTensor> in) -> Result<HostTensor> {
                       return HostTensor::Zeros(MakeType({in[0].type.sizes()[0]}));
                     }));
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.errors()[0].code, "user-reference-shape");
  EXPECT_NE(shape.errors()[0].message.find("[9, 14]"), std::string::npos)
      << shape.errors()[0].message;
}

TEST_F(UserOpCallable, DefinitionsAreCheckedAsADocumentsAre) {
  UserOpDefinition relu = Stencil();
  relu.name = "relu";
  auto taken = DefineOps({relu});
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.errors()[0].code, "op-name-taken");

  UserOpDefinition both = Stencil();
  both.signature["reference"] = {{"nodes", Json::array()}, {"output", 0}};
  auto two = DefineOps({both});
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.errors()[0].pointer, "/ops/stencil/reference");

  auto none = DefineOps({Stencil(nullptr)});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.errors()[0].code, "missing-reference");

  // A gradient of an op defined through the API is a WGSL and a callable
  // (UserOpDefinition::gradients; user_op_callable_grad_test.cpp): a graph reference written into
  // the signature is refused by name at the field, not ignored.
  UserOpDefinition with_gradient = Stencil();
  with_gradient.signature["gradient"] = {
      {"u", {{"wgsl", kWgsl}, {"reference", {{"nodes", Json::array()}, {"output", 0}}}}}};
  auto gradient = DefineOps({with_gradient});
  ASSERT_FALSE(gradient.ok());
  EXPECT_EQ(gradient.errors()[0].pointer, "/ops/stencil/gradient/u/reference");
}

}  // namespace
}  // namespace scellis::api
