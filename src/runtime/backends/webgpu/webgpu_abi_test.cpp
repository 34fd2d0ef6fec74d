// The layouts and values webgpu_api.h must have on x86-64 Linux (LP64, System V), worked out by
// hand from webgpu.yml: pointers, size_t and uint64_t take 8 bytes aligned to 8; enums, WGPUBool
// and uint32_t take 4 aligned to 4; a struct is padded to its largest alignment. A wrong number
// here means the generator or the YAML changed, and Dawn would read garbage: fix the generator,
// never these numbers, unless the API revision itself moved on.
#include <gtest/gtest.h>

#include <cstddef>

#include "runtime/backends/webgpu/webgpu_api.h"

namespace {

#define EXPECT_LAYOUT(type, size) static_assert(sizeof(type) == (size), #type " size")
#define EXPECT_AT(type, member, off) \
  static_assert(offsetof(type, member) == (off), #type "::" #member " offset")

static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8, "these numbers are for LP64");

// Scalars and the small building blocks.
EXPECT_LAYOUT(WGPUBool, 4);
EXPECT_LAYOUT(WGPUFlags, 8);
EXPECT_LAYOUT(WGPUBufferUsage, 8);
EXPECT_LAYOUT(WGPUMapMode, 8);
EXPECT_LAYOUT(WGPUSType, 4);
EXPECT_LAYOUT(WGPUFeatureName, 4);
EXPECT_LAYOUT(WGPUCallbackMode, 4);

EXPECT_LAYOUT(WGPUStringView, 16);  // {char const* data; size_t length}
EXPECT_AT(WGPUStringView, data, 0);
EXPECT_AT(WGPUStringView, length, 8);

EXPECT_LAYOUT(WGPUChainedStruct, 16);  // {next; sType; 4 bytes padding}
EXPECT_AT(WGPUChainedStruct, next, 0);
EXPECT_AT(WGPUChainedStruct, sType, 8);

EXPECT_LAYOUT(WGPUFuture, 8);
EXPECT_LAYOUT(WGPUFutureWaitInfo, 16);  // future 0, completed 8, pad
EXPECT_AT(WGPUFutureWaitInfo, completed, 8);

// Callback infos: {nextInChain 0, mode 8, (pad), callback 16, userdata1 24, userdata2 32} = 40;
// the uncaptured-error one has no mode: {0, callback 8, userdata1 16, userdata2 24} = 32.
EXPECT_LAYOUT(WGPURequestAdapterCallbackInfo, 40);
EXPECT_AT(WGPURequestAdapterCallbackInfo, mode, 8);
EXPECT_AT(WGPURequestAdapterCallbackInfo, callback, 16);
EXPECT_AT(WGPURequestAdapterCallbackInfo, userdata1, 24);
EXPECT_AT(WGPURequestAdapterCallbackInfo, userdata2, 32);
EXPECT_LAYOUT(WGPURequestDeviceCallbackInfo, 40);
EXPECT_LAYOUT(WGPUBufferMapCallbackInfo, 40);
EXPECT_LAYOUT(WGPUQueueWorkDoneCallbackInfo, 40);
EXPECT_LAYOUT(WGPUPopErrorScopeCallbackInfo, 40);
EXPECT_LAYOUT(WGPUCompilationInfoCallbackInfo, 40);
EXPECT_LAYOUT(WGPUDeviceLostCallbackInfo, 40);
EXPECT_AT(WGPUDeviceLostCallbackInfo, callback, 16);
EXPECT_LAYOUT(WGPUUncapturedErrorCallbackInfo, 32);
EXPECT_AT(WGPUUncapturedErrorCallbackInfo, callback, 8);
EXPECT_AT(WGPUUncapturedErrorCallbackInfo, userdata1, 16);
EXPECT_AT(WGPUUncapturedErrorCallbackInfo, userdata2, 24);

// Instance.
EXPECT_LAYOUT(WGPUInstanceDescriptor, 32);  // next 0, count 8, features 16, limits 24
EXPECT_AT(WGPUInstanceDescriptor, requiredFeatureCount, 8);
EXPECT_AT(WGPUInstanceDescriptor, requiredFeatures, 16);
EXPECT_AT(WGPUInstanceDescriptor, requiredLimits, 24);
EXPECT_LAYOUT(WGPUInstanceLimits, 16);

// Adapter.
EXPECT_LAYOUT(WGPURequestAdapterOptions, 32);
EXPECT_AT(WGPURequestAdapterOptions, featureLevel, 8);
EXPECT_AT(WGPURequestAdapterOptions, powerPreference, 12);
EXPECT_AT(WGPURequestAdapterOptions, forceFallbackAdapter, 16);
EXPECT_AT(WGPURequestAdapterOptions, backendType, 20);
EXPECT_AT(WGPURequestAdapterOptions, compatibleSurface, 24);

// next 0; four string views at 8, 24, 40, 56; then six 4-byte fields from 72.
EXPECT_LAYOUT(WGPUAdapterInfo, 96);
EXPECT_AT(WGPUAdapterInfo, vendor, 8);
EXPECT_AT(WGPUAdapterInfo, architecture, 24);
EXPECT_AT(WGPUAdapterInfo, device, 40);
EXPECT_AT(WGPUAdapterInfo, description, 56);
EXPECT_AT(WGPUAdapterInfo, backendType, 72);
EXPECT_AT(WGPUAdapterInfo, adapterType, 76);
EXPECT_AT(WGPUAdapterInfo, vendorID, 80);
EXPECT_AT(WGPUAdapterInfo, deviceID, 84);
EXPECT_AT(WGPUAdapterInfo, subgroupMinSize, 88);
EXPECT_AT(WGPUAdapterInfo, subgroupMaxSize, 92);

EXPECT_LAYOUT(WGPUSupportedFeatures, 16);
EXPECT_AT(WGPUSupportedFeatures, features, 8);

// WGPULimits: next 0; 13 uint32 from 8 to 60; maxUniformBufferBindingSize 64 and
// maxStorageBufferBindingSize 72 (uint64); two alignments 80, 84; maxVertexBuffers 88, 4 bytes of
// padding; maxBufferSize 96 (uint64); then eleven uint32 from 104 to 144, maxImmediateSize 148.
EXPECT_LAYOUT(WGPULimits, 152);
EXPECT_AT(WGPULimits, maxTextureDimension1D, 8);
EXPECT_AT(WGPULimits, maxBindGroups, 24);
EXPECT_AT(WGPULimits, maxBindingsPerBindGroup, 32);
EXPECT_AT(WGPULimits, maxStorageBuffersPerShaderStage, 52);
EXPECT_AT(WGPULimits, maxUniformBuffersPerShaderStage, 60);
EXPECT_AT(WGPULimits, maxUniformBufferBindingSize, 64);
EXPECT_AT(WGPULimits, maxStorageBufferBindingSize, 72);
EXPECT_AT(WGPULimits, minUniformBufferOffsetAlignment, 80);
EXPECT_AT(WGPULimits, minStorageBufferOffsetAlignment, 84);
EXPECT_AT(WGPULimits, maxVertexBuffers, 88);
EXPECT_AT(WGPULimits, maxBufferSize, 96);
EXPECT_AT(WGPULimits, maxVertexAttributes, 104);
EXPECT_AT(WGPULimits, maxComputeWorkgroupStorageSize, 124);
EXPECT_AT(WGPULimits, maxComputeInvocationsPerWorkgroup, 128);
EXPECT_AT(WGPULimits, maxComputeWorkgroupSizeX, 132);
EXPECT_AT(WGPULimits, maxComputeWorkgroupSizeY, 136);
EXPECT_AT(WGPULimits, maxComputeWorkgroupSizeZ, 140);
EXPECT_AT(WGPULimits, maxComputeWorkgroupsPerDimension, 144);
EXPECT_AT(WGPULimits, maxImmediateSize, 148);

// Device: next 0, label 8, featureCount 24, features 32, requiredLimits 40, defaultQueue 48
// (24 bytes), lost callback 72 (40), uncaptured error callback 112 (32) = 144.
EXPECT_LAYOUT(WGPUQueueDescriptor, 24);
EXPECT_LAYOUT(WGPUDeviceDescriptor, 144);
EXPECT_AT(WGPUDeviceDescriptor, label, 8);
EXPECT_AT(WGPUDeviceDescriptor, requiredFeatureCount, 24);
EXPECT_AT(WGPUDeviceDescriptor, requiredFeatures, 32);
EXPECT_AT(WGPUDeviceDescriptor, requiredLimits, 40);
EXPECT_AT(WGPUDeviceDescriptor, defaultQueue, 48);
EXPECT_AT(WGPUDeviceDescriptor, deviceLostCallbackInfo, 72);
EXPECT_AT(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo, 112);

// Buffers: next 0, label 8, usage 24 (uint64), size 32, mappedAtCreation 40, pad = 48.
EXPECT_LAYOUT(WGPUBufferDescriptor, 48);
EXPECT_AT(WGPUBufferDescriptor, usage, 24);
EXPECT_AT(WGPUBufferDescriptor, size, 32);
EXPECT_AT(WGPUBufferDescriptor, mappedAtCreation, 40);

// Shaders: the WGSL source is an extension struct with an embedded chain header.
EXPECT_LAYOUT(WGPUShaderModuleDescriptor, 24);
EXPECT_AT(WGPUShaderModuleDescriptor, label, 8);
EXPECT_LAYOUT(WGPUShaderSourceWGSL, 32);
EXPECT_AT(WGPUShaderSourceWGSL, chain, 0);
EXPECT_AT(WGPUShaderSourceWGSL, code, 16);
EXPECT_LAYOUT(WGPUCompilationInfo, 24);
EXPECT_AT(WGPUCompilationInfo, messageCount, 8);
EXPECT_AT(WGPUCompilationInfo, messages, 16);
EXPECT_LAYOUT(WGPUCompilationMessage, 64);  // next, message 8, type 24, pad, 4 x uint64 from 32
EXPECT_AT(WGPUCompilationMessage, message, 8);
EXPECT_AT(WGPUCompilationMessage, type, 24);
EXPECT_AT(WGPUCompilationMessage, lineNum, 32);
EXPECT_AT(WGPUCompilationMessage, linePos, 40);
EXPECT_AT(WGPUCompilationMessage, offset, 48);
EXPECT_AT(WGPUCompilationMessage, length, 56);

// Pipelines: ComputeState = next 0, module 8, entryPoint 16, constantCount 32, constants 40.
EXPECT_LAYOUT(WGPUConstantEntry, 32);
EXPECT_LAYOUT(WGPUComputeState, 48);
EXPECT_AT(WGPUComputeState, module, 8);
EXPECT_AT(WGPUComputeState, entryPoint, 16);
EXPECT_AT(WGPUComputeState, constantCount, 32);
EXPECT_AT(WGPUComputeState, constants, 40);
EXPECT_LAYOUT(WGPUComputePipelineDescriptor, 80);
EXPECT_AT(WGPUComputePipelineDescriptor, layout, 24);
EXPECT_AT(WGPUComputePipelineDescriptor, compute, 32);

// Bind groups: entry = next 0, binding 8, pad, buffer 16, offset 24, size 32, sampler 40,
// textureView 48 = 56.
EXPECT_LAYOUT(WGPUBindGroupEntry, 56);
EXPECT_AT(WGPUBindGroupEntry, binding, 8);
EXPECT_AT(WGPUBindGroupEntry, buffer, 16);
EXPECT_AT(WGPUBindGroupEntry, offset, 24);
EXPECT_AT(WGPUBindGroupEntry, size, 32);
EXPECT_AT(WGPUBindGroupEntry, sampler, 40);
EXPECT_AT(WGPUBindGroupEntry, textureView, 48);
EXPECT_LAYOUT(WGPUBindGroupDescriptor, 48);
EXPECT_AT(WGPUBindGroupDescriptor, layout, 24);
EXPECT_AT(WGPUBindGroupDescriptor, entryCount, 32);
EXPECT_AT(WGPUBindGroupDescriptor, entries, 40);

// Encoders.
EXPECT_LAYOUT(WGPUCommandEncoderDescriptor, 24);
EXPECT_LAYOUT(WGPUCommandBufferDescriptor, 24);
EXPECT_LAYOUT(WGPUPassTimestampWrites, 24);
EXPECT_LAYOUT(WGPUComputePassDescriptor, 32);
EXPECT_AT(WGPUComputePassDescriptor, timestampWrites, 24);

// Enum and flag values Scellis passes to Dawn or tests in its answers: index in the YAML's
// entry list (null entries count) plus the enum prefix, 0 here.
TEST(WebGpuAbi, EnumValues) {
  EXPECT_EQ(WGPUSType_ShaderSourceWGSL, 0x2);
  EXPECT_EQ(WGPUCallbackMode_WaitAnyOnly, 0x1);
  EXPECT_EQ(WGPUCallbackMode_AllowProcessEvents, 0x2);
  EXPECT_EQ(WGPUCallbackMode_AllowSpontaneous, 0x3);
  EXPECT_EQ(WGPUInstanceFeatureName_TimedWaitAny, 0x1);
  EXPECT_EQ(WGPUFeatureLevel_Core, 0x2);
  EXPECT_EQ(WGPUPowerPreference_HighPerformance, 0x2);
  EXPECT_EQ(WGPUBackendType_Undefined, 0x0);
  EXPECT_EQ(WGPUBackendType_Null, 0x1);
  EXPECT_EQ(WGPUBackendType_Vulkan, 0x6);  // 5 in the 2020-2022 headers
  EXPECT_EQ(WGPUBackendType_Metal, 0x5);
  EXPECT_EQ(WGPUAdapterType_DiscreteGPU, 0x1);
  EXPECT_EQ(WGPUAdapterType_CPU, 0x3);
  EXPECT_EQ(WGPUStatus_Success, 0x1);
  EXPECT_EQ(WGPUWaitStatus_Success, 0x1);
  EXPECT_EQ(WGPUWaitStatus_TimedOut, 0x2);
  EXPECT_EQ(WGPURequestAdapterStatus_Success, 0x1);
  EXPECT_EQ(WGPURequestDeviceStatus_Success, 0x1);
  EXPECT_EQ(WGPUMapAsyncStatus_Success, 0x1);
  EXPECT_EQ(WGPUQueueWorkDoneStatus_Success, 0x1);
  EXPECT_EQ(WGPUPopErrorScopeStatus_Success, 0x1);
  EXPECT_EQ(WGPUCompilationInfoRequestStatus_Success, 0x1);
  EXPECT_EQ(WGPUCompilationMessageType_Error, 0x1);
  EXPECT_EQ(WGPUErrorFilter_Validation, 0x1);
  EXPECT_EQ(WGPUErrorFilter_Internal, 0x3);
  EXPECT_EQ(WGPUErrorType_NoError, 0x1);
  EXPECT_EQ(WGPUErrorType_Validation, 0x2);
  EXPECT_EQ(WGPUErrorType_OutOfMemory, 0x3);
  EXPECT_EQ(WGPUErrorType_Internal, 0x4);
  EXPECT_EQ(WGPUDeviceLostReason_Destroyed, 0x2);
  EXPECT_EQ(WGPUFeatureName_ShaderF16, 0xB);
  EXPECT_EQ(WGPUFeatureName_Subgroups, 0x12);

  // Flags: entry i > 0 is bit i - 1.
  EXPECT_EQ(WGPUBufferUsage_MapRead, 0x1u);
  EXPECT_EQ(WGPUBufferUsage_CopySrc, 0x4u);
  EXPECT_EQ(WGPUBufferUsage_CopyDst, 0x8u);
  EXPECT_EQ(WGPUBufferUsage_Storage, 0x80u);
  EXPECT_EQ(WGPUMapMode_Read, 0x1u);

  EXPECT_EQ(WGPU_STRLEN, ~size_t{0});
  EXPECT_EQ(WGPU_WHOLE_SIZE, ~uint64_t{0});
}

TEST(WebGpuAbi, EnumNames) {
  using namespace scellis::runtime::webgpu;
  EXPECT_STREQ(BackendTypeName(WGPUBackendType_Vulkan), "vulkan");
  EXPECT_STREQ(AdapterTypeName(WGPUAdapterType_DiscreteGPU), "discrete-gpu");
  EXPECT_STREQ(AdapterTypeName(WGPUAdapterType_CPU), "cpu");
  EXPECT_STREQ(FeatureNameName(WGPUFeatureName_ShaderF16), "shader-f16");
  EXPECT_EQ(FeatureNameName(static_cast<WGPUFeatureName>(0x5001a)), nullptr);
}

}  // namespace
