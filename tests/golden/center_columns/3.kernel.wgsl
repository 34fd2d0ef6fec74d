// ---- k0_mean ----
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
// matmul 16x16x16/1x1
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
var<workgroup> tile_a: array<f32, 256>;
var<workgroup> tile_b: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  var rem = wg.z;
  var off_a = 0u;
  var off_b = 0u;
  let r = wg.y * 16u + lid.y;
  let c = wg.x * 16u + lid.x;
  var acc = 0.0;
  for (var t = 0u; t < 3u; t = t + 16u) {
    let ka = t + lid.x;
    let kb = t + lid.y;
    tile_a[lid.y * 16u + lid.x] = select(0.0, in0[off_a + r * 3u + ka], r < 4u && ka < 3u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, in1[off_b + kb * 2u + c], kb < 3u && c < 2u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 16u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 4u && c < 2u) { out[wg.z * 8u + r * 2u + c] = acc; }
}

