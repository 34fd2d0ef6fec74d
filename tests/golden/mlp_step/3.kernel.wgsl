// ---- k0_matmul_add_relu ----
// matmul 16x16x16/1x1
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
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
  var rem = e;
  let d1 = rem % 5u;
  rem = rem / 5u;
  let d0 = rem % 4u;
  let x1 = in2[d1 * 1u];
  let s0 = (x0 + x1);
  let s1 = relu_f32(s0);
  return s1;
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
  for (var t = 0u; t < 3u; t = t + 16u) {
    let ka = t + lid.x;
    let kb = t + lid.y;
    tile_a[lid.y * 16u + lid.x] = select(0.0, in0[off_a + r * 3u + ka], r < 4u && ka < 3u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, in1[off_b + kb * 5u + c], kb < 3u && c < 5u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 16u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 4u && c < 5u) { out[wg.z * 20u + r * 5u + c] = epilogue(acc, wg.z * 20u + r * 5u + c); }
}

// ---- k1_matmul_add ----
// matmul 16x16x16/1x1
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
fn epilogue(x0: f32, e: u32) -> f32 {
  var rem = e;
  let d1 = rem % 3u;
  rem = rem / 3u;
  let d0 = rem % 4u;
  let x1 = in2[d1 * 1u];
  let s0 = (x0 + x1);
  return s0;
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
  if (r < 4u && c < 3u) { out[wg.z * 12u + r * 3u + c] = epilogue(acc, wg.z * 12u + r * 3u + c); }
}

// ---- k2_cross_entropy_cross_entropy_grad_matmul_positive_mul ----
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read> in2: array<f32>;
@group(0) @binding(3) var<storage, read> in3: array<f32>;
var<private> in4: array<f32, 1> = array<f32, 1>(f32(1.0));
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> out1: array<f32>;
@group(0) @binding(6) var<storage, read_write> out2: array<f32>;
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
fn positive_f32(x: f32) -> f32 {
  return select(1.0, 0.0, is_below_zero_f32(x) || (bitcast<u32>(x) & 0x7fffffffu) == 0u);
}
fn row_loss(r: u32) -> f32 {
  let label = in1[r];
  if (!(label >= 0.0 && label < f32(3.0) && floor(label) == label)) { return nan_f32(); }
  let base = r * 3u;
  var mx = in0[base];
  var bad = is_nan_f32(mx);
  for (var j = 1u; j < 3u; j = j + 1u) {
    let x = in0[base + j];
    bad = bad || is_nan_f32(x);
    if (x > mx) { mx = x; }
  }
  bad = bad || (bitcast<u32>(mx) & 0x7fffffffu) == 0x7f800000u;
  var sum = 0.0;
  for (var j = 0u; j < 3u; j = j + 1u) { sum = sum + exp(in0[base + j] - mx); }
  if (bad) { return nan_f32(); }
  return -((in0[base + u32(label)] - mx) - log(sum));
}
fn stage_0(t: u32) {
  var s = 0.0;
  for (var j = t; j < 4u; j = j + 256u) { s = s + row_loss(j); }
  partial[t] = s;
  workgroupBarrier();
  for (var w = 128u; w > 0u; w = w >> 1u) {
    if (t < w) { partial[t] = partial[t] + partial[t + w]; }
    workgroupBarrier();
  }
  if (t == 0u) {
    out[0] = partial[0] / f32(4.0);
  }
}

fn grad_row(i: u32) {
  let base = i * 3u;
  let label = in1[i];
  if (!(label >= 0.0 && label < f32(3.0) && floor(label) == label)) {
    for (var j = 0u; j < 3u; j = j + 1u) { out1[base + j] = nan_f32(); }
    return;
  }
  let k = u32(label);
  let r = in4[0] / f32(4.0);
  var mx = in0[base];
  var bad = is_nan_f32(mx);
  for (var j = 1u; j < 3u; j = j + 1u) {
    let x = in0[base + j];
    bad = bad || is_nan_f32(x);
    if (x > mx) { mx = x; }
  }
  bad = bad || (bitcast<u32>(mx) & 0x7fffffffu) == 0x7f800000u;
  var sum = 0.0;
  for (var j = 0u; j < 3u; j = j + 1u) { sum = sum + exp(in0[base + j] - mx); }
  if (bad) {
    for (var j = 0u; j < 3u; j = j + 1u) { out1[base + j] = nan_f32(); }
    return;
  }
  let log_sum = log(sum);
  for (var j = 0u; j < 3u; j = j + 1u) {
    let p = exp((in0[base + j] - mx) - log_sum);
    out1[base + j] = select(p * r, p * r - r, j == k);
  }
}
fn stage_1(t: u32, r0: u32, r1: u32) {
  for (var i = r0 + t; i < r1; i = i + 256u) { grad_row(i); }
}

fn epilogue_2(x0: f32, e: u32) -> f32 {
  let x1 = in3[e];
  let s0 = positive_f32(x1);
  let s1 = (x0 * s0);
  return s1;
}
fn stage_2(t: u32, r0: u32, r1: u32) {
  let off_a = 0u;
  let off_b = 0u;
  for (var e = r0 * 5u + t; e < r1 * 5u; e = e + 256u) {
    let r = e / 5u;
    let c = e % 5u;
    var acc = 0.0;
    for (var kk = 0u; kk < 3u; kk = kk + 1u) {
      acc = acc + out1[off_a + r * 3u + kk] * in2[off_b + c * 3u + kk];
    }
    out2[e] = epilogue_2(acc, e);
  }
}

var<workgroup> partial: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  if (wg.x == 0u) {
    stage_0(t);
    return;
  }
  let r0 = (wg.x - 1u) * 51u;
  let r1 = min(r0 + 51u, 4u);
  stage_1(t, r0, r1);
  storageBarrier();
  stage_2(t, r0, r1);
}

// ---- k3_matmul_adam_update_adam_m_adam_v_x2 ----
// matmul 16x16x16/1x1
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> in3: array<f32>;
@group(0) @binding(4) var<storage, read_write> in4: array<f32>;
@group(0) @binding(5) var<uniform> in5: f32;
@group(0) @binding(6) var<storage, read_write> in6: array<f32>;
@group(0) @binding(7) var<storage, read_write> in7: array<f32>;
@group(0) @binding(8) var<storage, read_write> in8: array<f32>;
fn expm1_f32(x: f32) -> f32 {
  if (abs(x) >= 0.5) { return exp(x) - 1.0; }
  var s = 1.0;
  for (var k = 12.0; k >= 2.0; k = k - 1.0) { s = 1.0 + x * s / k; }
  return x * s;
}
fn update_product(i: u32, grad: f32) {
  var g = grad;
  let w = f32(0.100000001);
  let m_old = in3[i];
  let m = select(g - (g - m_old) * (1.0 - w), m_old + w * (g - m_old), abs(w) < 0.5);
  let v = in4[i] * f32(0.999000013) + f32(0.00100000005) * g * g;
  let step = select(0.0, floor(in5), in5 >= 1.0);
  let bc1 = -expm1_f32(step * f32(-0.105360515));
  let bc2 = -expm1_f32(step * f32(-0.00100050028));
  let minus_step_size = -(f32(0.00999999978) / bc1);
  var p = in2[i];
  let denom = sqrt(v) / sqrt(bc2) + f32(9.99999994e-09);
  in2[i] = p + minus_step_size * m / denom;
  in3[i] = m;
  in4[i] = v;
}
fn update_column_sums(i: u32, grad: f32) {
  var g = grad;
  let w = f32(0.100000001);
  let m_old = in7[i];
  let m = select(g - (g - m_old) * (1.0 - w), m_old + w * (g - m_old), abs(w) < 0.5);
  let v = in8[i] * f32(0.999000013) + f32(0.00100000005) * g * g;
  let step = select(0.0, floor(in5), in5 >= 1.0);
  let bc1 = -expm1_f32(step * f32(-0.105360515));
  let bc2 = -expm1_f32(step * f32(-0.00100050028));
  let minus_step_size = -(f32(0.00999999978) / bc1);
  var p = in6[i];
  let denom = sqrt(v) / sqrt(bc2) + f32(9.99999994e-09);
  in6[i] = p + minus_step_size * m / denom;
  in7[i] = m;
  in8[i] = v;
}
var<workgroup> tile_a: array<f32, 544>;
var<workgroup> tile_b: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  if (wg.y == 1u && wg.x == 0u && wg.z == 0u) {
    for (var sc = lid.y * 16u + lid.x; sc < 5u; sc = sc + 256u) {
      var cs = 0.0;
      for (var sr = 0u; sr < 4u; sr = sr + 1u) { cs = cs + in1[sr * 5u + sc]; }
      update_column_sums(sc, cs);
    }
  }
  if (wg.y == 1u) { return; }
  var rem = wg.z;
  var off_a = 0u;
  var off_b = 0u;
  let r = wg.y * 16u + lid.y;
  let c = wg.x * 16u + lid.x;
  let rt = wg.y * 16u + lid.x;
  var acc = 0.0;
  for (var t = 0u; t < 4u; t = t + 16u) {
    let ka = t + lid.y;
    let kb = t + lid.y;
    tile_a[lid.x * 34u + lid.y] = select(0.0, in0[off_a + ka * 3u + rt], rt < 3u && ka < 4u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, in1[off_b + kb * 5u + c], kb < 4u && c < 5u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 34u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 3u && c < 5u) { update_product(wg.z * 15u + r * 5u + c, acc); }
}

// ---- k4_matmul_adam_update_adam_m_adam_v_x2 ----
// matmul 16x16x16/1x1
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> in3: array<f32>;
@group(0) @binding(4) var<storage, read_write> in4: array<f32>;
@group(0) @binding(5) var<uniform> in5: f32;
@group(0) @binding(6) var<storage, read_write> in6: array<f32>;
@group(0) @binding(7) var<storage, read_write> in7: array<f32>;
@group(0) @binding(8) var<storage, read_write> in8: array<f32>;
fn expm1_f32(x: f32) -> f32 {
  if (abs(x) >= 0.5) { return exp(x) - 1.0; }
  var s = 1.0;
  for (var k = 12.0; k >= 2.0; k = k - 1.0) { s = 1.0 + x * s / k; }
  return x * s;
}
fn update_product(i: u32, grad: f32) {
  var g = grad;
  let w = f32(0.100000001);
  let m_old = in3[i];
  let m = select(g - (g - m_old) * (1.0 - w), m_old + w * (g - m_old), abs(w) < 0.5);
  let v = in4[i] * f32(0.999000013) + f32(0.00100000005) * g * g;
  let step = select(0.0, floor(in5), in5 >= 1.0);
  let bc1 = -expm1_f32(step * f32(-0.105360515));
  let bc2 = -expm1_f32(step * f32(-0.00100050028));
  let minus_step_size = -(f32(0.00999999978) / bc1);
  var p = in2[i];
  let denom = sqrt(v) / sqrt(bc2) + f32(9.99999994e-09);
  in2[i] = p + minus_step_size * m / denom;
  in3[i] = m;
  in4[i] = v;
}
fn update_column_sums(i: u32, grad: f32) {
  var g = grad;
  let w = f32(0.100000001);
  let m_old = in7[i];
  let m = select(g - (g - m_old) * (1.0 - w), m_old + w * (g - m_old), abs(w) < 0.5);
  let v = in8[i] * f32(0.999000013) + f32(0.00100000005) * g * g;
  let step = select(0.0, floor(in5), in5 >= 1.0);
  let bc1 = -expm1_f32(step * f32(-0.105360515));
  let bc2 = -expm1_f32(step * f32(-0.00100050028));
  let minus_step_size = -(f32(0.00999999978) / bc1);
  var p = in6[i];
  let denom = sqrt(v) / sqrt(bc2) + f32(9.99999994e-09);
  in6[i] = p + minus_step_size * m / denom;
  in7[i] = m;
  in8[i] = v;
}
var<workgroup> tile_a: array<f32, 544>;
var<workgroup> tile_b: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  if (wg.y == 1u && wg.x == 0u && wg.z == 0u) {
    for (var sc = lid.y * 16u + lid.x; sc < 3u; sc = sc + 256u) {
      var cs = 0.0;
      for (var sr = 0u; sr < 4u; sr = sr + 1u) { cs = cs + in1[sr * 3u + sc]; }
      update_column_sums(sc, cs);
    }
  }
  if (wg.y == 1u) { return; }
  var rem = wg.z;
  var off_a = 0u;
  var off_b = 0u;
  let r = wg.y * 16u + lid.y;
  let c = wg.x * 16u + lid.x;
  let rt = wg.y * 16u + lid.x;
  var acc = 0.0;
  for (var t = 0u; t < 4u; t = t + 16u) {
    let ka = t + lid.y;
    let kb = t + lid.y;
    tile_a[lid.x * 34u + lid.y] = select(0.0, in0[off_a + ka * 5u + rt], rt < 5u && ka < 4u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, in1[off_b + kb * 3u + c], kb < 4u && c < 3u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 34u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 5u && c < 3u) { update_product(wg.z * 15u + r * 3u + c, acc); }
}

