#include "runtime/backends/webgpu/kernel_cache.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "base/sha256.h"

namespace scellis::runtime::webgpu {
namespace {

// Dawn's own chained struct for the blob cache (dawn.json: "dawn cache device descriptor", sType
// 7 of Dawn's native range 0x00050000, chained to the device descriptor): an isolation key and
// two function pointers sharing one userdata. Dawn calls
//   size_t load(key, key_size, value, value_size, userdata)
// first with value = null, value_size = 0 for the size (0: a miss), then with a buffer of that
// size, and takes the value only when both calls return the same size;
//   void store(key, key_size, value, value_size, userdata)
// after it compiled something it did not find. Dawn releases after mid-2026 replace the two
// pointers with callback-info structs; this layout is the one of the Dawn build the engine loads
// (bun-webgpu-linux-x64@0.1.7), and a test checks that its callbacks fire.
constexpr WGPUSType kDawnCacheDeviceDescriptor = static_cast<WGPUSType>(0x00050007);

constexpr const char* kIndexKind = "kernel_cache";
constexpr const char* kObjectKind = "dawn-blob";

std::string Lower(const char* s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string KeyHex(const void* key, size_t key_size) {
  return Sha256Hex(std::string_view(static_cast<const char*>(key), key_size));
}

}  // namespace

bool KernelCacheDisabledByEnvironment() {
  const char* v = std::getenv("SCELLIS_KERNEL_CACHE");
  if (!v) return false;
  const std::string s = Lower(v);
  return s == "off" || s == "0" || s == "no" || s == "false";
}

std::unique_ptr<KernelCache> KernelCache::Open(const std::string& store_root, std::string profile,
                                               std::string* why_off) {
  auto store = store::Store::Open(store_root);
  if (!store.ok()) {
    if (why_off) *why_off = store.status().first().message;
    return nullptr;
  }
  return std::unique_ptr<KernelCache>(
      new KernelCache(std::move(store).value(), std::move(profile)));
}

// Cache entries are written without flushing to disk: a flush costs milliseconds per file, three
// files per value, hundreds of values per plan; whatever a crash tears is refused when read.
KernelCache::KernelCache(const store::Store& store, std::string profile)
    : store_(store.WithoutFlush()), profile_(std::move(profile)) {
  stats_.enabled = true;
  stats_.store_root = store_.root();
  descriptor_.chain.sType = kDawnCacheDeviceDescriptor;
  // Dawn folds the isolation key into its cache keys; the profile scopes the index as well.
  descriptor_.isolation_key = WGPUStringView{profile_.data(), profile_.size()};
  descriptor_.load = &KernelCache::LoadData;
  descriptor_.store = &KernelCache::StoreData;
  descriptor_.userdata = this;
}

WGPUChainedStruct* KernelCache::Chain(WGPUChainedStruct* next) {
  descriptor_.chain.next = next;
  return &descriptor_.chain;
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

size_t KernelCache::LoadData(const void* key, size_t key_size, void* value, size_t value_size,
                             void* userdata) {
  return static_cast<KernelCache*>(userdata)->Load(KeyHex(key, key_size), value, value_size);
}

void KernelCache::StoreData(const void* key, size_t key_size, const void* value, size_t value_size,
                            void* userdata) {
  if (!value || value_size == 0) return;
  static_cast<KernelCache*>(userdata)->Save(
      KeyHex(key, key_size), std::string_view(static_cast<const char*>(value), value_size));
}

size_t KernelCache::Load(const std::string& key_hex, void* value, size_t value_size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!value || value_size == 0) {
    std::string found = Find(key_hex);
    if (found.empty()) {
      stats_.misses++;
      pending_.erase(key_hex);
      return 0;
    }
    stats_.hits++;
    const size_t size = found.size();
    pending_[key_hex] = std::move(found);
    return size;
  }
  auto it = pending_.find(key_hex);
  if (it == pending_.end() || it->second.size() != value_size) return 0;
  std::memcpy(value, it->second.data(), value_size);
  pending_.erase(it);
  return value_size;
}

std::string KernelCache::Find(const std::string& key_hex) {
  for (const std::string& id : store_.Lookup(kIndexKind, profile_, key_hex)) {
    auto object = store_.Get(id);
    if (!object.ok()) {
      if (object.status().first().code == "store-object-corrupt") Refuse(id);
      continue;
    }
    const Json& o = object.value();
    if (o.value("kind", "") != kObjectKind || o.value("key", "") != key_hex) continue;
    const std::string blob = o.value("blob", "");
    auto bytes = store_.GetBlob(blob);
    if (!bytes.ok()) {
      if (bytes.status().first().code == "store-object-corrupt") Refuse(blob);
      continue;
    }
    if (bytes.value().empty() || bytes.value().size() != o.value("bytes", uint64_t{0})) continue;
    return std::move(bytes).value();
  }
  return "";
}

void KernelCache::Refuse(const std::string& id) {
  stats_.refused.push_back(id);
  store_.DiscardIfCorrupt(id);
}

void KernelCache::Save(const std::string& key_hex, std::string_view value) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.stores++;
  auto blob = store_.PutBlob(value);
  if (!blob.ok()) {
    stats_.store_failures++;
    return;
  }
  Json object = {{"kind", kObjectKind},
                 {"key", key_hex},
                 {"blob", blob.value()},
                 {"bytes", static_cast<uint64_t>(value.size())}};
  auto id = store_.Put(object);
  if (!id.ok() || !store_.Replace(kIndexKind, profile_, key_hex, id.value()).ok())
    stats_.store_failures++;
}

}  // namespace scellis::runtime::webgpu
