#include "base/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace scellis {
namespace {

namespace fs = std::filesystem;

// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "scellis-test-XXXXXX").string();
    const char* made = ::mkdtemp(tmpl.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path_)) names.push_back(e.path().filename());
    return names;
  }

 private:
  std::string path_;
};

TEST(AtomicFile, WritesAndReadsBack) {
  TempDir dir;
  std::string bytes("header\0\x01\xff tail", 14);
  ASSERT_TRUE(WriteFileAtomic(dir / "a.bin", bytes).ok());
  Result<std::string> back = ReadFile(dir / "a.bin", 1 << 20);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"a.bin"});  // no temporary left behind
}

TEST(AtomicFile, ReplacesAnExistingFileWhole) {
  TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir / "a.txt", std::string(100000, 'x')).ok());
  ::chmod((dir / "a.txt").c_str(), 0600);
  ASSERT_TRUE(WriteFileAtomic(dir / "a.txt", "short").ok());
  EXPECT_EQ(*ReadFile(dir / "a.txt", 1 << 20), "short");
  struct stat st;
  ASSERT_EQ(::stat((dir / "a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // the replaced file's permissions carry over
  ASSERT_TRUE(WriteFileAtomic(dir / "a.txt", "").ok());
  EXPECT_EQ(*ReadFile(dir / "a.txt", 1 << 20), "");
  EXPECT_EQ(dir.Entries().size(), 1u);
}

TEST(AtomicFile, NewFilesAre0644) {
  TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir / "new", "x").ok());
  struct stat st;
  ASSERT_EQ(::stat((dir / "new").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(AtomicFile, WriteIntoMissingDirectoryFailsAndLeavesNothing) {
  TempDir dir;
  Status st = WriteFileAtomic(dir / "missing/a.bin", "data");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.first().code, "write-failed");
  EXPECT_NE(st.first().message.find("missing/a.bin"), std::string::npos);
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(AtomicFile, ExistingDirectoryIsNotReplaced) {
  TempDir dir;
  fs::create_directory(dir / "target");
  ASSERT_TRUE(WriteFileAtomic(dir / "target/inside", "keep").ok());
  Status st = WriteFileAtomic(dir / "target", "data");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.first().code, "bad-output-path");
  EXPECT_NE(st.first().message.find("a directory"), std::string::npos) << st.first().message;
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"target"});  // no temporary either
  EXPECT_EQ(*ReadFile(dir / "target/inside", 100), "keep");
}

TEST(AtomicFile, DeviceNodeIsNeverReplaced) {
  // Replacing /dev/null by a regular file (possible for root) would break the whole machine.
  struct stat before;
  ASSERT_EQ(::lstat("/dev/null", &before), 0);
  ASSERT_TRUE(S_ISCHR(before.st_mode));
  Status st = WriteFileAtomic("/dev/null", "data");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.first().code, "bad-output-path");
  EXPECT_NE(st.first().message.find("character device"), std::string::npos);
  struct stat after;
  ASSERT_EQ(::lstat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(CheckOutputPath("/dev/null").first().code, "bad-output-path");
}

TEST(AtomicFile, FifoTargetIsRefused) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0644), 0);
  Status st = WriteFileAtomic(dir / "pipe", "data");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.first().code, "bad-output-path");
  EXPECT_TRUE(fs::is_fifo(dir / "pipe"));
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"pipe"});
}

TEST(AtomicFile, SymlinkTargetIsRefusedAndItsFileKept) {
  // The policy: a link is neither replaced nor written through, whether or not it dangles.
  TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir / "real", "original").ok());
  fs::create_symlink(dir / "real", dir / "link");
  fs::create_symlink(dir / "nowhere", dir / "dangling");
  for (const char* name : {"link", "dangling"}) {
    Status st = WriteFileAtomic(dir / name, "new");
    ASSERT_FALSE(st.ok()) << name;
    EXPECT_EQ(st.first().code, "bad-output-path");
    EXPECT_NE(st.first().message.find("symbolic link"), std::string::npos);
    EXPECT_TRUE(fs::is_symlink(dir / name));
  }
  EXPECT_EQ(*ReadFile(dir / "real", 100), "original");
  EXPECT_FALSE(fs::exists(dir / "nowhere"));
  EXPECT_TRUE(CheckOutputPath(dir / "real").ok());
  EXPECT_TRUE(CheckOutputPath(dir / "absent").ok());
}

TEST(AtomicFile, StaleTemporariesOfTheSameTargetAreRemoved) {
  // A write killed between creating its temporary and renaming it leaves `.NAME.tmp.XXXXXX`.
  TempDir dir;
  for (const char* name : {".ckpt.safetensors.tmp.a1B2c3", ".ckpt.safetensors.tmp.ZZZZZZ"})
    std::ofstream(dir / name) << "torn";
  // Look-alikes that are not exactly our pattern for this target stay.
  const std::vector<std::string> kept = {
      ".ckpt.safetensors.tmp.abc",        // too short
      ".ckpt.safetensors.tmp.abc-12",     // not mkostemp's alphabet
      ".other.safetensors.tmp.a1B2c3",    // another target's
      "ckpt.safetensors.tmp.a1B2c3",      // not hidden
      ".ckpt.safetensors.tmp.a1B2c3.bak"  // longer
  };
  for (const std::string& name : kept) std::ofstream(dir / name) << "keep";
  fs::create_directory(dir / ".ckpt.safetensors.tmp.dirdir");  // not a regular file: kept

  ASSERT_TRUE(WriteFileAtomic(dir / "ckpt.safetensors", "whole").ok());
  std::vector<std::string> entries = dir.Entries();
  std::sort(entries.begin(), entries.end());
  std::vector<std::string> expected = kept;
  expected.push_back("ckpt.safetensors");
  expected.push_back(".ckpt.safetensors.tmp.dirdir");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(entries, expected);
  EXPECT_EQ(*ReadFile(dir / "ckpt.safetensors", 100), "whole");
}

TEST(AtomicFile, SameFileComparesInodesNotStrings) {
  TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir / "a", "x").ok());
  ASSERT_TRUE(WriteFileAtomic(dir / "b", "x").ok());
  fs::create_directory(dir / "sub");
  fs::create_symlink(dir / "a", dir / "sub/link");
  fs::create_hard_link(dir / "a", dir / "hard");
  EXPECT_TRUE(SameFile(dir / "a", dir.path() + "/sub/../a"));
  EXPECT_TRUE(SameFile(dir / "a", dir / "sub/link"));
  EXPECT_TRUE(SameFile(dir / "a", dir / "hard"));
  EXPECT_FALSE(SameFile(dir / "a", dir / "b"));  // same content, another file
  EXPECT_FALSE(SameFile(dir / "a", dir / "missing"));
}

TEST(AtomicFile, PathEndingInSlashIsRejected) {
  TempDir dir;
  Status st = WriteFileAtomic(dir.path() + "/", "data");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.first().code, "write-failed");
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(AtomicFile, ReadFileDiagnostics) {
  TempDir dir;
  Result<std::string> missing = ReadFile(dir / "nope", 10);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.errors()[0].code, "file-not-found");

  ASSERT_TRUE(WriteFileAtomic(dir / "ten", "0123456789").ok());
  EXPECT_TRUE(ReadFile(dir / "ten", 10).ok());  // exactly at the cap
  Result<std::string> big = ReadFile(dir / "ten", 9);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.errors()[0].code, "file-too-large");

  Result<std::string> directory = ReadFile(dir.path(), 10);
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.errors()[0].code, "not-a-regular-file");
}

TEST(AtomicFile, ReadRefusesAFifoWithoutBlocking) {
  // Nobody ever opens the other end: a blocking open would wait forever.
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0644), 0);
  Result<std::string> r = ReadFile(dir / "pipe", 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].code, "not-a-regular-file");
  EXPECT_NE(r.errors()[0].message.find("FIFO"), std::string::npos);
}

TEST(AtomicFile, ReadRefusesDevicesBeforeReading) {
  // /dev/zero never ends; /dev/null is empty: both are refused for what they are, not their bytes.
  for (const char* device : {"/dev/zero", "/dev/null"}) {
    Result<std::string> r = ReadFile(device, uint64_t{1} << 40);
    ASSERT_FALSE(r.ok()) << device;
    EXPECT_EQ(r.errors()[0].code, "not-a-regular-file") << device;
    EXPECT_NE(r.errors()[0].message.find("character device"), std::string::npos);
  }
}

TEST(AtomicFile, ReadFollowsSymlinksToRegularFiles) {
  TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir / "real", "content").ok());
  fs::create_symlink(dir / "real", dir / "link");
  EXPECT_EQ(*ReadFile(dir / "link", 100), "content");
}

TEST(AtomicFile, ReadCapHoldsForFilesWithoutASize) {
  // /proc files report size 0 but have content: the cap is enforced while reading.
  if (!fs::exists("/proc/self/status")) GTEST_SKIP() << "no /proc";
  Result<std::string> capped = ReadFile("/proc/self/status", 8);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.errors()[0].code, "file-too-large");
  EXPECT_TRUE(ReadFile("/proc/self/status", 1 << 20).ok());
}

}  // namespace
}  // namespace scellis
