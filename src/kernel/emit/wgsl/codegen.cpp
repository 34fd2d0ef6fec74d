#include "kernel/emit/wgsl/codegen.h"

#include <cmath>
#include <cstdio>

namespace scellis::kernel::wgsl {

std::array<uint32_t, 3> LinearGrid(int64_t invocations) {
  int64_t groups = (invocations + kWorkgroupSize - 1) / kWorkgroupSize;
  if (groups < 1) groups = 1;
  if (groups <= kMaxWorkgroupsPerDim) return {static_cast<uint32_t>(groups), 1, 1};
  int64_t y = (groups + kMaxWorkgroupsPerDim - 1) / kMaxWorkgroupsPerDim;
  return {kMaxWorkgroupsPerDim, static_cast<uint32_t>(y), 1};
}

std::string F32(double v) {
  if (std::isnan(v)) return "bitcast<f32>(0x7fc00000u)";
  if (std::isinf(v)) return v > 0 ? "bitcast<f32>(0x7f800000u)" : "bitcast<f32>(0xff800000u)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v)));
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return "f32(" + s + ")";
}

std::string U32(int64_t v) {
  return std::to_string(v) + "u";
}

std::string Bindings(size_t inputs) {
  std::string s;
  for (size_t i = 0; i < inputs; ++i)
    s += "@group(0) @binding(" + std::to_string(i) + ") var<storage, read> in" + std::to_string(i) +
         ": array<f32>;\n";
  s += "@group(0) @binding(" + std::to_string(inputs) +
       ") var<storage, read_write> out: array<f32>;\n";
  return s;
}

std::string LinearEntry(int64_t total) {
  return "@compute @workgroup_size(" + std::to_string(kWorkgroupSize) +
         ")\n"
         "fn main(@builtin(global_invocation_id) gid: vec3<u32>,\n"
         "        @builtin(num_workgroups) groups: vec3<u32>) {\n"
         "  let i = gid.x + gid.y * groups.x * " +
         U32(kWorkgroupSize) +
         ";\n"
         "  if (i >= " +
         U32(total) + ") { return; }\n";
}

Result<Generated> Generate(const Module& m, const Kernel& k) {
  static const FamilyGen kFamilies[] = {GenerateElementwise, GenerateReduce,  GenerateLinalg,
                                        GenerateLayout,      GenerateStencil, GenerateNn,
                                        GenerateOptim};
  Generated out;
  for (FamilyGen f : kFamilies)
    if (f(m, k, out)) return out;
  return InternalError("wgsl.Generate", "no WGSL generator for kernel " + k.op);
}

}  // namespace scellis::kernel::wgsl
