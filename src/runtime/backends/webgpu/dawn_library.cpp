#include "runtime/backends/webgpu/dawn_library.h"

#include "base/sha256.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <system_error>

namespace scellis::runtime::webgpu {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPackage = "bun-webgpu-linux-x64";
constexpr const char* kLibraryName = "libwebgpu_wrapper.so";
constexpr const char* kEnvVar = "SCELLIS_DAWN_LIBRARY";
constexpr const char* kHelp =
    "run make setup (npm ci), or point SCELLIS_DAWN_LIBRARY at "
    "libwebgpu_wrapper.so";

// Every libwebgpu_wrapper.so under `package_dir`, sorted so the choice is reproducible.
std::vector<std::string> FindInPackage(const fs::path& package_dir) {
  std::vector<std::string> found;
  std::error_code ec;
  if (!fs::is_directory(package_dir, ec)) return found;
  for (fs::recursive_directory_iterator it(package_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().filename() == kLibraryName && it->is_regular_file(ec)) {
      found.push_back(it->path().string());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

void WalkUp(fs::path dir, std::vector<std::string>* out, std::vector<std::string>* searched) {
  std::error_code ec;
  dir = fs::weakly_canonical(dir, ec);
  if (ec || dir.empty()) return;
  while (true) {
    fs::path package_dir = dir / "node_modules" / kPackage;
    if (searched) searched->push_back(package_dir.string());
    for (auto& f : FindInPackage(package_dir)) out->push_back(f);
    if (dir == dir.root_path() || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
}

std::string Sha256Prefix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "unknown";
  Sha256 sha;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) sha.Update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  // The first 8 bytes (16 hex digits) name the library in reports.
  return "sha256:" + sha.FinalHex().substr(0, 16);
}

std::string VersionOf(const std::string& library_path) {
  fs::path manifest = fs::path(library_path).parent_path() / "package.json";
  std::ifstream in(manifest);
  if (in) {
    auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("name") && j.contains("version") && j["name"].is_string() &&
        j["version"].is_string()) {
      return j["name"].get<std::string>() + "@" + j["version"].get<std::string>();
    }
  }
  return Sha256Prefix(library_path);
}

// Loads a Vulkan loader for Dawn to find (see the header). Returns its path, or "".
std::string PreloadVulkanLoader(std::vector<std::string>* searched) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("SCELLIS_VULKAN_LOADER"); env && *env) {
    candidates.push_back(env);
  }
  candidates.push_back("libvulkan.so.1");
  for (const char* var : {"VK_ICD_FILENAMES", "VK_DRIVER_FILES"}) {
    const char* list = std::getenv(var);
    if (!list) continue;
    std::string all = list;
    size_t start = 0;
    while (start <= all.size()) {
      size_t end = all.find(':', start);
      if (end == std::string::npos) end = all.size();
      std::string manifest = all.substr(start, end - start);
      if (!manifest.empty()) {
        candidates.push_back((fs::path(manifest).parent_path() / "libvulkan.so.1").string());
      }
      start = end + 1;
    }
  }
  candidates.push_back("/usr/lib/chromium/libvulkan.so.1");
  for (const auto& c : candidates) {
    if (searched) searched->push_back(c);
    if (c.find('/') != std::string::npos) {
      std::error_code ec;
      if (!fs::exists(c, ec)) continue;
    }
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h) continue;
    // Report the file actually loaded, not the bare soname.
    void* sym = dlsym(h, "vkGetInstanceProcAddr");
    Dl_info di{};
    if (sym && dladdr(sym, &di) && di.dli_fname) return di.dli_fname;
    return c;
  }
  return "";
}

// Dawn's C++ adapter enumeration, by mangled name (see the header): every symbol, or none.
template <typename F>
bool Resolve(void* handle, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  return *out != nullptr;
}

template <typename E>
void ResolveEnumeration(void* handle, E* e) {
  const bool all =
      Resolve(handle, "_ZN4dawn6native8InstanceC1EPNS0_12InstanceBaseE", &e->instance_construct) &&
      Resolve(handle, "_ZN4dawn6native8InstanceD1Ev", &e->instance_destroy) &&
      Resolve(handle, "_ZNK4dawn6native8Instance17EnumerateAdaptersEPK25WGPURequestAdapterOptions",
              &e->enumerate) &&
      Resolve(handle, "_ZNK4dawn6native7Adapter3GetEv", &e->adapter_get) &&
      Resolve(handle, "_ZN4dawn6native7AdapterD1Ev", &e->adapter_destroy);
  if (!all) *e = E{};
}

std::string JoinLines(const std::vector<std::string>& items) {
  std::string out;
  for (auto& s : items) out += "\n    " + s;
  return out;
}

}  // namespace

std::vector<std::string> DawnLibrary::Candidates(std::vector<std::string>* searched_dirs) {
  std::vector<std::string> out;
  if (const char* env = std::getenv(kEnvVar); env && *env) {
    if (searched_dirs) searched_dirs->push_back(std::string("$") + kEnvVar + "=" + env);
    out.push_back(env);
    return out;
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) WalkUp(exe.parent_path(), &out, searched_dirs);
  fs::path cwd = fs::current_path(ec);
  if (!ec) WalkUp(cwd, &out, searched_dirs);
  // The two walks often meet (a test binary under build/ in the repository): keep the first.
  std::vector<std::string> unique;
  for (auto& c : out) {
    if (std::find(unique.begin(), unique.end(), c) == unique.end()) unique.push_back(c);
  }
  return unique;
}

Result<const DawnLibrary*> DawnLibrary::Load() {
  static std::mutex mu;
  static DawnLibrary* loaded = nullptr;  // never unloaded: Dawn keeps threads alive
  std::lock_guard<std::mutex> lock(mu);
  if (loaded) return static_cast<const DawnLibrary*>(loaded);

  std::vector<std::string> searched;
  std::vector<std::string> candidates = Candidates(&searched);
  std::vector<std::string> unique_searched;
  for (auto& s : searched) {
    if (std::find(unique_searched.begin(), unique_searched.end(), s) == unique_searched.end()) {
      unique_searched.push_back(s);
    }
  }
  searched.swap(unique_searched);
  if (candidates.empty()) {
    return UserError("dawn-not-found", "",
                     "WebGPU is unavailable: libwebgpu_wrapper.so (npm package " +
                         std::string(kPackage) + ") was not found; searched:" + JoinLines(searched),
                     kHelp);
  }
  std::vector<std::string> failures;
  for (const auto& path : candidates) {
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* err = dlerror();
      failures.push_back(path + ": " + (err ? err : "dlopen failed"));
      continue;
    }
    auto lib = std::unique_ptr<DawnLibrary>(new DawnLibrary());
    std::vector<std::string> missing;
#define SCELLIS_WGPU_PROC_LOAD(name)                                                \
  lib->procs_.name = reinterpret_cast<WGPUProc##name>(dlsym(handle, "wgpu" #name)); \
  if (!lib->procs_.name) missing.push_back("wgpu" #name);
    SCELLIS_WGPU_PROCS(SCELLIS_WGPU_PROC_LOAD)
#undef SCELLIS_WGPU_PROC_LOAD
    if (!missing.empty()) {
      std::string names;
      for (auto& m : missing) names += (names.empty() ? "" : ", ") + m;
      failures.push_back(path + ": not the expected Dawn build, missing " + names);
      dlclose(handle);
      continue;
    }
    std::error_code ec;
    fs::path abs = fs::absolute(path, ec);
    lib->handle_ = handle;
    lib->path_ = ec ? path : abs.lexically_normal().string();
    lib->version_ = VersionOf(lib->path_);
    lib->vulkan_loader_ = PreloadVulkanLoader(&lib->vulkan_searched_);
    ResolveEnumeration(handle, &lib->enumerate_);
    loaded = lib.release();
    return static_cast<const DawnLibrary*>(loaded);
  }
  return UserError("dawn-not-found", "",
                   "WebGPU is unavailable: no candidate libwebgpu_wrapper.so could be loaded:" +
                       JoinLines(failures) + "\n  searched:" + JoinLines(searched),
                   kHelp);
}

WGPUInstance DawnLibrary::SharedInstance() const {
  static std::mutex mu;
  static WGPUInstance instance = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (!instance) {
    // TimedWaitAny lets every wait carry a timeout instead of spinning on ProcessEvents.
    WGPUInstanceFeatureName features[] = {WGPUInstanceFeatureName_TimedWaitAny};
    WGPUInstanceDescriptor d{};
    d.requiredFeatureCount = 1;
    d.requiredFeatures = features;
    instance = procs_.CreateInstance(&d);
  }
  return instance;
}

Result<std::vector<WGPUAdapter>> DawnLibrary::EnumerateAdapters(
    WGPUInstance instance, const WGPURequestAdapterOptions& options) const {
  if (!can_enumerate_adapters()) {
    return UserError("adapter-enumeration-unavailable", "",
                     "this Dawn build (" + path_ +
                         ") does not export dawn::native::Instance::EnumerateAdapters, so only "
                         "its first adapter can be used",
                     "use adapter 0, or a Dawn build that exports its native C++ API");
  }
  // dawn::native::Adapter is one pointer (its AdapterBase*); std::vector<Adapter> is then a
  // vector of pointer-sized, trivially relocatable slots whose destructor we call through Dawn.
  struct AdapterSlot {
    void* impl;
  };
  static_assert(sizeof(std::vector<AdapterSlot>) == 3 * sizeof(void*),
                "libstdc++'s std::vector is three pointers");
  // dawn::native::Instance is one Ref<InstanceBase>; 64 bytes leave it room to grow.
  alignas(16) unsigned char instance_object[64] = {};
  enumerate_.instance_construct(instance_object, instance);
  std::vector<AdapterSlot> slots;
  enumerate_.enumerate(&slots, instance_object, &options);
  enumerate_.instance_destroy(instance_object);

  std::vector<WGPUAdapter> adapters;
  bool shaped = slots.size() <= 256;
  for (const AdapterSlot& s : slots) {
    WGPUAdapter a = shaped ? enumerate_.adapter_get(&s) : nullptr;
    // Adapter::Get returns the pointer the Adapter holds: anything else means another layout.
    if (!a || reinterpret_cast<void*>(a) != s.impl) {
      shaped = false;
      continue;
    }
    procs_.AdapterAddRef(a);
    adapters.push_back(a);
  }
  // Each Adapter drops its own reference; the caller keeps the ones taken above.
  if (slots.size() <= 256)
    for (AdapterSlot& s : slots) enumerate_.adapter_destroy(&s);
  if (!shaped) {
    for (WGPUAdapter a : adapters) procs_.AdapterRelease(a);
    return InternalError("webgpu-abi",
                         "dawn::native::Instance::EnumerateAdapters in " + path_ +
                             " returned adapters of an unexpected shape");
  }
  return adapters;
}

}  // namespace scellis::runtime::webgpu
