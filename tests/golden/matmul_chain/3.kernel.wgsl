// ---- k0_matmul ----
// k0_matmul
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 12u) { return; }
  var rem = i / 12u;
  var off_a = 0u;
  var off_b = 0u;
  let r = (i / 3u) % 4u;
  let c = i % 3u;
  var acc = 0.0;
  for (var kk = 0u; kk < 5u; kk = kk + 1u) {
    acc = acc + in0[off_a + r * 5u + kk] * in1[off_b + kk * 3u + c];
  }
  out[i] = acc;
}

// ---- k1_transpose ----
// k1_transpose
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 12u) { return; }
  var rem = i;
  var src = 0u;
  src = src + (rem % 4u) * 3u;
  rem = rem / 4u;
  src = src + (rem % 3u) * 1u;
  rem = rem / 3u;
  out[i] = in0[src];
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
  if (i >= 16u) { return; }
  var rem = i / 16u;
  var off_a = 0u;
  var off_b = 0u;
  let r = (i / 4u) % 4u;
  let c = i % 4u;
  var acc = 0.0;
  for (var kk = 0u; kk < 3u; kk = kk + 1u) {
    acc = acc + in0[off_a + r * 3u + kk] * in1[off_b + kk * 4u + c];
  }
  out[i] = acc;
}

// ---- k3_fused_mul_sub_relu ----
// k3_fused_mul_sub_relu
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 16u) { return; }
  let x0 = in0[i];
  let s0 = f32(0.5);
  let s1 = (x0 * s0);
  let s2 = f32(1.0);
  let s3 = (s1 - s2);
  let s4 = select(0.0, s3, s3 > 0.0);
  out[i] = s4;
}

// ---- k4_sum ----
// k4_sum
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
var<workgroup> partial: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
  var s = 0.0;
  for (var j = t; j < 16u; j = j + 256u) { s = s + in0[j]; }
  partial[t] = s;
  workgroupBarrier();
  for (var w = 128u; w > 0u; w = w >> 1u) {
    if (t < w) { partial[t] = partial[t] + partial[t + w]; }
    workgroupBarrier();
  }
  if (t == 0u) { out[0] = partial[0]; }
}

