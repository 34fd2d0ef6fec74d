// `scellis run` and `scellis conform --doc` with a document that defines its own kernel
// (examples/user_ops/jacobi5.json), on a WebGPU device (Dawn on SwiftShader) with a private store:
// the run is marked unconformed, conform proves the kernel and mints a receipt, the next run is
// marked conformed; a wrong kernel fails conform (exit 4) naming its first mismatching element.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/json_util.h"
#include "support/cli.h"

namespace scellis::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSwiftShaderIcd = "/usr/lib/chromium/vk_swiftshader_icd.json";

std::string Jacobi5() {
  return (fs::path(SCELLIS_SOURCE_DIR) / "examples" / "user_ops" / "jacobi5.json").string();
}

class UserOpsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
      setenv("VK_ICD_FILENAMES", kSwiftShaderIcd, 1);
    dir_ = MakeTempDir("scellis-user-ops-cli");
    setenv("SCELLIS_STORE", (dir_ / "store").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("SCELLIS_STORE");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(UserOpsCli, RunIsUnconformedUntilConformProvesTheKernel) {
  const std::vector<std::string> run = {"run", Jacobi5(), "--tier=prod", "--backend=webgpu",
                                        "--allow-software-adapter"};
  CliRun before = RunScellis(run);
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_NE(before.out.find("user op jacobi5: unconformed"), std::string::npos) << before.out;

  std::vector<std::string> as_json = run;
  as_json.push_back("--json");
  CliRun j = RunScellis(as_json);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(Json::parse(j.out)["receipts"]["user_ops"]["jacobi5"], "unconformed") << j.out;

  CliRun conform = RunScellis({"conform", "--ops=jacobi5", "--doc", Jacobi5(), "--tier=prod",
                               "--backend=webgpu", "--allow-software-adapter"});
  ASSERT_EQ(conform.exit_code, 0) << conform.out << conform.err;
  EXPECT_NE(conform.out.find("1/1 ops conform on this profile"), std::string::npos) << conform.out;

  CliRun after = RunScellis(run);
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_NE(after.out.find("user op jacobi5: conformed"), std::string::npos) << after.out;
}

TEST_F(UserOpsCli, AWrongKernelFailsConformWithItsFirstMismatch) {
  Json doc = Json::parse(ReadWholeFile(Jacobi5()));
  std::string wgsl = doc["ops"]["jacobi5"]["wgsl"];
  wgsl.replace(wgsl.find("u_at(index - cols)"), 18, "u_at(index - cols + 1u)");
  doc["ops"]["jacobi5"]["wgsl"] = wgsl;
  const std::string path = (dir_ / "wrong.json").string();
  std::ofstream(path) << doc.dump();
  CliRun r = RunScellis(
      {"conform", "--doc", path, "--tier=prod", "--backend=webgpu", "--allow-software-adapter"});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  // The first grid with a row above any element, 7x13, first differs at its second row's first
  // element, which reads u[0, 1] where it should read u[0, 0].
  EXPECT_NE(r.out.find("FAIL jacobi5/r2_7x13 [7, 13]:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first at [1, 0]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0/1 ops conform on this profile"), std::string::npos) << r.out;
}

TEST_F(UserOpsCli, ConformRefusesAnOpTheDocumentDoesNotDefine) {
  CliRun r = RunScellis({"conform", "--ops=jacobi7", "--doc", Jacobi5(), "--tier=prod"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("unknown-op"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace scellis::testing
