// The persistent kernel cache: Dawn's blob cache, kept in the engine's store.
//
// What it caches. Dawn keys everything it compiles by content (the WGSL, the entry point, the
// device's toggles and limits, the Dawn build) and, when a device is created with a chained
// DawnCacheDeviceDescriptor, asks the embedder for a blob under that key before compiling and
// hands it the result after: on Vulkan the SPIR-V Tint made of the WGSL, and each pipeline's
// VkPipelineCache data (the driver's compiled code, where the driver puts it there). A second
// run of the same kernels on the same device reads them instead of compiling.
//
// Where. In the store ($SCELLIS_STORE; see store/store.h): each value is a blob, named by its
// SHA-256; a small object {kind: "dawn-blob", key: <SHA-256 of Dawn's key>, blob, bytes} names
// it, filed in the index under ("kernel_cache", device profile, SHA-256 of Dawn's key). The
// device profile (adapter, driver, Dawn build) scopes every entry, so another adapter or driver
// never reads one. `scellis store verify` re-hashes these entries like any other; `store gc`
// keeps the indexed ones and removes the values they replaced.
//
// Trust. Everything read back is checked against its name (the store re-hashes the object and
// the blob) and its recorded size. A value that fails is refused: Dawn sees a miss and compiles
// again, the corrupt file is removed (so the new value can be stored under its name), and its id
// is listed in the stats' `refused`. Nothing read from the cache can crash a run.
//
// Off switch: SCELLIS_KERNEL_CACHE=off (or 0, no, false) in the environment, or
// OpenOptions::kernel_cache = false. Without a store location (neither SCELLIS_STORE nor HOME)
// the cache is off too; the stats say why.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/backends/webgpu/webgpu_api.h"
#include "store/store.h"

namespace scellis::runtime::webgpu {

struct KernelCacheStats {
  bool enabled = false;
  std::string off_reason;       // why it is off ("" when enabled)
  std::string store_root;       // where it lives, when enabled
  uint64_t hits = 0;            // Dawn asked and a sound value was there
  uint64_t misses = 0;          // Dawn asked and nothing (sound) was there
  uint64_t stores = 0;          // values Dawn handed over
  uint64_t store_failures = 0;  // values that could not be written (the run goes on without)
  // Ids of the stored objects and blobs refused because their contents do not match their name.
  std::vector<std::string> refused;
};

// Whether the environment turns the cache off (SCELLIS_KERNEL_CACHE=off, 0, no or false).
bool KernelCacheDisabledByEnvironment();

class KernelCache {
 public:
  // The cache in the store at `store_root` ("" for the default location), scoped to `profile`.
  // Returns null, with the reason in `why_off`, when there is no store location.
  static std::unique_ptr<KernelCache> Open(const std::string& store_root, std::string profile,
                                           std::string* why_off);

  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // Chains the cache descriptor in front of `next` and returns the new head of the chain, for a
  // WGPUDeviceDescriptor's nextInChain. The cache must outlive the device: Dawn calls back into
  // it until the device is gone.
  WGPUChainedStruct* Chain(WGPUChainedStruct* next);

  KernelCacheStats stats() const;

  // Dawn's callbacks (public for the descriptor; `userdata` is the cache).
  static size_t LoadData(const void* key, size_t key_size, void* value, size_t value_size,
                         void* userdata);
  static void StoreData(const void* key, size_t key_size, const void* value, size_t value_size,
                        void* userdata);

 private:
  KernelCache(const store::Store& store, std::string profile);
  size_t Load(const std::string& key_hex, void* value, size_t value_size);
  void Save(const std::string& key_hex, std::string_view value);
  // The sound value filed under `key_hex`, or "" (refusing whatever is corrupt on the way).
  std::string Find(const std::string& key_hex);
  void Refuse(const std::string& id);

  store::Store store_;
  std::string profile_;
  // Dawn's layout of DawnCacheDeviceDescriptor (see kernel_cache.cpp).
  struct Descriptor {
    WGPUChainedStruct chain;
    WGPUStringView isolation_key;
    size_t (*load)(const void*, size_t, void*, size_t, void*);
    void (*store)(const void*, size_t, const void*, size_t, void*);
    void* userdata;
  } descriptor_{};

  mutable std::mutex mu_;  // Dawn may call back from its own threads
  KernelCacheStats stats_;
  // Dawn reads a value in two calls (its size, then its bytes): what the first call found.
  std::map<std::string, std::string> pending_;
};

}  // namespace scellis::runtime::webgpu
