// ---- k0_matmul ----
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
  for (var t = 0u; t < 5u; t = t + 16u) {
    let ka = t + lid.x;
    let kb = t + lid.y;
    tile_a[lid.y * 16u + lid.x] = select(0.0, in0[off_a + r * 5u + ka], r < 4u && ka < 5u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, in1[off_b + kb * 3u + c], kb < 5u && c < 3u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 16u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 4u && c < 3u) { out[wg.z * 12u + r * 3u + c] = acc; }
}

// ---- k1_matmul_mul_sub_relu ----
// matmul 16x16x16/1x1
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
fn is_nan_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_below_zero_f32(x: f32) -> bool {
  let b = bitcast<u32>(x);
  return b > 0x80000000u && b <= 0xff800000u;
}
fn nan_f32() -> f32 {
  var bits = 0x7fc00000u;
  return bitcast<f32>(bits);
}
fn inf_f32() -> f32 {
  var bits = 0x7f800000u;
  return bitcast<f32>(bits);
}
fn relu_f32(x: f32) -> f32 { return select(x, 0.0, is_below_zero_f32(x)); }
fn epilogue(x0: f32, e: u32) -> f32 {
  let s0 = f32(0.5);
  let s1 = (x0 * s0);
  let s2 = f32(1.0);
  let s3 = (s1 - s2);
  let s4 = relu_f32(s3);
  return s4;
}
var<workgroup> tile_a: array<f32, 256>;
var<workgroup> tile_b: array<f32, 288>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  var rem = wg.z;
  var off_a = 0u;
  var off_b = 0u;
  let r = wg.y * 16u + lid.y;
  let c = wg.x * 16u + lid.x;
  let ct = wg.x * 16u + lid.y;
  var acc = 0.0;
  for (var t = 0u; t < 3u; t = t + 16u) {
    let ka = t + lid.x;
    let kb = t + lid.x;
    tile_a[lid.y * 16u + lid.x] = select(0.0, in0[off_a + r * 3u + ka], r < 4u && ka < 3u);
    tile_b[lid.x * 18u + lid.y] = select(0.0, in1[off_b + ct * 3u + kb], kb < 3u && ct < 4u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 16u + kk] * tile_b[kk * 18u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 4u && c < 4u) { out[wg.z * 16u + r * 4u + c] = epilogue(acc, wg.z * 16u + r * 4u + c); }
}

// ---- k2_sum ----
@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
var<workgroup> partial: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  let lo = wg.x * 256u;
  let hi = min(lo + 256u, 4u);
  var s = vec4<f32>(0.0);
  var r = lo + t;
  for (; r + 768u < hi; r = r + 1024u) {
    let v0 = in0[r];
    let v1 = in0[r + 256u];
    let v2 = in0[r + 512u];
    let v3 = in0[r + 768u];
    s = s + v0;
    s = s + v1;
    s = s + v2;
    s = s + v3;
  }
  for (; r < hi; r = r + 256u) { s = s + in0[r]; }
  partial[t] = (s.x + s.y) + (s.z + s.w);
  workgroupBarrier();
  for (var w = 128u; w > 0u; w = w >> 1u) {
    if (t < w) { partial[t] = partial[t] + partial[t + w]; }
    workgroupBarrier();
  }
  if (t == 0u) {
    out[wg.x] = partial[0];
  }
}

