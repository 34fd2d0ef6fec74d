// ---- k0_life ----
@group(0) @binding(0) var<storage, read> in0: array<f32>;
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

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 64u) { return; }
  let r = i / 8u;
  let c = i % 8u;
  var n = 0u;
  var nan = false;
  for (var dr = 0u; dr < 3u; dr = dr + 1u) {
    for (var dc = 0u; dc < 3u; dc = dc + 1u) {
      let rr = (r + dr + 7u) % 8u;
      let cc = (c + dc + 7u) % 8u;
      let cell = in0[rr * 8u + cc];
      nan = nan || is_nan_f32(cell);
      if (dr != 1u || dc != 1u) { n = n + select(0u, 1u, cell > 0.5); }
    }
  }
  let alive = in0[i] > 0.5;
  out[i] = select(select(0.0, 1.0, n == 3u || (alive && n == 2u)), nan_f32(), nan);
}

// ---- k1_life ----
@group(0) @binding(0) var<storage, read> in0: array<f32>;
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

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 64u) { return; }
  let r = i / 8u;
  let c = i % 8u;
  var n = 0u;
  var nan = false;
  for (var dr = 0u; dr < 3u; dr = dr + 1u) {
    for (var dc = 0u; dc < 3u; dc = dc + 1u) {
      let rr = (r + dr + 7u) % 8u;
      let cc = (c + dc + 7u) % 8u;
      let cell = in0[rr * 8u + cc];
      nan = nan || is_nan_f32(cell);
      if (dr != 1u || dc != 1u) { n = n + select(0u, 1u, cell > 0.5); }
    }
  }
  let alive = in0[i] > 0.5;
  out[i] = select(select(0.0, 1.0, n == 3u || (alive && n == 2u)), nan_f32(), nan);
}

// ---- k2_life ----
@group(0) @binding(0) var<storage, read> in0: array<f32>;
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

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 64u) { return; }
  let r = i / 8u;
  let c = i % 8u;
  var n = 0u;
  var nan = false;
  for (var dr = 0u; dr < 3u; dr = dr + 1u) {
    for (var dc = 0u; dc < 3u; dc = dc + 1u) {
      let rr = (r + dr + 7u) % 8u;
      let cc = (c + dc + 7u) % 8u;
      let cell = in0[rr * 8u + cc];
      nan = nan || is_nan_f32(cell);
      if (dr != 1u || dc != 1u) { n = n + select(0u, 1u, cell > 0.5); }
    }
  }
  let alive = in0[i] > 0.5;
  out[i] = select(select(0.0, 1.0, n == 3u || (alive && n == 2u)), nan_f32(), nan);
}

// ---- k3_life ----
@group(0) @binding(0) var<storage, read> in0: array<f32>;
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

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 64u) { return; }
  let r = i / 8u;
  let c = i % 8u;
  var n = 0u;
  var nan = false;
  for (var dr = 0u; dr < 3u; dr = dr + 1u) {
    for (var dc = 0u; dc < 3u; dc = dc + 1u) {
      let rr = (r + dr + 7u) % 8u;
      let cc = (c + dc + 7u) % 8u;
      let cell = in0[rr * 8u + cc];
      nan = nan || is_nan_f32(cell);
      if (dr != 1u || dc != 1u) { n = n + select(0u, 1u, cell > 0.5); }
    }
  }
  let alive = in0[i] > 0.5;
  out[i] = select(select(0.0, 1.0, n == 3u || (alive && n == 2u)), nan_f32(), nan);
}

