#version 450
// The copy every bandwidth row is held against, written for Vulkan directly (no Dawn, no Tint):
// each invocation moves vec4s in a grid-stride loop.
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer Source { vec4 source[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Destination { vec4 destination[]; };
layout(push_constant) uniform Counts { uint quads; uint stride; } counts;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < counts.quads; i += counts.stride)
    destination[i] = source[i];
}
