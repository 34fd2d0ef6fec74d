// The command line is checked whole before anything runs: a bad flag is `bad-flag` (exit 2) with
// nothing on stdout, no banner, no probe; outputs are regular files that are never an input, and a
// failing device leaves no output file behind.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/json_util.h"
#include "cli_test.h"

namespace scellis::testing {
namespace {

namespace fs = std::filesystem;

// An allocation the device cannot satisfy (injected into the device's Nth buffer: the first, or
// one made after the plan is resident) fails the run with the device's named error before any
// result is written: no --out file, whole or half.
TEST(CliFaults, AnAllocationFailureLeavesNoOutputFile) {
  setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 0);
  for (const char* nth : {"1", "3"}) {
    SCOPED_TRACE(std::string("allocation ") + nth);
    const std::filesystem::path dir = MakeTempDir("scellis-fault");
    const std::filesystem::path out = dir / "result.json";
    setenv("SCELLIS_FAULT_ALLOCATION", nth, 1);
    CliRun r = RunScellis({"run", Example("life_steps.json"), "--tier=prod", "--backend=webgpu",
                           "--allow-software-adapter", "--steps", "4", "--out", out.string()});
    unsetenv("SCELLIS_FAULT_ALLOCATION");
    EXPECT_TRUE(r.exited) << "killed by signal " << r.signal;
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("gpu-out-of-memory"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out));
    std::filesystem::remove_all(dir);
  }
}

TEST_F(Cli, BadFlagsAreRefusedBeforeAnyWork) {
  const std::string doc = Example("seed_mul_relu.json");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"run", doc, "--tier=prod", "--backend=cpu", "--steps", "0"},
           {"run", doc, "--tier=prod", "--steps", "0"},
           {"train", Example("fashion_mlp.json"), "--epochs", "-3"},
           {"train", Example("fashion_mlp.json"), "--max-steps", "0"},
           {"plan", doc, "--tier=prod", "--budget=0.5"},
           {"validate", doc, "--tier=prod", "--bind", "=5"},
           {"train", Example("fashion_mlp.json"), "--epoch", "3"}}) {
    CliRun r = RunScellis(args);
    std::string joined;
    for (const std::string& a : args) joined += a + " ";
    ASSERT_TRUE(r.exited) << joined;
    EXPECT_EQ(r.exit_code, 2) << joined << r.err;
    EXPECT_EQ(r.out, "") << joined;
    EXPECT_EQ(r.err.rfind("error[bad-flag]", 0), 0u) << joined << r.err;
    EXPECT_EQ(r.err.find("CPU REFERENCE"), std::string::npos) << joined << r.err;
  }
  // The word after an unknown flag is taken for its value, not refused a second time.
  CliRun typo = RunScellis({"train", Example("fashion_mlp.json"), "--epoch", "3"});
  EXPECT_NE(typo.err.find("did you mean --epochs?"), std::string::npos) << typo.err;
  EXPECT_EQ(typo.err.find("unexpected argument"), std::string::npos) << typo.err;
  // With --json the refusal itself is the JSON on stdout.
  CliRun j = RunScellis({"run", doc, "--json", "--steps", "0"});
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_EQ(Json::parse(j.out)["diagnostics"][0]["code"], "bad-flag") << j.out;
}

TEST_F(Cli, ThreadsAboveTheMachineRun) {
  CliRun r = RunScellis({"run", Example("seed_mul_relu.json"), "--tier=prod", "--backend=cpu",
                         "--threads", "1000000"});
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note[threads-capped]"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("values: shape [3] f32 [0, 60, 120]"), std::string::npos) << r.out;
}

TEST_F(Cli, OutputsAreRegularFilesAndNeverAnInput) {
  std::string doc = Write("doc.json", ReadWholeFile(Example("seed_mul_relu.json")));
  const std::string original = ReadWholeFile(doc);
  auto refused = [&](const std::vector<std::string>& args, const std::string& needle) {
    CliRun r = RunScellis(args);
    EXPECT_TRUE(r.exited);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("error[bad-output-path]"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("CPU REFERENCE"), std::string::npos) << r.err;  // refused up front
  };
  const std::vector<std::string> run = {"run", doc, "--tier=prod", "--backend=cpu", "--out"};
  auto with = [](std::vector<std::string> v, const std::string& last) {
    v.push_back(last);
    return v;
  };

  refused(with(run, "/dev/null"), "character device");
  struct stat st;
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));

  fs::create_symlink(dir_ / "elsewhere.json", dir_ / "link.json");
  refused(with(run, (dir_ / "link.json").string()), "symbolic link");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere.json"));

  // The document itself, by its name, another spelling, a symlink and a hard link.
  fs::create_symlink(doc, dir_ / "doc-link.json");
  fs::create_hard_link(doc, dir_ / "doc-hard.json");
  refused(with(run, doc), "same file as the document");
  refused(with(run, (dir_ / "." / "doc.json").string()), "same file as the document");
  refused(with({"run", (dir_ / "doc-link.json").string(), "--tier=prod", "--out"}, doc),
          "same file as the document");
  refused(with(run, (dir_ / "doc-hard.json").string()), "same file as the document");
  EXPECT_EQ(ReadWholeFile(doc), original);

  // Training: no output over the document, the checkpoint resumed from, or another output.
  std::string ck = Write("ck.safetensors", "not read: refused before");
  std::string train_doc = Example("fashion_mlp.json");
  refused({"train", train_doc, "--resume", ck, "--checkpoint", ck}, "same file as --resume");
  refused({"train", train_doc, "--init-out", train_doc}, "same file as the document");
  refused({"train", train_doc, "--checkpoint", (dir_ / "a").string(), "--losses-out",
           (dir_ / "." / "a").string()},
          "both name");
  refused({"train", train_doc, "--losses-out", "/dev/null"}, "character device");
  EXPECT_EQ(ReadWholeFile(ck), "not read: refused before");

  // A regular file is still replaced, atomically.
  std::string out = Write("out.json", "old");
  CliRun ok = RunScellis(with(run, out));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(Json::parse(ReadWholeFile(out))["backend"], "cpu");
}

TEST_F(Cli, DocumentThatIsNotARegularFileIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((dir_ / "doc.fifo").c_str(), 0644), 0);
  for (const std::string& path :
       {(dir_ / "doc.fifo").string(), std::string("/dev/zero"), dir_.string()}) {
    CliRun r = RunScellis({"validate", path, "--tier=prod"});
    EXPECT_TRUE(r.exited);
    EXPECT_EQ(r.exit_code, 2) << path << r.err;
    EXPECT_NE(r.err.find("error[not-a-regular-file]"), std::string::npos) << path << r.err;
  }
}

}  // namespace
}  // namespace scellis::testing
