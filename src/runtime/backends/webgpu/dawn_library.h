// Dawn, loaded at run time.
//
// Scellis never links against Dawn: the engine must start, plan and run on the CPU reference on a
// machine where Dawn is absent. `DawnLibrary::Load()` finds `libwebgpu_wrapper.so` (from the npm
// package `bun-webgpu-linux-x64`, pinned in package.json), dlopens it once per process and
// resolves every entry point listed in webgpu_api.h into a table of function pointers.
//
// Search order:
//   1. `$SCELLIS_DAWN_LIBRARY`, when set: that file and nothing else (an explicit choice that
//      does not load is an error, not a reason to pick another library silently);
//   2. walking up from the directory of the running executable (/proc/self/exe), in each
//      ancestor `node_modules/bun-webgpu-linux-x64/**/libwebgpu_wrapper.so`;
//   3. the same walk from the current directory.
// When nothing is found, the diagnostic lists every path tried and says how to install Dawn.
//
// Adapter enumeration. The WebGPU C API only hands out Dawn's first adapter
// (wgpuInstanceRequestAdapter); a host with several identical GPUs needs the others too. Dawn's
// own C++ API has `dawn::native::Instance::EnumerateAdapters(const WGPURequestAdapterOptions*)`
// (include/dawn/native/DawnNative.h), whose first element is what wgpuInstanceRequestAdapter
// returns for the same options (Dawn's InstanceBase::APIRequestAdapter takes adapters[0]). The
// library exports it with its helpers, built against the system's libstdc++, so Load() resolves
// them by their mangled names when present; EnumerateAdapters() calls them under the Itanium C++
// ABI. The assumptions, each stated where it is relied on: dawn::native::Instance is constructed
// from the WGPUInstance (Dawn's InstanceBase*) and fits in 64 bytes; dawn::native::Adapter holds
// one pointer; the result is a libstdc++ std::vector. A build without these symbols still runs;
// only a choice other than Dawn's first adapter is refused (adapter-not-found).
//
// Dawn's Vulkan backend dlopens the Vulkan loader `libvulkan.so.1` itself; without one it offers
// only its Null backend, which computes nothing. Debian's chromium package (which the tests need
// for SwiftShader) carries a loader beside its ICD, but not on the library path, so when the
// system has none Load() preloads one (RTLD_GLOBAL, so Dawn's dlopen of the bare soname finds it):
//   1. `$SCELLIS_VULKAN_LOADER`, when set;
//   2. the system's libvulkan.so.1 (package libvulkan1);
//   3. libvulkan.so.1 beside each ICD manifest named by $VK_ICD_FILENAMES / $VK_DRIVER_FILES;
//   4. /usr/lib/chromium/libvulkan.so.1.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/backends/webgpu/webgpu_api.h"

namespace scellis::runtime::webgpu {

// One function pointer per entry point: `procs.DeviceCreateBuffer(device, &desc)` calls
// `wgpuDeviceCreateBuffer`.
struct DawnProcs {
#define SCELLIS_WGPU_PROC_MEMBER(name) WGPUProc##name name = nullptr;
  SCELLIS_WGPU_PROCS(SCELLIS_WGPU_PROC_MEMBER)
#undef SCELLIS_WGPU_PROC_MEMBER
};

class DawnLibrary {
 public:
  // The process-wide library, loaded on first use. A failure is not cached: a later call
  // searches again (the user may have run `make setup` meanwhile).
  static Result<const DawnLibrary*> Load();

  // The candidate files, in search order, without loading anything. Exposed for tests and for
  // `scellis probe`.
  static std::vector<std::string> Candidates(std::vector<std::string>* searched_dirs = nullptr);

  const DawnProcs& procs() const { return procs_; }
  // Absolute path of the loaded file.
  const std::string& path() const { return path_; }
  // Identifies the Dawn build: "bun-webgpu-linux-x64@0.1.7" from the package.json next to the
  // library, or "sha256:<first 16 hex digits of the file>" when there is none.
  const std::string& version() const { return version_; }
  // The Vulkan loader in use ("" when none could be loaded), and the places tried for it.
  const std::string& vulkan_loader() const { return vulkan_loader_; }
  const std::vector<std::string>& vulkan_loader_searched() const { return vulkan_searched_; }

  // The process's one Dawn instance (with the timed-wait-any feature), created on first use and
  // never released; null when Dawn cannot create it. Every device is opened from it and takes a
  // reference of its own. Why one: when a process's last instance goes, the Vulkan loader unloads
  // the driver, and NVIDIA's (580.159) then fails to load again after 29 such rounds in one
  // process (bench/RESULTS.md, 2026-12-03): a server or benchmark opening a device per run would
  // find no GPU from its 30th on.
  WGPUInstance SharedInstance() const;

  // Whether this Dawn build exports the C++ adapter enumeration (see the header comment).
  bool can_enumerate_adapters() const { return enumerate_.enumerate != nullptr; }
  // Every adapter Dawn offers for `options`, in Dawn's order (the first is the one
  // wgpuInstanceRequestAdapter returns). Each holds a reference the caller releases
  // (wgpuAdapterRelease). `adapter-enumeration-unavailable` when the build lacks the symbols,
  // `webgpu-abi` when what Dawn returned does not have the expected shape.
  Result<std::vector<WGPUAdapter>> EnumerateAdapters(WGPUInstance instance,
                                                     const WGPURequestAdapterOptions& options) const;

 private:
  DawnLibrary() = default;

  void* handle_ = nullptr;
  std::string path_;
  std::string version_;
  std::string vulkan_loader_;
  std::vector<std::string> vulkan_searched_;
  DawnProcs procs_;
  // dawn::native's C++ entry points for the enumeration; all set, or enumerate null.
  struct CxxEnumeration {
    void (*instance_construct)(void* self, WGPUInstance impl) = nullptr;
    void (*instance_destroy)(void* self) = nullptr;
    // A member function returning a class by value: the result's address comes first (the
    // hidden return slot), then `this`.
    void (*enumerate)(void* result, const void* self,
                      const WGPURequestAdapterOptions* options) = nullptr;
    WGPUAdapter (*adapter_get)(const void* self) = nullptr;
    void (*adapter_destroy)(void* self) = nullptr;
  } enumerate_;
};

}  // namespace scellis::runtime::webgpu
