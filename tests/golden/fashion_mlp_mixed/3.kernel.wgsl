// ---- k0_fused_cast ----
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f16>;
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
fn f32_to_i32(x: f32) -> i32 {
  if (is_nan_f32(x)) { return 0i; }
  if (x >= 2147483648.0) { return 2147483647i; }
  if (x <= -2147483648.0) { return i32(-2147483648); }
  return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
  if (is_nan_f32(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
fn i32_to_f32(v: i32) -> f32 {
  return f32(v & i32(-65536)) + f32(v & 65535i);
}
fn u32_to_f32(v: u32) -> f32 {
  return f32(v & 0xffff0000u) + f32(v & 0xffffu);
}
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  var h = 0u;
  if (a >= 0x7f800000u) {
    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;
  } else if (a < 0x38800000u) {
    if (a >= 0x33000000u) {
      let m = (a & 0x7fffffu) | 0x800000u;
      let shift = 126u - (a >> 23u);
      h = m >> shift;
      let rem = m & ((1u << shift) - 1u);
      let half = 1u << (shift - 1u);
      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    }
  } else {
    h = (a >> 13u) - (112u << 10u);
    let rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
  }
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) {
    let v = f32(mant) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 50176u) { return; }
  let x0 = in0[i];
  let s0 = round_f16(x0);
  out[i] = f16(s0);
}

// ---- k1_fused_cast ----
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f16>;
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
fn f32_to_i32(x: f32) -> i32 {
  if (is_nan_f32(x)) { return 0i; }
  if (x >= 2147483648.0) { return 2147483647i; }
  if (x <= -2147483648.0) { return i32(-2147483648); }
  return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
  if (is_nan_f32(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
fn i32_to_f32(v: i32) -> f32 {
  return f32(v & i32(-65536)) + f32(v & 65535i);
}
fn u32_to_f32(v: u32) -> f32 {
  return f32(v & 0xffff0000u) + f32(v & 0xffffu);
}
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  var h = 0u;
  if (a >= 0x7f800000u) {
    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;
  } else if (a < 0x38800000u) {
    if (a >= 0x33000000u) {
      let m = (a & 0x7fffffu) | 0x800000u;
      let shift = 126u - (a >> 23u);
      h = m >> shift;
      let rem = m & ((1u << shift) - 1u);
      let half = 1u << (shift - 1u);
      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    }
  } else {
    h = (a >> 13u) - (112u << 10u);
    let rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
  }
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) {
    let v = f32(mant) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 200704u) { return; }
  let x0 = in0[i];
  let s0 = round_f16(x0);
  out[i] = f16(s0);
}

// ---- k2_matmul ----
// matmul 16x16x16/1x1
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f16>;
@group(0) @binding(1) var<storage, read> in1: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f16>;
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  var h = 0u;
  if (a >= 0x7f800000u) {
    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;
  } else if (a < 0x38800000u) {
    if (a >= 0x33000000u) {
      let m = (a & 0x7fffffu) | 0x800000u;
      let shift = 126u - (a >> 23u);
      h = m >> shift;
      let rem = m & ((1u << shift) - 1u);
      let half = 1u << (shift - 1u);
      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    }
  } else {
    h = (a >> 13u) - (112u << 10u);
    let rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
  }
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) {
    let v = f32(mant) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));
}
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
  for (var t = 0u; t < 784u; t = t + 16u) {
    let ka = t + lid.x;
    let kb = t + lid.y;
    tile_a[lid.y * 16u + lid.x] = select(0.0, f32(in0[off_a + r * 784u + ka]), r < 64u && ka < 784u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, f32(in1[off_b + kb * 256u + c]), kb < 784u && c < 256u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 16u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 64u && c < 256u) { out[wg.z * 16384u + r * 256u + c] = f16(round_f16(acc)); }
}

// ---- k3_fused_cast_add_relu ----
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f16>;
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
fn f32_to_i32(x: f32) -> i32 {
  if (is_nan_f32(x)) { return 0i; }
  if (x >= 2147483648.0) { return 2147483647i; }
  if (x <= -2147483648.0) { return i32(-2147483648); }
  return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
  if (is_nan_f32(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
fn i32_to_f32(v: i32) -> f32 {
  return f32(v & i32(-65536)) + f32(v & 65535i);
}
fn u32_to_f32(v: u32) -> f32 {
  return f32(v & 0xffff0000u) + f32(v & 0xffffu);
}
fn relu_f32(x: f32) -> f32 { return select(x, 0.0, is_below_zero_f32(x)); }

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 16384u) { return; }
  var rem = i;
  let d1 = rem % 256u;
  rem = rem / 256u;
  let d0 = rem % 64u;
  let x0 = f32(in0[i]);
  let x1 = in1[d1 * 1u];
  let s0 = x0;
  let s1 = (s0 + x1);
  let s2 = relu_f32(s1);
  out[i] = s2;
}

// ---- k4_fused_cast ----
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f16>;
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
fn f32_to_i32(x: f32) -> i32 {
  if (is_nan_f32(x)) { return 0i; }
  if (x >= 2147483648.0) { return 2147483647i; }
  if (x <= -2147483648.0) { return i32(-2147483648); }
  return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
  if (is_nan_f32(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
fn i32_to_f32(v: i32) -> f32 {
  return f32(v & i32(-65536)) + f32(v & 65535i);
}
fn u32_to_f32(v: u32) -> f32 {
  return f32(v & 0xffff0000u) + f32(v & 0xffffu);
}
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  var h = 0u;
  if (a >= 0x7f800000u) {
    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;
  } else if (a < 0x38800000u) {
    if (a >= 0x33000000u) {
      let m = (a & 0x7fffffu) | 0x800000u;
      let shift = 126u - (a >> 23u);
      h = m >> shift;
      let rem = m & ((1u << shift) - 1u);
      let half = 1u << (shift - 1u);
      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    }
  } else {
    h = (a >> 13u) - (112u << 10u);
    let rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
  }
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) {
    let v = f32(mant) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 16384u) { return; }
  let x0 = in0[i];
  let s0 = round_f16(x0);
  out[i] = f16(s0);
}

// ---- k5_fused_cast ----
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f16>;
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
fn f32_to_i32(x: f32) -> i32 {
  if (is_nan_f32(x)) { return 0i; }
  if (x >= 2147483648.0) { return 2147483647i; }
  if (x <= -2147483648.0) { return i32(-2147483648); }
  return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
  if (is_nan_f32(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
fn i32_to_f32(v: i32) -> f32 {
  return f32(v & i32(-65536)) + f32(v & 65535i);
}
fn u32_to_f32(v: u32) -> f32 {
  return f32(v & 0xffff0000u) + f32(v & 0xffffu);
}
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  var h = 0u;
  if (a >= 0x7f800000u) {
    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;
  } else if (a < 0x38800000u) {
    if (a >= 0x33000000u) {
      let m = (a & 0x7fffffu) | 0x800000u;
      let shift = 126u - (a >> 23u);
      h = m >> shift;
      let rem = m & ((1u << shift) - 1u);
      let half = 1u << (shift - 1u);
      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    }
  } else {
    h = (a >> 13u) - (112u << 10u);
    let rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
  }
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) {
    let v = f32(mant) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 2560u) { return; }
  let x0 = in0[i];
  let s0 = round_f16(x0);
  out[i] = f16(s0);
}

// ---- k6_matmul ----
// matmul 16x16x16/1x1
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f16>;
@group(0) @binding(1) var<storage, read> in1: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f16>;
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  var h = 0u;
  if (a >= 0x7f800000u) {
    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;
  } else if (a < 0x38800000u) {
    if (a >= 0x33000000u) {
      let m = (a & 0x7fffffu) | 0x800000u;
      let shift = 126u - (a >> 23u);
      h = m >> shift;
      let rem = m & ((1u << shift) - 1u);
      let half = 1u << (shift - 1u);
      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    }
  } else {
    h = (a >> 13u) - (112u << 10u);
    let rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
  }
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) {
    let v = f32(mant) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));
}
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
  for (var t = 0u; t < 256u; t = t + 16u) {
    let ka = t + lid.x;
    let kb = t + lid.y;
    tile_a[lid.y * 16u + lid.x] = select(0.0, f32(in0[off_a + r * 256u + ka]), r < 64u && ka < 256u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, f32(in1[off_b + kb * 10u + c]), kb < 256u && c < 10u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 16u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 64u && c < 10u) { out[wg.z * 640u + r * 10u + c] = f16(round_f16(acc)); }
}

// ---- k7_fused_cast_add ----
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f16>;
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
fn f32_to_i32(x: f32) -> i32 {
  if (is_nan_f32(x)) { return 0i; }
  if (x >= 2147483648.0) { return 2147483647i; }
  if (x <= -2147483648.0) { return i32(-2147483648); }
  return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
  if (is_nan_f32(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
fn i32_to_f32(v: i32) -> f32 {
  return f32(v & i32(-65536)) + f32(v & 65535i);
}
fn u32_to_f32(v: u32) -> f32 {
  return f32(v & 0xffff0000u) + f32(v & 0xffffu);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 640u) { return; }
  var rem = i;
  let d1 = rem % 10u;
  rem = rem / 10u;
  let d0 = rem % 64u;
  let x0 = f32(in0[i]);
  let x1 = in1[d1 * 1u];
  let s0 = x0;
  let s1 = (s0 + x1);
  out[i] = s1;
}

// ---- k8_cross_entropy_cross_entropy_grad_sum ----
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
var<private> in2: array<f32, 1> = array<f32, 1>(f32(1024.0));
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> out1: array<f32>;
@group(0) @binding(4) var<storage, read_write> out2: array<f32>;
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
fn row_loss(r: u32) -> f32 {
  let base = r * 10u;
  let label = in1[r];
  if (!(label >= 0.0 && label < f32(10.0) && floor(label) == label)) {
    for (var j = 0u; j < 10u; j = j + 1u) { out1[base + j] = nan_f32(); }
    return nan_f32();
  }
  let k = u32(label);
  let g = in2[0] / f32(64.0);
  var mx = in0[base];
  var bad = is_nan_f32(mx);
  for (var j = 1u; j < 10u; j = j + 1u) {
    let x = in0[base + j];
    bad = bad || is_nan_f32(x);
    if (x > mx) { mx = x; }
  }
  bad = bad || (bitcast<u32>(mx) & 0x7fffffffu) == 0x7f800000u;
  var sum = 0.0;
  for (var j = 0u; j < 10u; j = j + 1u) { sum = sum + exp(in0[base + j] - mx); }
  if (bad) {
    for (var j = 0u; j < 10u; j = j + 1u) { out1[base + j] = nan_f32(); }
    return nan_f32();
  }
  let log_sum = log(sum);
  for (var j = 0u; j < 10u; j = j + 1u) {
    let p = exp((in0[base + j] - mx) - log_sum);
    out1[base + j] = select(p * g, p * g - g, j == k);
  }
  return -((in0[base + k] - mx) - log_sum);
}
var<workgroup> partial: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
  var s = 0.0;
  for (var j = t; j < 64u; j = j + 256u) { s = s + row_loss(j); }
  partial[t] = s;
  workgroupBarrier();
  for (var w = 128u; w > 0u; w = w >> 1u) {
    if (t < w) { partial[t] = partial[t] + partial[t + w]; }
    workgroupBarrier();
  }
  if (t == 0u) {
    out[0] = partial[0] / f32(64.0);
  }
  storageBarrier();
  for (var c = t; c < 10u; c = c + 256u) {
    var cs = 0.0;
    for (var r = 0u; r < 64u; r = r + 1u) { cs = cs + out1[r * 10u + c]; }
    out2[c] = cs;
  }
}

// ---- k9_fused_cast ----
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f16>;
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
fn f32_to_i32(x: f32) -> i32 {
  if (is_nan_f32(x)) { return 0i; }
  if (x >= 2147483648.0) { return 2147483647i; }
  if (x <= -2147483648.0) { return i32(-2147483648); }
  return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
  if (is_nan_f32(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
fn i32_to_f32(v: i32) -> f32 {
  return f32(v & i32(-65536)) + f32(v & 65535i);
}
fn u32_to_f32(v: u32) -> f32 {
  return f32(v & 0xffff0000u) + f32(v & 0xffffu);
}
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  var h = 0u;
  if (a >= 0x7f800000u) {
    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;
  } else if (a < 0x38800000u) {
    if (a >= 0x33000000u) {
      let m = (a & 0x7fffffu) | 0x800000u;
      let shift = 126u - (a >> 23u);
      h = m >> shift;
      let rem = m & ((1u << shift) - 1u);
      let half = 1u << (shift - 1u);
      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    }
  } else {
    h = (a >> 13u) - (112u << 10u);
    let rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
  }
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) {
    let v = f32(mant) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 640u) { return; }
  let x0 = in0[i];
  let s0 = round_f16(x0);
  out[i] = f16(s0);
}

// ---- k10_matmul ----
// matmul 16x16x16/1x1
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f16>;
@group(0) @binding(1) var<storage, read> in1: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f16>;
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  var h = 0u;
  if (a >= 0x7f800000u) {
    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;
  } else if (a < 0x38800000u) {
    if (a >= 0x33000000u) {
      let m = (a & 0x7fffffu) | 0x800000u;
      let shift = 126u - (a >> 23u);
      h = m >> shift;
      let rem = m & ((1u << shift) - 1u);
      let half = 1u << (shift - 1u);
      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    }
  } else {
    h = (a >> 13u) - (112u << 10u);
    let rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
  }
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) {
    let v = f32(mant) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));
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
  for (var t = 0u; t < 10u; t = t + 16u) {
    let ka = t + lid.x;
    let kb = t + lid.x;
    tile_a[lid.y * 16u + lid.x] = select(0.0, f32(in0[off_a + r * 10u + ka]), r < 64u && ka < 10u);
    tile_b[lid.x * 18u + lid.y] = select(0.0, f32(in1[off_b + ct * 10u + kb]), kb < 10u && ct < 256u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 16u + kk] * tile_b[kk * 18u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 64u && c < 256u) { out[wg.z * 16384u + r * 256u + c] = f16(round_f16(acc)); }
}

// ---- k11_matmul ----
// matmul 16x16x16/1x1
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f16>;
@group(0) @binding(1) var<storage, read> in1: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f16>;
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  var h = 0u;
  if (a >= 0x7f800000u) {
    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;
  } else if (a < 0x38800000u) {
    if (a >= 0x33000000u) {
      let m = (a & 0x7fffffu) | 0x800000u;
      let shift = 126u - (a >> 23u);
      h = m >> shift;
      let rem = m & ((1u << shift) - 1u);
      let half = 1u << (shift - 1u);
      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    }
  } else {
    h = (a >> 13u) - (112u << 10u);
    let rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
  }
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) {
    let v = f32(mant) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));
}
var<workgroup> tile_a: array<f32, 544>;
var<workgroup> tile_b: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  var rem = wg.z;
  var off_a = 0u;
  var off_b = 0u;
  let r = wg.y * 16u + lid.y;
  let c = wg.x * 16u + lid.x;
  let rt = wg.y * 16u + lid.x;
  var acc = 0.0;
  for (var t = 0u; t < 64u; t = t + 16u) {
    let ka = t + lid.y;
    let kb = t + lid.y;
    tile_a[lid.x * 34u + lid.y] = select(0.0, f32(in0[off_a + ka * 256u + rt]), rt < 256u && ka < 64u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, f32(in1[off_b + kb * 10u + c]), kb < 64u && c < 10u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 34u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 256u && c < 10u) { out[wg.z * 2560u + r * 10u + c] = f16(round_f16(acc)); }
}

// ---- k12_fused_cast_positive_mul ----
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f16>;
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
fn f32_to_i32(x: f32) -> i32 {
  if (is_nan_f32(x)) { return 0i; }
  if (x >= 2147483648.0) { return 2147483647i; }
  if (x <= -2147483648.0) { return i32(-2147483648); }
  return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
  if (is_nan_f32(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
fn i32_to_f32(v: i32) -> f32 {
  return f32(v & i32(-65536)) + f32(v & 65535i);
}
fn u32_to_f32(v: u32) -> f32 {
  return f32(v & 0xffff0000u) + f32(v & 0xffffu);
}
fn positive_f32(x: f32) -> f32 {
  return select(1.0, 0.0, is_below_zero_f32(x) || (bitcast<u32>(x) & 0x7fffffffu) == 0u);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 16384u) { return; }
  let x0 = f32(in0[i]);
  let x1 = in1[i];
  let s0 = x0;
  let s1 = positive_f32(x1);
  let s2 = (s0 * s1);
  out[i] = s2;
}

// ---- k13_sum ----
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 256u) { return; }
  let base = (i / 256u) * 16384u + i % 256u;
  var s = 0.0;
  for (var j = 0u; j < 64u; j = j + 1u) { s = s + in0[base + j * 256u]; }
  out[i] = s;
}

// ---- k14_fused_cast ----
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f16>;
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
fn f32_to_i32(x: f32) -> i32 {
  if (is_nan_f32(x)) { return 0i; }
  if (x >= 2147483648.0) { return 2147483647i; }
  if (x <= -2147483648.0) { return i32(-2147483648); }
  return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
  if (is_nan_f32(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
fn i32_to_f32(v: i32) -> f32 {
  return f32(v & i32(-65536)) + f32(v & 65535i);
}
fn u32_to_f32(v: u32) -> f32 {
  return f32(v & 0xffff0000u) + f32(v & 0xffffu);
}
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  var h = 0u;
  if (a >= 0x7f800000u) {
    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;
  } else if (a < 0x38800000u) {
    if (a >= 0x33000000u) {
      let m = (a & 0x7fffffu) | 0x800000u;
      let shift = 126u - (a >> 23u);
      h = m >> shift;
      let rem = m & ((1u << shift) - 1u);
      let half = 1u << (shift - 1u);
      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    }
  } else {
    h = (a >> 13u) - (112u << 10u);
    let rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
  }
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) {
    let v = f32(mant) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 16384u) { return; }
  let x0 = in0[i];
  let s0 = round_f16(x0);
  out[i] = f16(s0);
}

// ---- k15_matmul ----
// matmul 16x16x16/1x1
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f16>;
@group(0) @binding(1) var<storage, read> in1: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f16>;
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  var h = 0u;
  if (a >= 0x7f800000u) {
    h = select(0x7c00u, 0x7e00u, a > 0x7f800000u);
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;
  } else if (a < 0x38800000u) {
    if (a >= 0x33000000u) {
      let m = (a & 0x7fffffu) | 0x800000u;
      let shift = 126u - (a >> 23u);
      h = m >> shift;
      let rem = m & ((1u << shift) - 1u);
      let half = 1u << (shift - 1u);
      if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    }
  } else {
    h = (a >> 13u) - (112u << 10u);
    let rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
  }
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>((sign << 16u) | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) {
    let v = f32(mant) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>((sign << 16u) | ((e + 112u) << 23u) | (mant << 13u));
}
var<workgroup> tile_a: array<f32, 544>;
var<workgroup> tile_b: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  var rem = wg.z;
  var off_a = 0u;
  var off_b = 0u;
  let r = wg.y * 16u + lid.y;
  let c = wg.x * 16u + lid.x;
  let rt = wg.y * 16u + lid.x;
  var acc = 0.0;
  for (var t = 0u; t < 64u; t = t + 16u) {
    let ka = t + lid.y;
    let kb = t + lid.y;
    tile_a[lid.x * 34u + lid.y] = select(0.0, f32(in0[off_a + ka * 784u + rt]), rt < 784u && ka < 64u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, f32(in1[off_b + kb * 256u + c]), kb < 64u && c < 256u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 34u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 784u && c < 256u) { out[wg.z * 200704u + r * 256u + c] = f16(round_f16(acc)); }
}

// ---- k16_fused_cast_mul ----
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f16>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
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
fn f32_to_i32(x: f32) -> i32 {
  if (is_nan_f32(x)) { return 0i; }
  if (x >= 2147483648.0) { return 2147483647i; }
  if (x <= -2147483648.0) { return i32(-2147483648); }
  return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
  if (is_nan_f32(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
fn i32_to_f32(v: i32) -> f32 {
  return f32(v & i32(-65536)) + f32(v & 65535i);
}
fn u32_to_f32(v: u32) -> f32 {
  return f32(v & 0xffff0000u) + f32(v & 0xffffu);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 200704u) { return; }
  let x0 = f32(in0[i]);
  let s0 = x0;
  let s1 = f32(0.0009765625);
  let s2 = (s0 * s1);
  out[i] = s2;
}

// ---- k17_fused_mul ----
@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
fn fused_element(a0: f32) -> f32 {
  let x0 = a0;
  let s0 = f32(0.0009765625);
  let s1 = (x0 * s0);
  return s1;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>,
        @builtin(local_invocation_index) lane: u32,
        @builtin(num_workgroups) groups: vec3<u32>) {
  for (var c = group.x; c < 1u; c = c + groups.x) {
    for (var t = 0u; t < 4u; t = t + 1u) {
      let j = c * 1024u + t * 256u + lane;
      if (j >= 64u) { break; }
      let v0 = in0[j];
      out[j] = vec4<f32>(
        fused_element(v0.x),
        fused_element(v0.y),
        fused_element(v0.z),
        fused_element(v0.w));
    }
  }
}

// ---- k18_fused_cast_mul ----
enable f16;
@group(0) @binding(0) var<storage, read> in0: array<f16>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
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
fn f32_to_i32(x: f32) -> i32 {
  if (is_nan_f32(x)) { return 0i; }
  if (x >= 2147483648.0) { return 2147483647i; }
  if (x <= -2147483648.0) { return i32(-2147483648); }
  return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
  if (is_nan_f32(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
fn i32_to_f32(v: i32) -> f32 {
  return f32(v & i32(-65536)) + f32(v & 65535i);
}
fn u32_to_f32(v: u32) -> f32 {
  return f32(v & 0xffff0000u) + f32(v & 0xffffu);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 2560u) { return; }
  let x0 = f32(in0[i]);
  let s0 = x0;
  let s1 = f32(0.0009765625);
  let s2 = (s0 * s1);
  out[i] = s2;
}

// ---- k19_fused_mul ----
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 10u) { return; }
  let x0 = in0[i];
  let s0 = f32(0.0009765625);
  let s1 = (x0 * s0);
  out[i] = s1;
}

// ---- k20_adam_update_adam_m_adam_v_x2 ----
@group(0) @binding(0) var<storage, read_write> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> in3: array<f32>;
@group(0) @binding(4) var<uniform> in4: f32;
@group(0) @binding(5) var<storage, read_write> in5: array<f32>;
@group(0) @binding(6) var<storage, read> in6: array<f32>;
@group(0) @binding(7) var<storage, read_write> in7: array<f32>;
@group(0) @binding(8) var<storage, read_write> in8: array<f32>;
fn expm1_f32(x: f32) -> f32 {
  if (abs(x) >= 0.5) { return exp(x) - 1.0; }
  var s = 1.0;
  for (var k = 12.0; k >= 2.0; k = k - 1.0) { s = 1.0 + x * s / k; }
  return x * s;
}
fn part0(i: u32) {
  var g = in1[i];
  let w = f32(0.100000001);
  let m_old = in2[i];
  let m = select(g - (g - m_old) * (1.0 - w), m_old + w * (g - m_old), abs(w) < 0.5);
  let v = in3[i] * f32(0.999000013) + f32(0.00100000005) * g * g;
  let step = select(0.0, floor(in4), in4 >= 1.0);
  let bc1 = -expm1_f32(step * f32(-0.105360515));
  let bc2 = -expm1_f32(step * f32(-0.00100050028));
  let minus_step_size = -(f32(0.00100000005) / bc1);
  var p = in0[i];
  let denom = sqrt(v) / sqrt(bc2) + f32(9.99999994e-09);
  in0[i] = p + minus_step_size * m / denom;
  in2[i] = m;
  in3[i] = v;
}
fn part1(i: u32) {
  var g = in6[i];
  let w = f32(0.100000001);
  let m_old = in7[i];
  let m = select(g - (g - m_old) * (1.0 - w), m_old + w * (g - m_old), abs(w) < 0.5);
  let v = in8[i] * f32(0.999000013) + f32(0.00100000005) * g * g;
  let step = select(0.0, floor(in4), in4 >= 1.0);
  let bc1 = -expm1_f32(step * f32(-0.105360515));
  let bc2 = -expm1_f32(step * f32(-0.00100050028));
  let minus_step_size = -(f32(0.00100000005) / bc1);
  var p = in5[i];
  let denom = sqrt(v) / sqrt(bc2) + f32(9.99999994e-09);
  in5[i] = p + minus_step_size * m / denom;
  in7[i] = m;
  in8[i] = v;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 200960u) { return; }
  _ = arrayLength(&in0);
  _ = arrayLength(&in1);
  _ = arrayLength(&in2);
  _ = arrayLength(&in3);
  _ = in4;
  _ = arrayLength(&in5);
  _ = arrayLength(&in6);
  _ = arrayLength(&in7);
  _ = arrayLength(&in8);
  if (i < 200704u) { part0(i); return; }
  if (i < 200960u) { part1(i - 200704u); return; }
}

// ---- k21_adam_update_adam_m_adam_v_x2 ----
@group(0) @binding(0) var<storage, read_write> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> in3: array<f32>;
@group(0) @binding(4) var<uniform> in4: f32;
@group(0) @binding(5) var<storage, read_write> in5: array<f32>;
@group(0) @binding(6) var<storage, read> in6: array<f32>;
@group(0) @binding(7) var<storage, read_write> in7: array<f32>;
@group(0) @binding(8) var<storage, read_write> in8: array<f32>;
fn expm1_f32(x: f32) -> f32 {
  if (abs(x) >= 0.5) { return exp(x) - 1.0; }
  var s = 1.0;
  for (var k = 12.0; k >= 2.0; k = k - 1.0) { s = 1.0 + x * s / k; }
  return x * s;
}
fn part0(i: u32) {
  var g = in1[i];
  let w = f32(0.100000001);
  let m_old = in2[i];
  let m = select(g - (g - m_old) * (1.0 - w), m_old + w * (g - m_old), abs(w) < 0.5);
  let v = in3[i] * f32(0.999000013) + f32(0.00100000005) * g * g;
  let step = select(0.0, floor(in4), in4 >= 1.0);
  let bc1 = -expm1_f32(step * f32(-0.105360515));
  let bc2 = -expm1_f32(step * f32(-0.00100050028));
  let minus_step_size = -(f32(0.00100000005) / bc1);
  var p = in0[i];
  let denom = sqrt(v) / sqrt(bc2) + f32(9.99999994e-09);
  in0[i] = p + minus_step_size * m / denom;
  in2[i] = m;
  in3[i] = v;
}
fn part1(i: u32) {
  var g = in6[i];
  let w = f32(0.100000001);
  let m_old = in7[i];
  let m = select(g - (g - m_old) * (1.0 - w), m_old + w * (g - m_old), abs(w) < 0.5);
  let v = in8[i] * f32(0.999000013) + f32(0.00100000005) * g * g;
  let step = select(0.0, floor(in4), in4 >= 1.0);
  let bc1 = -expm1_f32(step * f32(-0.105360515));
  let bc2 = -expm1_f32(step * f32(-0.00100050028));
  let minus_step_size = -(f32(0.00100000005) / bc1);
  var p = in5[i];
  let denom = sqrt(v) / sqrt(bc2) + f32(9.99999994e-09);
  in5[i] = p + minus_step_size * m / denom;
  in7[i] = m;
  in8[i] = v;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 2570u) { return; }
  _ = arrayLength(&in0);
  _ = arrayLength(&in1);
  _ = arrayLength(&in2);
  _ = arrayLength(&in3);
  _ = in4;
  _ = arrayLength(&in5);
  _ = arrayLength(&in6);
  _ = arrayLength(&in7);
  _ = arrayLength(&in8);
  if (i < 2560u) { part0(i); return; }
  if (i < 2570u) { part1(i - 2560u); return; }
}

