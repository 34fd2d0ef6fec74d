// ---- k0_matmul_add_relu ----
// matmul 8x8x64/1x1
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
  let d1 = rem % 256u;
  rem = rem / 256u;
  let d0 = rem % 64u;
  let x1 = in2[d1 * 1u];
  let s0 = (x0 + x1);
  let s1 = relu_f32(s0);
  return s1;
}
var<workgroup> tile_a: array<f32, 640>;
var<workgroup> tile_b: array<f32, 512>;

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  var rem = wg.z;
  var off_a = 0u;
  var off_b = 0u;
  let r = wg.y * 8u + lid.y;
  let c = wg.x * 8u + lid.x;
  var acc = 0.0;
  for (var t = 0u; t < 784u; t = t + 64u) {
    let ka0 = t + lid.x;
    let kb0 = t + lid.y;
    tile_a[lid.y * 80u + lid.x] = select(0.0, in0[off_a + r * 784u + ka0], r < 64u && ka0 < 784u);
    tile_b[lid.y * 8u + lid.x] = select(0.0, in1[off_b + kb0 * 256u + c], kb0 < 784u && c < 256u);
    let ka1 = t + lid.x + 8u;
    let kb1 = t + lid.y + 8u;
    tile_a[lid.y * 80u + lid.x + 8u] = select(0.0, in0[off_a + r * 784u + ka1], r < 64u && ka1 < 784u);
    tile_b[(lid.y + 8u) * 8u + lid.x] = select(0.0, in1[off_b + kb1 * 256u + c], kb1 < 784u && c < 256u);
    let ka2 = t + lid.x + 16u;
    let kb2 = t + lid.y + 16u;
    tile_a[lid.y * 80u + lid.x + 16u] = select(0.0, in0[off_a + r * 784u + ka2], r < 64u && ka2 < 784u);
    tile_b[(lid.y + 16u) * 8u + lid.x] = select(0.0, in1[off_b + kb2 * 256u + c], kb2 < 784u && c < 256u);
    let ka3 = t + lid.x + 24u;
    let kb3 = t + lid.y + 24u;
    tile_a[lid.y * 80u + lid.x + 24u] = select(0.0, in0[off_a + r * 784u + ka3], r < 64u && ka3 < 784u);
    tile_b[(lid.y + 24u) * 8u + lid.x] = select(0.0, in1[off_b + kb3 * 256u + c], kb3 < 784u && c < 256u);
    let ka4 = t + lid.x + 32u;
    let kb4 = t + lid.y + 32u;
    tile_a[lid.y * 80u + lid.x + 32u] = select(0.0, in0[off_a + r * 784u + ka4], r < 64u && ka4 < 784u);
    tile_b[(lid.y + 32u) * 8u + lid.x] = select(0.0, in1[off_b + kb4 * 256u + c], kb4 < 784u && c < 256u);
    let ka5 = t + lid.x + 40u;
    let kb5 = t + lid.y + 40u;
    tile_a[lid.y * 80u + lid.x + 40u] = select(0.0, in0[off_a + r * 784u + ka5], r < 64u && ka5 < 784u);
    tile_b[(lid.y + 40u) * 8u + lid.x] = select(0.0, in1[off_b + kb5 * 256u + c], kb5 < 784u && c < 256u);
    let ka6 = t + lid.x + 48u;
    let kb6 = t + lid.y + 48u;
    tile_a[lid.y * 80u + lid.x + 48u] = select(0.0, in0[off_a + r * 784u + ka6], r < 64u && ka6 < 784u);
    tile_b[(lid.y + 48u) * 8u + lid.x] = select(0.0, in1[off_b + kb6 * 256u + c], kb6 < 784u && c < 256u);
    let ka7 = t + lid.x + 56u;
    let kb7 = t + lid.y + 56u;
    tile_a[lid.y * 80u + lid.x + 56u] = select(0.0, in0[off_a + r * 784u + ka7], r < 64u && ka7 < 784u);
    tile_b[(lid.y + 56u) * 8u + lid.x] = select(0.0, in1[off_b + kb7 * 256u + c], kb7 < 784u && c < 256u);
    workgroupBarrier();
    for (var kk = 0u; kk < 64u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 80u + kk] * tile_b[kk * 8u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 64u && c < 256u) { out[wg.z * 16384u + r * 256u + c] = epilogue(acc, wg.z * 16384u + r * 256u + c); }
}

// ---- k1_matmul_add ----
// matmul 16x16x64/1x1
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
fn epilogue(x0: f32, e: u32) -> f32 {
  var rem = e;
  let d1 = rem % 10u;
  rem = rem / 10u;
  let d0 = rem % 64u;
  let x1 = in2[d1 * 1u];
  let s0 = (x0 + x1);
  return s0;
}
var<workgroup> tile_a: array<f32, 1280>;
var<workgroup> tile_b: array<f32, 1024>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  var rem = wg.z;
  var off_a = 0u;
  var off_b = 0u;
  let r = wg.y * 16u + lid.y;
  let c = wg.x * 16u + lid.x;
  var acc = 0.0;
  for (var t = 0u; t < 256u; t = t + 64u) {
    let ka0 = t + lid.x;
    let kb0 = t + lid.y;
    tile_a[lid.y * 80u + lid.x] = select(0.0, in0[off_a + r * 256u + ka0], r < 64u && ka0 < 256u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, in1[off_b + kb0 * 10u + c], kb0 < 256u && c < 10u);
    let ka1 = t + lid.x + 16u;
    let kb1 = t + lid.y + 16u;
    tile_a[lid.y * 80u + lid.x + 16u] = select(0.0, in0[off_a + r * 256u + ka1], r < 64u && ka1 < 256u);
    tile_b[(lid.y + 16u) * 16u + lid.x] = select(0.0, in1[off_b + kb1 * 10u + c], kb1 < 256u && c < 10u);
    let ka2 = t + lid.x + 32u;
    let kb2 = t + lid.y + 32u;
    tile_a[lid.y * 80u + lid.x + 32u] = select(0.0, in0[off_a + r * 256u + ka2], r < 64u && ka2 < 256u);
    tile_b[(lid.y + 32u) * 16u + lid.x] = select(0.0, in1[off_b + kb2 * 10u + c], kb2 < 256u && c < 10u);
    let ka3 = t + lid.x + 48u;
    let kb3 = t + lid.y + 48u;
    tile_a[lid.y * 80u + lid.x + 48u] = select(0.0, in0[off_a + r * 256u + ka3], r < 64u && ka3 < 256u);
    tile_b[(lid.y + 48u) * 16u + lid.x] = select(0.0, in1[off_b + kb3 * 10u + c], kb3 < 256u && c < 10u);
    workgroupBarrier();
    for (var kk = 0u; kk < 64u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 80u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 64u && c < 10u) { out[wg.z * 640u + r * 10u + c] = epilogue(acc, wg.z * 640u + r * 10u + c); }
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
  if (!(label >= 0.0 && label < f32(10.0) && floor(label) == label)) { return nan_f32(); }
  let base = r * 10u;
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
  if (bad) { return nan_f32(); }
  return -((in0[base + u32(label)] - mx) - log(sum));
}
fn stage_0(t: u32) {
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
}

fn grad_row(i: u32) {
  let base = i * 10u;
  let label = in1[i];
  if (!(label >= 0.0 && label < f32(10.0) && floor(label) == label)) {
    for (var j = 0u; j < 10u; j = j + 1u) { out1[base + j] = nan_f32(); }
    return;
  }
  let k = u32(label);
  let r = in4[0] / f32(64.0);
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
    return;
  }
  let log_sum = log(sum);
  for (var j = 0u; j < 10u; j = j + 1u) {
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
  for (var e = r0 * 256u + t; e < r1 * 256u; e = e + 256u) {
    let r = e / 256u;
    let c = e % 256u;
    var acc = 0.0;
    for (var kk = 0u; kk < 10u; kk = kk + 1u) {
      acc = acc + out1[off_a + r * 10u + kk] * in2[off_b + c * 10u + kk];
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
  let r0 = (wg.x - 1u) * 1u;
  let r1 = min(r0 + 1u, 64u);
  stage_1(t, r0, r1);
  storageBarrier();
  stage_2(t, r0, r1);
}

// ---- k3_matmul_adam_update_adam_m_adam_v_x2 ----
// matmul 16x16x64/1x1
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
  let minus_step_size = -(f32(0.00100000005) / bc1);
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
  let minus_step_size = -(f32(0.00100000005) / bc1);
  var p = in6[i];
  let denom = sqrt(v) / sqrt(bc2) + f32(9.99999994e-09);
  in6[i] = p + minus_step_size * m / denom;
  in7[i] = m;
  in8[i] = v;
}
var<workgroup> tile_a: array<f32, 1056>;
var<workgroup> tile_b: array<f32, 1024>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  if (wg.y == 49u && wg.x == 0u && wg.z == 0u) {
    for (var sc = lid.y * 16u + lid.x; sc < 256u; sc = sc + 256u) {
      var cs = 0.0;
      for (var sr = 0u; sr < 64u; sr = sr + 1u) { cs = cs + in1[sr * 256u + sc]; }
      update_column_sums(sc, cs);
    }
  }
  if (wg.y == 49u) { return; }
  var rem = wg.z;
  var off_a = 0u;
  var off_b = 0u;
  let r = wg.y * 16u + lid.y;
  let c = wg.x * 16u + lid.x;
  let rt = wg.y * 16u + lid.x;
  var acc = 0.0;
  for (var t = 0u; t < 64u; t = t + 64u) {
    let ka0 = t + lid.y;
    let kb0 = t + lid.y;
    tile_a[lid.x * 66u + lid.y] = select(0.0, in0[off_a + ka0 * 784u + rt], rt < 784u && ka0 < 64u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, in1[off_b + kb0 * 256u + c], kb0 < 64u && c < 256u);
    let ka1 = t + lid.y + 16u;
    let kb1 = t + lid.y + 16u;
    tile_a[lid.x * 66u + lid.y + 16u] = select(0.0, in0[off_a + ka1 * 784u + rt], rt < 784u && ka1 < 64u);
    tile_b[(lid.y + 16u) * 16u + lid.x] = select(0.0, in1[off_b + kb1 * 256u + c], kb1 < 64u && c < 256u);
    let ka2 = t + lid.y + 32u;
    let kb2 = t + lid.y + 32u;
    tile_a[lid.x * 66u + lid.y + 32u] = select(0.0, in0[off_a + ka2 * 784u + rt], rt < 784u && ka2 < 64u);
    tile_b[(lid.y + 32u) * 16u + lid.x] = select(0.0, in1[off_b + kb2 * 256u + c], kb2 < 64u && c < 256u);
    let ka3 = t + lid.y + 48u;
    let kb3 = t + lid.y + 48u;
    tile_a[lid.x * 66u + lid.y + 48u] = select(0.0, in0[off_a + ka3 * 784u + rt], rt < 784u && ka3 < 64u);
    tile_b[(lid.y + 48u) * 16u + lid.x] = select(0.0, in1[off_b + kb3 * 256u + c], kb3 < 64u && c < 256u);
    workgroupBarrier();
    for (var kk = 0u; kk < 64u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 66u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 784u && c < 256u) { update_product(wg.z * 200704u + r * 256u + c, acc); }
}

// ---- k4_matmul_adam_update_adam_m_adam_v_x2 ----
// matmul 16x16x64/1x1
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
  let minus_step_size = -(f32(0.00100000005) / bc1);
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
  let minus_step_size = -(f32(0.00100000005) / bc1);
  var p = in6[i];
  let denom = sqrt(v) / sqrt(bc2) + f32(9.99999994e-09);
  in6[i] = p + minus_step_size * m / denom;
  in7[i] = m;
  in8[i] = v;
}
var<workgroup> tile_a: array<f32, 1056>;
var<workgroup> tile_b: array<f32, 1024>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  if (wg.y == 16u && wg.x == 0u && wg.z == 0u) {
    for (var sc = lid.y * 16u + lid.x; sc < 10u; sc = sc + 256u) {
      var cs = 0.0;
      for (var sr = 0u; sr < 64u; sr = sr + 1u) { cs = cs + in1[sr * 10u + sc]; }
      update_column_sums(sc, cs);
    }
  }
  if (wg.y == 16u) { return; }
  var rem = wg.z;
  var off_a = 0u;
  var off_b = 0u;
  let r = wg.y * 16u + lid.y;
  let c = wg.x * 16u + lid.x;
  let rt = wg.y * 16u + lid.x;
  var acc = 0.0;
  for (var t = 0u; t < 64u; t = t + 64u) {
    let ka0 = t + lid.y;
    let kb0 = t + lid.y;
    tile_a[lid.x * 66u + lid.y] = select(0.0, in0[off_a + ka0 * 256u + rt], rt < 256u && ka0 < 64u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, in1[off_b + kb0 * 10u + c], kb0 < 64u && c < 10u);
    let ka1 = t + lid.y + 16u;
    let kb1 = t + lid.y + 16u;
    tile_a[lid.x * 66u + lid.y + 16u] = select(0.0, in0[off_a + ka1 * 256u + rt], rt < 256u && ka1 < 64u);
    tile_b[(lid.y + 16u) * 16u + lid.x] = select(0.0, in1[off_b + kb1 * 10u + c], kb1 < 64u && c < 10u);
    let ka2 = t + lid.y + 32u;
    let kb2 = t + lid.y + 32u;
    tile_a[lid.x * 66u + lid.y + 32u] = select(0.0, in0[off_a + ka2 * 256u + rt], rt < 256u && ka2 < 64u);
    tile_b[(lid.y + 32u) * 16u + lid.x] = select(0.0, in1[off_b + kb2 * 10u + c], kb2 < 64u && c < 10u);
    let ka3 = t + lid.y + 48u;
    let kb3 = t + lid.y + 48u;
    tile_a[lid.x * 66u + lid.y + 48u] = select(0.0, in0[off_a + ka3 * 256u + rt], rt < 256u && ka3 < 64u);
    tile_b[(lid.y + 48u) * 16u + lid.x] = select(0.0, in1[off_b + kb3 * 10u + c], kb3 < 64u && c < 10u);
    workgroupBarrier();
    for (var kk = 0u; kk < 64u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 66u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 256u && c < 10u) { update_product(wg.z * 2560u + r * 10u + c, acc); }
}

