// The persistent kernel cache against real Dawn on SwiftShader: what one device stores, a second
// device of the same profile reads; a tampered value is refused and recompiled; the off switch
// stores nothing.
#include "runtime/backends/webgpu/kernel_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "base/sha256.h"
#include "runtime/backends/webgpu/device.h"

namespace scellis::runtime::webgpu {
namespace {
namespace fs = std::filesystem;

constexpr const char* kSwiftShaderIcd = "/usr/lib/chromium/vk_swiftshader_icd.json";

// y = x * x + bias, with the bias in the source so that every test compiles a kernel of its own
// (and a test's first device finds nothing that another test stored).
std::string Kernel(float bias) {
  return R"(
@group(0) @binding(0) var<storage, read> x : array<f32>;
@group(0) @binding(1) var<storage, read_write> y : array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id : vec3<u32>) {
  if (id.x < arrayLength(&y)) {
    y[id.x] = x[id.x] * x[id.x] + )" +
         std::to_string(bias) + R"(;
  }
}
)";
}

class TempStore {
 public:
  explicit TempStore(const std::string& name) {
    std::random_device rd;
    root_ =
        fs::temp_directory_path() / ("scellis-kernel-cache-" + name + "-" + std::to_string(rd()));
    fs::remove_all(root_);
  }
  ~TempStore() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string root() const { return root_.string(); }
  // Every blob file of the store.
  std::vector<fs::path> Blobs() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root_ / "blobs", ec), end; !ec && it != end;
         it.increment(ec))
      if (it->is_regular_file()) out.push_back(it->path());
    return out;
  }

 private:
  fs::path root_;
};

std::unique_ptr<Device> OpenWith(const std::string& store_root, bool cache = true) {
  if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
    setenv("VK_ICD_FILENAMES", kSwiftShaderIcd, 1);
  OpenOptions o;
  o.allow_software_adapter = true;
  o.kernel_cache = cache;
  o.kernel_cache_store = store_root;
  auto dev = Device::Open(o);
  if (!dev.ok()) {
    ADD_FAILURE() << "could not open a WebGPU device on SwiftShader: "
                  << dev.status().first().Format();
    return nullptr;
  }
  return std::move(dev).value();
}

// Runs the kernel on fresh random data and checks every value against float64 arithmetic.
void RunAndCheck(Device& d, float bias, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  std::vector<float> x(1000), y(x.size(), -1.0f);
  for (float& v : x) v = dist(rng);
  auto pipe = d.Pipeline(Kernel(bias), "main");
  ASSERT_TRUE(pipe.ok()) << pipe.status().first().Format();
  BufferId bx = d.CreateBuffer(x.size() * 4), by = d.CreateBuffer(y.size() * 4);
  ASSERT_TRUE(d.Write(bx, 0, x.data(), x.size() * 4).ok());
  d.Dispatch(*pipe, {{bx}, {by}}, (x.size() + 63) / 64);
  ASSERT_TRUE(d.Submit().ok());
  ASSERT_TRUE(d.Read(by, 0, y.size() * 4, y.data()).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = double(x[i]) * double(x[i]) + double(bias);
    ASSERT_NEAR(y[i], want, 1e-5 * (1 + std::abs(want))) << "at " << i;
  }
}

TEST(KernelCache, SecondDeviceReadsWhatTheFirstStored) {
  TempStore store("reuse");
  KernelCacheStats first;
  {
    auto dev = OpenWith(store.root());
    ASSERT_TRUE(dev);
    RunAndCheck(*dev, 0.25f, 11);
    first = dev->kernel_cache();
  }
  ASSERT_TRUE(first.enabled) << first.off_reason;
  EXPECT_EQ(first.store_root, store.root());
  EXPECT_EQ(first.hits, 0u);
  EXPECT_GT(first.misses, 0u);
  EXPECT_GT(first.stores, 0u) << "Dawn never handed a compiled value to the cache";
  EXPECT_EQ(first.store_failures, 0u);
  EXPECT_FALSE(store.Blobs().empty());

  auto again = OpenWith(store.root());
  ASSERT_TRUE(again);
  RunAndCheck(*again, 0.25f, 12);
  KernelCacheStats second = again->kernel_cache();
  std::cout << "first device: " << first.misses << " misses, " << first.stores
            << " stores; second: " << second.hits << " hits, " << second.misses << " misses, "
            << second.stores << " stores\n";
  EXPECT_GT(second.hits, 0u);
  EXPECT_TRUE(second.refused.empty());
  // Every value the first device stored is found again (what is looked up beyond them, Dawn
  // looks up on every run).
  EXPECT_GE(second.hits, first.stores);
  EXPECT_LT(second.stores, first.stores);
  // The store is sound, as `scellis store verify` sees it.
  auto s = store::Store::Open(store.root());
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->Verify().empty());
}

TEST(KernelCache, RefusesATamperedValueAndCompilesAgain) {
  TempStore store("tamper");
  {
    auto dev = OpenWith(store.root());
    ASSERT_TRUE(dev);
    RunAndCheck(*dev, -1.5f, 21);
    ASSERT_GT(dev->kernel_cache().stores, 0u);
  }
  // Flip one byte in the middle of every stored value.
  std::vector<std::string> tampered;
  for (const fs::path& blob : store.Blobs()) {
    std::fstream f(blob, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    ASSERT_GT(size, 0);
    f.seekg(size / 2);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(size / 2);
    f.write(&c, 1);
    tampered.push_back("sha256:" + blob.filename().string());
  }
  ASSERT_FALSE(tampered.empty());
  {
    auto dev = OpenWith(store.root());
    ASSERT_TRUE(dev);
    RunAndCheck(*dev, -1.5f, 22);  // still correct: Dawn compiled again
    KernelCacheStats s = dev->kernel_cache();
    EXPECT_EQ(s.hits, 0u);
    EXPECT_GT(s.misses, 0u);
    EXPECT_GT(s.stores, 0u);
    std::vector<std::string> refused = s.refused, want = tampered;
    std::sort(refused.begin(), refused.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(refused, want);
  }
  // The refused files were removed and the new values stored under their names: whole again.
  auto s = store::Store::Open(store.root());
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->Verify().empty());
  auto third = OpenWith(store.root());
  ASSERT_TRUE(third);
  RunAndCheck(*third, -1.5f, 23);
  EXPECT_GT(third->kernel_cache().hits, 0u);
  EXPECT_TRUE(third->kernel_cache().refused.empty());
}

TEST(KernelCache, RefusesAValueOfTheWrongSize) {
  TempStore store("size");
  {
    auto dev = OpenWith(store.root());
    ASSERT_TRUE(dev);
    RunAndCheck(*dev, 3.0f, 31);
  }
  // Rewrite each entry's object to claim one byte more than its blob holds. The object is sound
  // (named by its own hash, as the store writes it), so only the size check can refuse it.
  auto s = store::Store::Open(store.root());
  ASSERT_TRUE(s.ok());
  int rewritten = 0;
  for (fs::recursive_directory_iterator it(fs::path(store.root()) / "index" / "kernel_cache"), end;
       it != end; ++it) {
    if (!it->is_regular_file()) continue;
    const std::string key = it->path().parent_path().filename().string();
    const std::string profile_dir = it->path().parent_path().parent_path().string();
    auto object = s->Get("sha256:" + it->path().filename().string());
    ASSERT_TRUE(object.ok());
    Json lie = object.value();
    lie["bytes"] = lie["bytes"].get<uint64_t>() + 1;
    auto id = s->Put(lie);
    ASSERT_TRUE(id.ok());
    // The entry is replaced in place: the profile is only known here by its hashed folder.
    fs::remove(it->path());
    std::ofstream(fs::path(profile_dir) / key / id.value().substr(7));
    ++rewritten;
    break;
  }
  ASSERT_EQ(rewritten, 1);
  auto dev = OpenWith(store.root());
  ASSERT_TRUE(dev);
  RunAndCheck(*dev, 3.0f, 32);
  KernelCacheStats st = dev->kernel_cache();
  EXPECT_GT(st.misses, 0u);
  EXPECT_GT(st.stores, 0u);
}

TEST(KernelCache, TurnsOff) {
  TempStore store("off");
  {
    auto dev = OpenWith(store.root(), /*cache=*/false);
    ASSERT_TRUE(dev);
    RunAndCheck(*dev, 0.5f, 41);
    KernelCacheStats s = dev->kernel_cache();
    EXPECT_FALSE(s.enabled);
    EXPECT_EQ(s.off_reason, "turned off by the caller");
    EXPECT_EQ(s.stores, 0u);
  }
  EXPECT_FALSE(fs::exists(store.root()));
  setenv("SCELLIS_KERNEL_CACHE", "off", 1);
  EXPECT_TRUE(KernelCacheDisabledByEnvironment());
  {
    auto dev = OpenWith(store.root());
    unsetenv("SCELLIS_KERNEL_CACHE");
    ASSERT_TRUE(dev);
    RunAndCheck(*dev, 0.5f, 42);
    EXPECT_FALSE(dev->kernel_cache().enabled);
    EXPECT_NE(dev->kernel_cache().off_reason.find("SCELLIS_KERNEL_CACHE"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(store.root()));
  EXPECT_FALSE(KernelCacheDisabledByEnvironment());
  // On again: the same kernel is stored.
  auto dev = OpenWith(store.root());
  ASSERT_TRUE(dev);
  RunAndCheck(*dev, 0.5f, 43);
  EXPECT_TRUE(dev->kernel_cache().enabled);
  EXPECT_GT(dev->kernel_cache().stores, 0u);
  EXPECT_FALSE(store.Blobs().empty());
}

}  // namespace
}  // namespace scellis::runtime::webgpu
