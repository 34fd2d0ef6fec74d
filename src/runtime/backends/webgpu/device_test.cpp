// The WebGPU device layer against real Dawn on SwiftShader (Vulkan on the CPU). CI installs both
// (`make setup`); a machine without them fails these tests with a message saying what is missing,
// it never skips them.
#include "runtime/backends/webgpu/device.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>

#include "runtime/backends/webgpu/dawn_library.h"
#include "runtime/backends/webgpu/executor.h"
#include "runtime/backends/webgpu/vulkan_memory.h"

namespace scellis::runtime::webgpu {
namespace {

constexpr const char* kSwiftShaderIcd = "/usr/lib/chromium/vk_swiftshader_icd.json";

std::string Describe(const Status& s) {
  std::string out;
  for (const auto& d : s.errors()) out += d.Format() + "\n";
  return out;
}

// SwiftShader, unless the environment already chose a Vulkan driver.
void UseSwiftShader() {
  if (!std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES")) {
    setenv("VK_ICD_FILENAMES", kSwiftShaderIcd, 1);
  }
}

std::unique_ptr<Device> OpenSoftware(OpenOptions options = {}) {
  UseSwiftShader();
  const char* icd = std::getenv("VK_ICD_FILENAMES");
  if (icd && std::string(icd) == kSwiftShaderIcd && !std::filesystem::exists(kSwiftShaderIcd)) {
    ADD_FAILURE() << "SwiftShader is missing: " << kSwiftShaderIcd
                  << " does not exist (it comes with Debian's chromium package; run make setup)";
    return nullptr;
  }
  options.allow_software_adapter = true;
  auto dev = Device::Open(options);
  if (!dev.ok()) {
    ADD_FAILURE() << "could not open a WebGPU device on SwiftShader:\n" << Describe(dev.status());
    return nullptr;
  }
  return std::move(dev).value();
}

std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
  std::vector<float> v(n);
  for (auto& x : v) {
    do x = dist(rng);
    while (x == 0.0f);
  }
  return v;
}

constexpr const char* kDouble = R"(
@group(0) @binding(0) var<storage, read> src : array<f32>;
@group(0) @binding(1) var<storage, read_write> dst : array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id : vec3<u32>) {
  if (id.x < arrayLength(&dst)) {
    dst[id.x] = 2.0 * src[id.x];
  }
}
)";

TEST(WebGpuSoftware, DetectsSoftwareAdapters) {
  AdapterInfo info;
  info.adapter_type = "discrete-gpu";
  info.device = "NVIDIA H200";
  std::string why;
  EXPECT_FALSE(IsSoftwareAdapter(info, &why));
  EXPECT_EQ(why, "");
  info.adapter_type = "cpu";
  EXPECT_TRUE(IsSoftwareAdapter(info, &why));
  EXPECT_NE(why.find("cpu"), std::string::npos);
  info.adapter_type = "integrated-gpu";
  info.device = "llvmpipe (LLVM 15.0.6, 256 bits)";
  EXPECT_TRUE(IsSoftwareAdapter(info, &why));
  EXPECT_NE(why.find("llvmpipe"), std::string::npos);
  info.device = "";
  info.architecture = "SwiftShader";
  EXPECT_TRUE(IsSoftwareAdapter(info));
}

TEST(WebGpuGrid, SplitsWorkgroupsOverDimensions) {
  Grid g = SplitWorkgroups(100, 65535);
  EXPECT_EQ(g.x, 100u);
  EXPECT_EQ(g.y, 1u);
  g = SplitWorkgroups(65536, 65535);
  EXPECT_EQ(g.y, 2u);
  EXPECT_GE(uint64_t{g.x} * g.y, 65536u);
  EXPECT_LE(g.x, 65535u);
  const uint64_t huge = 65535ull * 65535ull + 7;
  g = SplitWorkgroups(huge, 65535);
  EXPECT_EQ(g.z, 2u);
  EXPECT_GE(uint64_t{g.x} * g.y * g.z, huge);
  EXPECT_LE(g.x, 65535u);
  EXPECT_LE(g.y, 65535u);
  EXPECT_EQ(SplitWorkgroups(0, 65535).x, 0u);
}

TEST(WebGpuDevice, FindsDawn) {
  auto lib = DawnLibrary::Load();
  ASSERT_TRUE(lib.ok()) << Describe(lib.status());
  EXPECT_NE((*lib)->path().find("libwebgpu_wrapper.so"), std::string::npos);
  EXPECT_EQ((*lib)->version(), "bun-webgpu-linux-x64@0.1.7");
}

// Devices opened one after another in a process come from its one Dawn instance, which outlives
// them (a driver unloaded with the last instance may not load again), and each computes.
TEST(WebGpuDevice, SuccessiveDevicesShareTheProcesssInstance) {
  auto lib = DawnLibrary::Load();
  ASSERT_TRUE(lib.ok()) << Describe(lib.status());
  const WGPUInstance instance = (*lib)->SharedInstance();
  ASSERT_NE(instance, nullptr);
  for (int round = 0; round < 3; ++round) {
    auto dev = OpenSoftware();
    ASSERT_NE(dev, nullptr);
    std::vector<float> x = {1, 2, 3, 4};
    BufferId b = dev->CreateBuffer(x.size() * sizeof(float));
    ASSERT_TRUE(dev->Write(b, 0, x.data(), x.size() * sizeof(float)).ok());
    auto p = dev->Pipeline(R"(
        @group(0) @binding(0) var<storage, read_write> x : array<f32>;
        @compute @workgroup_size(4)
        fn main(@builtin(global_invocation_id) id : vec3<u32>) { x[id.x] = 2.0 * x[id.x]; })",
                           "main");
    ASSERT_TRUE(p.ok()) << Describe(p.status());
    dev->Dispatch(*p, {{b}}, 1);
    ASSERT_TRUE(dev->Submit().ok());
    std::vector<float> y(4);
    ASSERT_TRUE(dev->Read(b, 0, y.size() * sizeof(float), y.data()).ok());
    EXPECT_EQ(y, (std::vector<float>{2, 4, 6, 8})) << "round " << round;
  }
  EXPECT_EQ((*lib)->SharedInstance(), instance);
}

TEST(WebGpuDevice, ReportsAdapterAndRequestsItsLimits) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  const AdapterInfo& info = dev->info();
  std::cout << "adapter: vendor=\"" << info.vendor << "\" architecture=\"" << info.architecture
            << "\" device=\"" << info.device << "\" description=\"" << info.description
            << "\" backend=" << info.backend_api << " type=" << info.adapter_type << std::hex
            << " ids=0x" << info.vendor_id << ":0x" << info.device_id << std::dec
            << "\n  software: " << info.software_reason << "\n  limits: storage binding "
            << info.limits.max_storage_buffer_binding_size << ", buffer "
            << info.limits.max_buffer_size << ", workgroup storage "
            << info.limits.max_compute_workgroup_storage_size << ", invocations "
            << info.limits.max_compute_invocations_per_workgroup << ", workgroups/dim "
            << info.limits.max_compute_workgroups_per_dimension << ", storage buffers/stage "
            << info.limits.max_storage_buffers_per_shader_stage << "\n  features:";
  for (auto& f : info.features) std::cout << " " << f;
  std::cout << "\n  profile: " << dev->ProfileKey() << "\n";

  EXPECT_EQ(info.backend_api, "vulkan");
  EXPECT_TRUE(info.is_software);
  EXPECT_FALSE(info.software_reason.empty());
  EXPECT_EQ(info.dawn_version, "bun-webgpu-linux-x64@0.1.7");
  // The device got the adapter's limits, not WebGPU's defaults (128 MiB binding cap, 16 KiB
  // workgroup storage, 256 invocations would be the defaults).
  EXPECT_GE(info.limits.max_storage_buffer_binding_size, 128ull << 20);
  EXPECT_GE(info.limits.max_buffer_size, info.limits.max_storage_buffer_binding_size);
  EXPECT_GE(info.limits.max_compute_workgroup_storage_size, 16384u);
  EXPECT_GE(info.limits.max_compute_invocations_per_workgroup, 256u);
  EXPECT_GE(info.limits.max_compute_workgroups_per_dimension, 65535u);
  EXPECT_GE(info.limits.max_storage_buffers_per_shader_stage, 8u);
  EXPECT_GT(info.limits.min_storage_buffer_offset_alignment, 0u);
  EXPECT_EQ(dev->ProfileKey(), dev->ProfileKey());
  EXPECT_NE(dev->ProfileKey().find("backend=vulkan"), std::string::npos);
  EXPECT_NE(dev->ProfileKey().find("dawn=bun-webgpu-linux-x64@0.1.7"), std::string::npos);
  EXPECT_TRUE(dev->health().ok());
}

// Adapter choice. Dawn's C++ enumeration (dawn_library.h) must be present in the pinned build and
// agree with the standard API: its first adapter is the one wgpuInstanceRequestAdapter gives.
TEST(WebGpuAdapterChoice, EnumeratesAdaptersAndDefaultsToDawnsFirst) {
  auto lib = DawnLibrary::Load();
  ASSERT_TRUE(lib.ok()) << Describe(lib.status());
  ASSERT_TRUE(lib.value()->can_enumerate_adapters())
      << "the pinned Dawn build lost dawn::native::Instance::EnumerateAdapters";
  auto dev = OpenSoftware();
  ASSERT_NE(dev, nullptr);
  const AdapterInfo& i = dev->info();
  EXPECT_GE(i.adapter_count, 1u);
  EXPECT_EQ(i.adapter_index, 0u);
  EXPECT_EQ(i.adapter_choice, "default");
  EXPECT_EQ(
      AdapterLine(i).rfind(
          "adapter 1 of " + std::to_string(i.adapter_count) + ": " + i.device + " (vulkan)", 0),
      0u)
      << AdapterLine(i);

  // Index 0 asked for by name is the same adapter as the default, said to be chosen.
  auto zero = OpenSoftware({.adapter = 0u});
  ASSERT_NE(zero, nullptr);
  EXPECT_EQ(zero->info().adapter_index, 0u);
  EXPECT_EQ(zero->info().adapter_choice, "--adapter");
  EXPECT_EQ(zero->ProfileKey(), dev->ProfileKey());
}

TEST(WebGpuAdapterChoice, RefusesAnIndexDawnDoesNotOfferByName) {
  UseSwiftShader();
  auto count = OpenSoftware();
  ASSERT_NE(count, nullptr);
  const uint32_t n = count->info().adapter_count;
  ASSERT_LT(n, 5u) << "this test needs a host with fewer than 6 adapters";
  auto dev = Device::Open({.allow_software_adapter = true, .adapter = 5u});
  ASSERT_FALSE(dev.ok()) << "adapter 5 opened on a host with " << n;
  const Diagnostic& d = dev.status().first();
  EXPECT_EQ(d.code, "adapter-not-found");
  EXPECT_EQ(d.kind, ErrorKind::kUser);
  EXPECT_EQ(ExitCodeFor(d), 2);
  // It says what exists instead: the count and each adapter by index and name.
  EXPECT_NE(d.message.find("there is no WebGPU adapter 5 (asked for by --adapter=5)"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("Dawn offers " + std::to_string(n) + " adapter"), std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("0: " + count->info().device + " (vulkan)"), std::string::npos)
      << d.message;
}

// Under MPI the local rank picks the adapter, modulo the count: every rank gets one, and ranks of
// one host spread over its GPUs.
TEST(WebGpuAdapterChoice, MpiLocalRankChoosesModuloTheCount) {
  UseSwiftShader();
  auto plain = OpenSoftware();
  ASSERT_NE(plain, nullptr);
  const uint32_t n = plain->info().adapter_count;
  ASSERT_GE(n, 1u);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  EXPECT_EQ(MpiLocalRank(), std::optional<uint32_t>(3));
  auto dev = OpenSoftware();
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(dev->info().adapter_index, 3u % n);
  EXPECT_EQ(dev->info().adapter_choice, "MPI local rank 3");
  EXPECT_NE(AdapterLine(dev->info()).find(", by MPI local rank 3"), std::string::npos);
  EXPECT_EQ(MpiLocalRank(), std::nullopt);
}

TEST(WebGpuDevice, DawnTogglesFromTheEnvironmentAreNamedAndChecked) {
  UseSwiftShader();
  setenv("SCELLIS_DAWN_TOGGLES", "skip_validation,disable_robustness", 1);
  auto dev = OpenSoftware();
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(dev->info().dawn_toggles,
            (std::vector<std::string>{"skip_validation", "disable_robustness"}));
  EXPECT_NE(AdapterLine(dev->info()).find("; Dawn toggles on: skip_validation,disable_robustness"),
            std::string::npos)
      << AdapterLine(dev->info());
  // A kernel still runs with Dawn's checks off.
  BufferId b = dev->CreateBuffer(16);
  const std::vector<float> x = {1, 2, 3, 4};
  ASSERT_TRUE(dev->Write(b, 0, x.data(), 16).ok());
  auto p = dev->Pipeline(R"(
      @group(0) @binding(0) var<storage, read_write> x : array<f32>;
      @compute @workgroup_size(4)
      fn main(@builtin(global_invocation_id) id : vec3<u32>) { x[id.x] = x[id.x] + 0.5; })",
                         "main");
  ASSERT_TRUE(p.ok()) << Describe(p.status());
  dev->Dispatch(*p, {{b}}, 1);
  std::vector<float> got(4);
  ASSERT_TRUE(dev->Read(b, 0, 16, got.data()).ok());
  EXPECT_EQ(got, (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f}));

  setenv("SCELLIS_DAWN_TOGGLES", "disable_lazy_clear", 1);
  OpenOptions o;
  o.allow_software_adapter = true;
  auto refused = Device::Open(o);
  unsetenv("SCELLIS_DAWN_TOGGLES");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().first().code, "dawn-toggle-unknown");
}

TEST(WebGpuDevice, RefusesSoftwareAdapterUnlessAllowed) {
  UseSwiftShader();
  auto dev = Device::Open(OpenOptions{});
  ASSERT_FALSE(dev.ok()) << "SwiftShader was accepted as a GPU";
  const Diagnostic& d = dev.status().first();
  EXPECT_EQ(d.code, "software-adapter-refused") << d.Format();
  EXPECT_NE(d.message.find("not a GPU"), std::string::npos) << d.message;
  std::string lower = d.message;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_TRUE(lower.find("swiftshader") != std::string::npos ||
              lower.find("cpu") != std::string::npos)
      << d.message;
  EXPECT_FALSE(d.help.empty());
}

TEST(WebGpuDevice, DoublesRandomFloats) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  const size_t n = 100003;
  std::vector<float> host = RandomFloats(n, 20261129);
  BufferId in = dev->CreateBuffer(n * 4);
  BufferId out = dev->CreateBuffer(n * 4);
  ASSERT_TRUE(dev->Write(in, 0, host.data(), n * 4).ok());
  // Poison the output so a kernel that writes nothing cannot pass.
  std::vector<float> poison(n, -12345.0f);
  ASSERT_TRUE(dev->Write(out, 0, poison.data(), n * 4).ok());

  auto pipe = dev->Pipeline(kDouble, "main");
  ASSERT_TRUE(pipe.ok()) << Describe(pipe.status());
  dev->Dispatch(*pipe, {{in}, {out}}, static_cast<uint32_t>((n + 63) / 64));
  Status s = dev->Submit();
  ASSERT_TRUE(s.ok()) << Describe(s);

  std::vector<float> result(n, 0.0f);
  s = dev->Read(out, 0, n * 4, result.data());
  ASSERT_TRUE(s.ok()) << Describe(s);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    if (result[i] != host[i] * 2.0f) ++wrong;  // doubling is exact in binary floating point
  }
  EXPECT_EQ(wrong, 0u) << "first: got " << result[0] << " want " << host[0] * 2.0f;

  // A read at an odd offset and length goes through the widened copy.
  float tail[3] = {0, 0, 0};
  ASSERT_TRUE(dev->Read(out, (n - 3) * 4, 12, tail).ok());
  EXPECT_EQ(tail[2], host[n - 1] * 2.0f);
  uint8_t bytes[5];
  ASSERT_TRUE(dev->Read(out, 4 * 10 + 1, 5, bytes).ok());
  EXPECT_EQ(std::memcmp(bytes, reinterpret_cast<const uint8_t*>(result.data()) + 41, 5), 0);

  const DeviceStats& st = dev->stats();
  EXPECT_EQ(st.dispatches, 1u);
  EXPECT_EQ(st.bytes_uploaded, 2 * n * 4);
  EXPECT_EQ(st.bytes_read, n * 4 + 12 + 5);
}

TEST(WebGpuDevice, DependentDispatchesInOneSubmitOrSentApart) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  const size_t n = 4099;
  std::vector<float> a = RandomFloats(n, 7);
  BufferId ba = dev->CreateBuffer(n * 4), bb = dev->CreateBuffer(n * 4),
           bc = dev->CreateBuffer(n * 4);
  ASSERT_TRUE(dev->Write(ba, 0, a.data(), n * 4).ok());
  auto kernel = [&](const char* expr) {
    std::string src = std::string(R"(
@group(0) @binding(0) var<storage, read> x : array<f32>;
@group(0) @binding(1) var<storage, read_write> y : array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id : vec3<u32>) {
  let i = id.x;
  if (i < arrayLength(&y)) { y[i] = )") +
                      expr + R"(; }
}
)";
    auto p = dev->Pipeline(src, "main");
    EXPECT_TRUE(p.ok()) << Describe(p.status());
    return p.ok() ? *p : PipelineId{};
  };
  PipelineId add1 = kernel("x[i] + 1.0");
  PipelineId times3 = kernel("x[i] * 3.0");
  PipelineId minus_half = kernel("x[i] - 0.5");
  const uint32_t groups = static_cast<uint32_t>((n + 63) / 64);
  const uint64_t submits_before = dev->stats().submits;
  dev->Dispatch(add1, {{ba}, {bb}}, groups);        // b = a + 1
  dev->Dispatch(times3, {{bb}, {bc}}, groups);      // c = b * 3
  dev->Dispatch(minus_half, {{bc}, {ba}}, groups);  // a = c - 0.5
  Status s = dev->Submit();
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_EQ(dev->stats().submits, submits_before + 1);
  EXPECT_EQ(dev->stats().dispatches, 3u);

  std::vector<float> got(n);
  ASSERT_TRUE(dev->Read(ba, 0, n * 4, got.data()).ok());
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    float b = a[i] + 1.0f;
    float c = b * 3.0f;
    if (got[i] != c - 0.5f) ++wrong;
  }
  EXPECT_EQ(wrong, 0u);

  // The same chain sent a dispatch at a time without waiting: each submission runs after the
  // ones sent before it, and the read sends the last one.
  const uint64_t sent_before = dev->stats().submits;
  dev->Dispatch(add1, {{ba}, {bb}}, groups);
  ASSERT_TRUE(dev->Send().ok());
  dev->Dispatch(times3, {{bb}, {bc}}, groups);
  ASSERT_TRUE(dev->Send().ok());
  dev->Dispatch(minus_half, {{bc}, {ba}}, groups);
  std::vector<float> again(n);
  ASSERT_TRUE(dev->Read(ba, 0, n * 4, again.data()).ok());
  EXPECT_EQ(dev->stats().submits, sent_before + 3);
  wrong = 0;
  for (size_t i = 0; i < n; ++i)
    if (again[i] != (got[i] + 1.0f) * 3.0f - 0.5f) ++wrong;
  EXPECT_EQ(wrong, 0u);

  // Submit with nothing new recorded still waits for the work sent before it (a run that reads
  // nothing back ends so), and only then.
  dev->Dispatch(add1, {{ba}, {bb}}, groups);
  ASSERT_TRUE(dev->Send().ok());
  const uint64_t waits_before = dev->stats().waits;
  ASSERT_TRUE(dev->Submit().ok());
  EXPECT_EQ(dev->stats().waits, waits_before + 1);
  ASSERT_TRUE(dev->Submit().ok());
  EXPECT_EQ(dev->stats().waits, waits_before + 1);
}

TEST(WebGpuDevice, LargeBufferWithTwoDimensionalDispatch) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  const uint32_t max = dev->info().limits.max_compute_workgroups_per_dimension;
  const size_t n = size_t{65535} * 64 + 4321;  // more than one dimension can cover
  const uint64_t workgroups = (n + 63) / 64;
  Grid g = SplitWorkgroups(workgroups, max);
  ASSERT_GT(g.y, 1u) << "the test needs more workgroups than one dimension holds";

  std::vector<float> host = RandomFloats(n, 99);
  BufferId buf = dev->CreateBuffer(n * 4);
  ASSERT_TRUE(dev->Write(buf, 0, host.data(), n * 4).ok());
  const std::string src = R"(
@group(0) @binding(0) var<storage, read_write> x : array<f32>;
@group(0) @binding(1) var<storage, read> params : array<u32>;  // [row stride in invocations]
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id : vec3<u32>) {
  let i = id.x + id.y * params[0];
  if (i < arrayLength(&x)) { x[i] = x[i] * 2.0 + 1.0; }
}
)";
  auto pipe = dev->Pipeline(src, "main");
  ASSERT_TRUE(pipe.ok()) << Describe(pipe.status());
  uint32_t stride = g.x * 64;
  BufferId params = dev->CreateBuffer(4);
  ASSERT_TRUE(dev->Write(params, 0, &stride, 4).ok());
  dev->Dispatch(*pipe, {{buf}, {params}}, g.x, g.y, g.z);
  Status s = dev->Submit();
  ASSERT_TRUE(s.ok()) << Describe(s);
  std::vector<float> got(n);
  ASSERT_TRUE(dev->Read(buf, 0, n * 4, got.data()).ok());
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != host[i] * 2.0f + 1.0f) ++wrong;
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(got[n - 1], host[n - 1] * 2.0f + 1.0f);
}

TEST(WebGpuDevice, PipelineCacheCompilesOnce) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  auto a = dev->Pipeline(kDouble, "main");
  ASSERT_TRUE(a.ok()) << Describe(a.status());
  EXPECT_EQ(dev->pipelines_compiled(), 1u);
  auto b = dev->Pipeline(kDouble, "main");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(dev->pipelines_compiled(), 1u);
  EXPECT_EQ(dev->stats().pipeline_cache_hits, 1u);
  // Another source is another pipeline.
  auto c = dev->Pipeline(std::string(kDouble) + "\n// variant\n", "main");
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*a, *c);
  EXPECT_EQ(dev->pipelines_compiled(), 2u);
}

TEST(WebGpuDevice, WgslErrorCarriesCompilerMessage) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  const std::string bad = R"(@group(0) @binding(0) var<storage, read_write> x : array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id : vec3<u32>) {
  x[id.x] = 2.0 * ;
}
)";
  auto p = dev->Pipeline(bad, "main");
  ASSERT_FALSE(p.ok());
  const Diagnostic& d = p.status().first();
  EXPECT_EQ(d.code, "wgsl-compile-error") << d.Format();
  EXPECT_EQ(d.kind, ErrorKind::kUser);
  EXPECT_NE(d.message.find("4:"), std::string::npos) << d.message;  // the line of the error
  EXPECT_NE(d.message.find("x[id.x] = 2.0 * ;"), std::string::npos) << d.message;
  std::cout << d.Format() << "\n";
  EXPECT_EQ(dev->pipelines_compiled(), 0u);

  // A missing entry point is refused by pipeline creation, not by the compiler.
  auto q = dev->Pipeline(kDouble, "nope");
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().first().code, "pipeline-creation-failed") << q.status().first().Format();
  // Neither poisoned the device.
  EXPECT_TRUE(dev->health().ok()) << Describe(dev->health());
  EXPECT_TRUE(dev->Pipeline(kDouble, "main").ok());
}

TEST(WebGpuDevice, PoolReusesBuffersAndCopyWorks) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  BufferId a = dev->CreateBuffer(1000);
  EXPECT_EQ(dev->BufferSize(a), 1000u);
  dev->ReleaseBuffer(a);
  EXPECT_EQ(dev->pooled_bytes(), 1000u);
  BufferId b = dev->CreateBuffer(1000);
  EXPECT_NE(a, b);
  EXPECT_EQ(dev->stats().buffers_allocated, 1u);
  EXPECT_EQ(dev->stats().buffers_reused, 1u);
  EXPECT_EQ(dev->BufferSize(a), 0u);

  // Writes ending at an unaligned end, copies and clears keep program order.
  BufferId c = dev->CreateBuffer(10);
  const char text[10] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'};
  ASSERT_TRUE(dev->Write(c, 0, text, 10).ok());
  dev->Clear(b);
  dev->Copy(c, 0, b, 100, 12);
  char back[10] = {};
  ASSERT_TRUE(dev->Read(b, 100, 10, back).ok());
  EXPECT_EQ(std::memcmp(back, text, 10), 0);
  uint32_t zero = 1;
  ASSERT_TRUE(dev->Read(b, 0, 4, &zero).ok());
  EXPECT_EQ(zero, 0u);

  EXPECT_EQ(dev->Write(c, 2, text, 4).first().code, "unaligned-write");
  EXPECT_EQ(dev->Write(c, 8, text, 4).first().code, "buffer-out-of-range");
  EXPECT_EQ(dev->Read(c, 8, 4, back).first().code, "buffer-out-of-range");
  dev->ReleaseBuffer(b);
  dev->ReleaseBuffer(c);
  dev->TrimPool();
  EXPECT_EQ(dev->pooled_bytes(), 0u);
  EXPECT_TRUE(dev->health().ok());
}

// A write over one piece lands whole, each piece at its place, with a wait between the pieces;
// a large read's staging buffer is freed after it, a small one's kept for the next read.
TEST(WebGpuDevice, LargeWritesGoInPiecesAndLargeStagingIsNotKept) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // One whole piece and a tail that ends unaligned at the buffer's end (padded to a word).
  const uint64_t bytes = kUploadPieceBytes + 4096 + 2;
  std::vector<uint8_t> data(bytes);
  for (uint8_t& v : data) v = static_cast<uint8_t>(rng());
  BufferId buf = dev->CreateBuffer(bytes);
  const uint64_t waits = dev->stats().waits;
  ASSERT_TRUE(dev->Write(buf, 0, data.data(), bytes).ok());
  EXPECT_EQ(dev->stats().waits, waits + 1);
  EXPECT_EQ(dev->stats().bytes_uploaded, bytes);

  std::vector<uint8_t> back(bytes);
  ASSERT_TRUE(dev->Read(buf, 0, bytes, back.data()).ok());
  EXPECT_TRUE(back == data);
  EXPECT_EQ(dev->kept_staging_bytes(), 0u);
  // The words either side of the pieces' seam, read alone: a small read's staging is kept.
  uint8_t seam[8] = {};
  ASSERT_TRUE(dev->Read(buf, kUploadPieceBytes - 4, 8, seam).ok());
  EXPECT_EQ(std::memcmp(seam, data.data() + kUploadPieceBytes - 4, 8), 0);
  EXPECT_EQ(dev->kept_staging_bytes(), 256u);

  // A small write stages whole: no wait.
  const uint64_t waits_before_small = dev->stats().waits;
  ASSERT_TRUE(dev->Write(buf, 0, data.data(), 4096).ok());
  EXPECT_EQ(dev->stats().waits, waits_before_small);
  dev->ReleaseBuffer(buf);
  dev->TrimPool();
  EXPECT_EQ(dev->kept_staging_bytes(), 0u);
  EXPECT_TRUE(dev->health().ok());
}

// Compiles the doubling kernel while the device is healthy: Pipeline() on a poisoned device
// reports the poison, cached or not.
PipelineId Compile(Device& dev) {
  auto pipe = dev.Pipeline(kDouble, "main");
  EXPECT_TRUE(pipe.ok()) << Describe(pipe.status());
  return pipe.ok() ? *pipe : PipelineId{};
}

// Reads in flight: each sees its buffer as the work recorded before it leaves it, whatever is
// recorded and sent after it, and they finish in any order, each once.
TEST(WebGpuDevice, ReadsInFlightSeeProgramOrderAndFinishInAnyOrder) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const size_t n = 4099;
  std::vector<float> x = RandomFloats(n, seed);
  BufferId a = dev->CreateBuffer(n * 4), b = dev->CreateBuffer(n * 4);
  ASSERT_TRUE(dev->Write(a, 0, x.data(), n * 4).ok());
  PipelineId twice = Compile(*dev);
  const uint32_t groups = static_cast<uint32_t>((n + 63) / 64);
  dev->Dispatch(twice, {{a}, {b}}, groups);  // b = 2x
  auto first = dev->StartRead(b, 0, n * 4);
  ASSERT_TRUE(first.ok()) << Describe(first.status());
  dev->Dispatch(twice, {{b}, {a}}, groups);  // a = 4x
  ASSERT_TRUE(dev->Send().ok());
  auto second = dev->StartRead(a, 0, n * 4);
  ASSERT_TRUE(second.ok()) << Describe(second.status());
  dev->Dispatch(twice, {{a}, {b}}, groups);            // b = 8x
  auto tail = dev->StartRead(b, (n - 3) * 4 + 1, 11);  // a range that is not whole words
  ASSERT_TRUE(tail.ok()) << Describe(tail.status());
  auto empty = dev->StartRead(b, 0, 0);
  ASSERT_TRUE(empty.ok()) << Describe(empty.status());

  // Doubling is exact in binary floating point: 2x, 4x and 8x are exact.
  std::vector<uint8_t> last(11);
  ASSERT_TRUE(dev->FinishRead(*tail, last.data()).ok());
  std::vector<float> want(3);
  for (int i = 0; i < 3; ++i) want[i] = x[n - 3 + i] * 8.0f;
  EXPECT_EQ(std::memcmp(last.data(), reinterpret_cast<const uint8_t*>(want.data()) + 1, 11), 0);
  std::vector<float> got(n);
  ASSERT_TRUE(dev->FinishRead(*first, got.data()).ok());
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += got[i] != x[i] * 2.0f;
  EXPECT_EQ(wrong, 0u);
  ASSERT_TRUE(dev->FinishRead(*second, got.data()).ok());
  for (size_t i = 0; i < n; ++i) wrong += got[i] != x[i] * 4.0f;
  EXPECT_EQ(wrong, 0u);
  ASSERT_TRUE(dev->FinishRead(*empty, nullptr).ok());

  // A ticket is finished once; finishing it again is the caller's bug, not the device's.
  Status again = dev->FinishRead(*first, got.data());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.first().kind, ErrorKind::kInternal);
  EXPECT_TRUE(dev->health().ok());
  EXPECT_EQ(dev->stats().maps, 3u);
  EXPECT_EQ(dev->stats().bytes_read, 2 * n * 4 + 11);
  dev->ReleaseBuffer(a);
  dev->ReleaseBuffer(b);
  dev->TrimPool();
  EXPECT_EQ(dev->pooled_bytes(), 0u);
}

TEST(WebGpuFaults, FailedSubmitIsReportedAndSticks) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  BufferId in = dev->CreateBuffer(1024), out = dev->CreateBuffer(1024);
  PipelineId pipe = Compile(*dev);
  dev->Dispatch(pipe, {{in}, {out}}, 4);
  ASSERT_TRUE(dev->Submit().ok());
  dev->InjectFault(Fault::kFailNextSubmit);
  dev->Dispatch(pipe, {{in}, {out}}, 4);
  Status s = dev->Submit();
  ASSERT_FALSE(s.ok()) << "a failed submit came back as success";
  EXPECT_EQ(s.first().kind, ErrorKind::kRuntime);
  EXPECT_EQ(s.first().code, "gpu-validation-error") << Describe(s);
  std::cout << s.first().Format() << "\n";
  // Later calls keep reporting it.
  float x[4];
  EXPECT_EQ(dev->Read(out, 0, 16, x).first().code, "gpu-validation-error");
  EXPECT_EQ(dev->Submit().first().code, "gpu-validation-error");
  EXPECT_EQ(dev->Write(in, 0, x, 16).first().code, "gpu-validation-error");
  EXPECT_FALSE(dev->health().ok());
}

TEST(WebGpuFaults, FailedMapIsReportedAndSticks) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  BufferId in = dev->CreateBuffer(1024), out = dev->CreateBuffer(1024);
  PipelineId pipe = Compile(*dev);
  dev->Dispatch(pipe, {{in}, {out}}, 4);
  ASSERT_TRUE(dev->Submit().ok());
  dev->InjectFault(Fault::kFailNextMap);
  float x[4];
  Status s = dev->Read(out, 0, 16, x);
  ASSERT_FALSE(s.ok()) << "a failed map came back as success";
  EXPECT_EQ(s.first().kind, ErrorKind::kRuntime);
  EXPECT_EQ(s.first().code, "map-failed") << Describe(s);
  std::cout << s.first().Format() << "\n";
  EXPECT_EQ(dev->Read(out, 0, 16, x).first().code, "map-failed");
  dev->Dispatch(pipe, {{in}, {out}}, 4);
  EXPECT_EQ(dev->Submit().first().code, "map-failed");
}

TEST(WebGpuFaults, LostDeviceIsReportedAndSticks) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  BufferId in = dev->CreateBuffer(1024), out = dev->CreateBuffer(1024);
  PipelineId pipe = Compile(*dev);
  dev->Dispatch(pipe, {{in}, {out}}, 4);
  ASSERT_TRUE(dev->Submit().ok());
  dev->InjectFault(Fault::kLoseDevice);
  dev->Dispatch(pipe, {{in}, {out}}, 4);
  Status s = dev->Submit();
  ASSERT_FALSE(s.ok()) << "a lost device came back as success";
  EXPECT_EQ(s.first().kind, ErrorKind::kRuntime);
  EXPECT_EQ(s.first().code, "device-lost") << Describe(s);
  std::cout << s.first().Format() << "\n";
  float x[4];
  EXPECT_EQ(dev->Read(out, 0, 16, x).first().code, "device-lost");
  EXPECT_EQ(dev->Pipeline(kDouble, "main").status().first().code, "device-lost");
  EXPECT_EQ(dev->Submit().first().code, "device-lost");
}

TEST(WebGpuFaults, BadRecordingIsReportedBySubmit) {
  auto dev = OpenSoftware();
  ASSERT_TRUE(dev);
  BufferId buf = dev->CreateBuffer(64);
  dev->Dispatch(PipelineId{42}, {{buf}}, 1);
  Status s = dev->Submit();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.first().kind, ErrorKind::kInternal);
  // A validation error Dawn finds while recording (a binding offset off the alignment).
  auto pipe = dev->Pipeline(kDouble, "main");
  ASSERT_TRUE(pipe.ok());
  BufferId big = dev->CreateBuffer(4096);
  dev->Dispatch(*pipe, {{big, 4, 256}, {big, 1024, 256}}, 1);
  s = dev->Submit();
  ASSERT_FALSE(s.ok()) << "an invalid bind group came back as success";
  EXPECT_EQ(s.first().code, "gpu-validation-error") << Describe(s);
}

}  // namespace
}  // namespace scellis::runtime::webgpu

namespace scellis::runtime::webgpu {
namespace {

// With GPU timestamps each dispatch gets its interval on the device's clock, in recording order
// across submissions: dependent dispatches run one after another, so each starts after the one
// before it ends. Timing changes no result.
TEST(WebGpuDevice, TimesEachDispatchOnTheGpu) {
  auto dev = OpenSoftware({.gpu_timestamps = true});
  ASSERT_TRUE(dev);
  ASSERT_TRUE(dev->gpu_timestamps());
  const size_t n = 4099;
  std::vector<float> host = RandomFloats(n, 20261202);
  BufferId a = dev->CreateBuffer(n * 4), b = dev->CreateBuffer(n * 4);
  ASSERT_TRUE(dev->Write(a, 0, host.data(), n * 4).ok());
  auto pipe = dev->Pipeline(kDouble, "main");
  ASSERT_TRUE(pipe.ok()) << Describe(pipe.status());
  const uint32_t groups = static_cast<uint32_t>((n + 63) / 64);
  for (int submission : {5, 3}) {
    for (int i = 0; i < submission; ++i) {
      dev->Dispatch(*pipe, {{a}, {b}}, groups);
      std::swap(a, b);
    }
    ASSERT_TRUE(dev->Submit().ok());
  }
  auto times = dev->TakeGpuTimes();
  ASSERT_TRUE(times.ok()) << Describe(times.status());
  ASSERT_EQ(times->size(), 8u);
  for (size_t i = 0; i < times->size(); ++i) {
    SCOPED_TRACE("dispatch " + std::to_string(i));
    EXPECT_LE((*times)[i].begin_ns, (*times)[i].end_ns);
    if (i > 0) EXPECT_LE((*times)[i - 1].end_ns, (*times)[i].begin_ns);
  }
  EXPECT_GT(times->back().end_ns, times->front().begin_ns);
  auto again = dev->TakeGpuTimes();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());

  std::vector<float> result(n);
  ASSERT_TRUE(dev->Read(a, 0, n * 4, result.data()).ok());
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += result[i] != host[i] * 256.0f;  // 2^8, exact
  EXPECT_EQ(wrong, 0u);

  // Untimed devices have nothing to report.
  auto plain = OpenSoftware();
  ASSERT_TRUE(plain);
  auto none = plain->TakeGpuTimes();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// A GPU's memory is read from Vulkan, through the loader Dawn runs on, for the device whose IDs
// are the adapter's: on SwiftShader, Vulkan must name the same device Dawn does. A software
// adapter's buffers are host memory, so its own heaps are not what a plan is judged against.
TEST(VulkanMemory, ReadsTheHeapsOfTheAdaptersDevice) {
  auto dev = OpenSoftware();
  ASSERT_NE(dev, nullptr);
  const AdapterInfo& info = dev->info();
  auto vk = ReadVulkanDevice(info.vulkan_loader, info.vendor_id, info.device_id);
  ASSERT_TRUE(vk.ok()) << Describe(vk.status());
  EXPECT_EQ(vk->name, info.device);
  ASSERT_FALSE(vk->heaps.empty());
  int64_t device_local = 0;
  for (const VulkanHeap& h : vk->heaps) device_local += h.device_local ? h.bytes : 0;
  EXPECT_GT(device_local, 0);
  EXPECT_EQ(info.device_memory_bytes, 0);
  EXPECT_EQ(PlanLimits(info).device_memory_bytes, 0);

  auto none = ReadVulkanDevice(info.vulkan_loader, 0x10de, 0x0001);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.errors().front().code, "device-memory-unknown");
  EXPECT_NE(none.errors().front().message.find("0x10de:0x0001"), std::string::npos);
  EXPECT_NE(none.errors().front().message.find(info.device), std::string::npos);
}

// What a plan counts on: the largest device-local heap (not a host-visible one, however large), or
// the budget the driver gives this process where that is smaller.
TEST(VulkanMemory, ThePlanCountsTheLargestDeviceLocalHeapOrItsBudget) {
  const int64_t gib = int64_t{1} << 30;
  std::vector<VulkanHeap> heaps = {
      {256 << 20, true, 0}, {120 * gib, false, 0}, {80 * gib, true, 0}};
  DeviceMemory m = DeviceMemoryOf(heaps, "GPU X");
  EXPECT_EQ(m.bytes, 80 * gib);
  EXPECT_EQ(m.source, "the device-local memory of GPU X (80.0 GiB, from Vulkan)");
  heaps[2].budget_bytes = 60 * gib;
  m = DeviceMemoryOf(heaps, "GPU X");
  EXPECT_EQ(m.bytes, 60 * gib);
  EXPECT_NE(m.source.find("60.0 GiB of it free to this process"), std::string::npos);
  heaps[2].budget_bytes = 90 * gib;  // a budget over the heap's size counts for no more than it
  EXPECT_EQ(DeviceMemoryOf(heaps, "GPU X").bytes, 80 * gib);
  EXPECT_EQ(DeviceMemoryOf({{120 * gib, false, 0}}, "GPU X").bytes, 0);

  AdapterInfo discrete;
  discrete.adapter_type = "discrete-gpu";
  discrete.device_memory_bytes = 80 * gib;
  discrete.device_memory_source = m.source;
  execplan::DeviceLimits l = PlanLimits(discrete);
  EXPECT_FALSE(l.buffers_in_host_memory);
  EXPECT_EQ(l.device_memory_bytes, 80 * gib);
  EXPECT_EQ(l.device_memory_source, m.source);
}

}  // namespace
}  // namespace scellis::runtime::webgpu
