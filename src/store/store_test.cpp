#include "store/store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

namespace scellis::store {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("scellis-store-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(StoreTest, NamesObjectsByTheHashOfTheirCanonicalForm) {
  auto s = Store::Open(root_.string());
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(fs::exists(root_));  // nothing is created until something is written
  auto a = s->Put(Json::parse(R"({"b": 1, "a": [1, 2]})"));
  auto b = s->Put(Json::parse(R"({"a": [1, 2], "b": 1})"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a.value(), b.value());
  EXPECT_EQ(a.value().rfind("sha256:", 0), 0u);
  EXPECT_EQ(a.value().size(), 7u + 64u);
  auto back = s->Get(a.value());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.value()["b"], 1);
  EXPECT_FALSE(s->Get("sha256:" + std::string(64, '0')).ok());
  EXPECT_FALSE(s->Get("not-an-id").ok());
}

TEST_F(StoreTest, IndexesByKindProfileAndKey) {
  auto s = Store::Open(root_.string());
  ASSERT_TRUE(s.ok());
  auto id = s->Put({{"x", 1}});
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(s->Index("receipt", "webgpu;device=A", "add", id.value()).ok());
  ASSERT_TRUE(s->Index("receipt", "webgpu;device=A", "add", id.value()).ok());  // idempotent
  EXPECT_EQ(s->Lookup("receipt", "webgpu;device=A", "add"), std::vector<std::string>{id.value()});
  EXPECT_TRUE(s->Lookup("receipt", "webgpu;device=B", "add").empty());
  EXPECT_TRUE(s->Lookup("receipt", "webgpu;device=A", "mul").empty());
  EXPECT_FALSE(s->Index("receipt", "p", "../escape", id.value()).ok());
  EXPECT_FALSE(s->Index("receipt", "p", "add", "sha256:" + std::string(64, 'a')).ok());
}

TEST_F(StoreTest, RefusesACorruptedObject) {
  auto s = Store::Open(root_.string());
  ASSERT_TRUE(s.ok());
  auto id = s->Put({{"trusted", true}});
  ASSERT_TRUE(id.ok());
  std::string hex = id.value().substr(7);
  fs::path file = root_ / "objects" / hex.substr(0, 2) / (hex + ".json");
  ASSERT_TRUE(fs::exists(file));
  std::ofstream(file) << R"({"trusted":false})";
  auto back = s->Get(id.value());
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.errors().front().code, "store-object-corrupt");
}

TEST_F(StoreTest, ReplaceKeepsOneEntryPerKey) {
  auto s = Store::Open(root_.string());
  ASSERT_TRUE(s.ok());
  auto a = s->Put({{"value", 1}});
  auto b = s->Put({{"value", 2}});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(s->Replace("cache", "p", "k", a.value()).ok());
  EXPECT_EQ(s->Lookup("cache", "p", "k"), std::vector<std::string>{a.value()});
  ASSERT_TRUE(s->Replace("cache", "p", "k", b.value()).ok());
  EXPECT_EQ(s->Lookup("cache", "p", "k"), std::vector<std::string>{b.value()});
  // The replaced object is no longer a root: gc removes it and keeps the current one.
  auto gc = s->Gc(nullptr, /*dry_run=*/false);
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->removed, std::vector<std::string>{a.value()});
  EXPECT_TRUE(s->Contains(b.value()));
}

TEST_F(StoreTest, WritesWithoutFlushingWhatReadsTheSame) {
  auto s = Store::Open(root_.string());
  ASSERT_TRUE(s.ok());
  const Store cache = s->WithoutFlush();
  auto blob = cache.PutBlob("spir-v words");
  auto object = cache.Put({{"blob", blob.value()}});
  ASSERT_TRUE(blob.ok() && object.ok());
  ASSERT_TRUE(cache.Replace("cache", "p", "k", object.value()).ok());
  // The flushing store reads it: same files, same names.
  EXPECT_EQ(s->GetBlob(blob.value()).value(), "spir-v words");
  EXPECT_EQ(s->Get(object.value()).value()["blob"], blob.value());
  EXPECT_EQ(s->Lookup("cache", "p", "k"), std::vector<std::string>{object.value()});
  EXPECT_TRUE(s->Verify().empty());
}

TEST_F(StoreTest, DiscardsOnlyCorruptFiles) {
  auto s = Store::Open(root_.string());
  ASSERT_TRUE(s.ok());
  auto sound = s->PutBlob("compiled code");
  auto bad = s->PutBlob("more compiled code");
  ASSERT_TRUE(sound.ok() && bad.ok());
  EXPECT_FALSE(s->DiscardIfCorrupt(sound.value()));
  EXPECT_TRUE(s->GetBlob(sound.value()).ok());
  std::string hex = bad.value().substr(7);
  fs::path file = root_ / "blobs" / hex.substr(0, 2) / hex;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "more compiled codE";
  EXPECT_TRUE(s->DiscardIfCorrupt(bad.value()));
  EXPECT_FALSE(fs::exists(file));
  // Stored again under its name, the value is whole again.
  ASSERT_TRUE(s->PutBlob("more compiled code").ok());
  EXPECT_EQ(s->GetBlob(bad.value()).value(), "more compiled code");
  EXPECT_FALSE(s->DiscardIfCorrupt("sha256:" + std::string(64, 'a')));  // absent
}

// Two runs recording at once (a worker thread and the caller, the Studio's requests) write the
// same content-addressed files: each write's sweep of stale temporaries must not cost the other
// its write.
TEST_F(StoreTest, ConcurrentWritersOfTheSameObjectsAllSucceed) {
  auto s = Store::Open(root_.string());
  ASSERT_TRUE(s.ok());
  std::vector<std::thread> writers;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) {
        const std::string bytes(4096, static_cast<char>('a' + i % 26));
        failures[t] += !s->PutBlob(bytes + std::to_string(i)).ok();
        failures[t] += !s->Put(Json{{"i", i}}).ok();
      }
    });
  for (std::thread& w : writers) w.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST(StoreRoot, ComesFromTheEnvironment) {
  const char* old = std::getenv("SCELLIS_STORE");
  std::string saved = old ? old : "";
  setenv("SCELLIS_STORE", "/tmp/somewhere", 1);
  EXPECT_EQ(Store::DefaultRoot(), "/tmp/somewhere");
  unsetenv("SCELLIS_STORE");
  if (const char* home = std::getenv("HOME"); home && *home) {
    EXPECT_EQ(Store::DefaultRoot(), std::string(home) + "/.local/share/scellis/store");
  }
  if (old) setenv("SCELLIS_STORE", saved.c_str(), 1);
}

TEST(StoreIds, IsIdAcceptsOnlyTheFormThePutsReturn) {
  EXPECT_TRUE(Store::IsId("sha256:" + std::string(64, 'a')));
  EXPECT_TRUE(Store::IsId("sha256:0123456789abcdef" + std::string(48, '0')));
  EXPECT_FALSE(Store::IsId("sha256:" + std::string(63, 'a')));
  EXPECT_FALSE(Store::IsId("sha256:" + std::string(65, 'a')));
  EXPECT_FALSE(Store::IsId("sha256:" + std::string(64, 'A'))) << "ids are lower case";
  EXPECT_FALSE(Store::IsId("sha256:../../" + std::string(58, 'a')));
  EXPECT_FALSE(Store::IsId("md5:" + std::string(64, 'a')));
  EXPECT_FALSE(Store::IsId(""));
}

}  // namespace
}  // namespace scellis::store
