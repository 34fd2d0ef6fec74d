#include "base/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
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

TEST(AtomicFile, FailedRenameRemovesTheTemporary) {
  // The target is a non-empty directory: the temporary is written, the rename fails.
  TempDir dir;
  fs::create_directory(dir / "target");
  ASSERT_TRUE(WriteFileAtomic(dir / "target/inside", "keep").ok());
  Status st = WriteFileAtomic(dir / "target", "data");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.first().code, "write-failed");
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"target"});
  EXPECT_EQ(*ReadFile(dir / "target/inside", 100), "keep");
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
  EXPECT_EQ(directory.errors()[0].code, "read-failed");
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
