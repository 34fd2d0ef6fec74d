// ---- k0_mean ----
// k0_mean
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 3u) { return; }
  let base = (i / 3u) * 12u + i % 3u;
  var s = 0.0;
  for (var j = 0u; j < 4u; j = j + 1u) { s = s + in0[base + j * 3u]; }
  out[i] = s / f32(4.0);
}

// ---- k1_fused_sub ----
// k1_fused_sub
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 12u) { return; }
  var rem = i;
  let d1 = rem % 3u;
  rem = rem / 3u;
  let d0 = rem % 4u;
  let x0 = in0[i];
  let x1 = in1[d1 * 1u];
  let s0 = (x0 - x1);
  out[i] = s0;
}

// ---- k2_matmul ----
// k2_matmul
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 8u) { return; }
  var rem = i / 8u;
  var off_a = 0u;
  var off_b = 0u;
  let r = (i / 2u) % 4u;
  let c = i % 2u;
  var acc = 0.0;
  for (var kk = 0u; kk < 3u; kk = kk + 1u) {
    acc = acc + in0[off_a + r * 3u + kk] * in1[off_b + kk * 2u + c];
  }
  out[i] = acc;
}

