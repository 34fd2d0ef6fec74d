// ---- k0_matmul ----
// matmul 8x8x64/1x1
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
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
  for (var t = 0u; t < 64u; t = t + 64u) {
    let ka0 = t + lid.x;
    let kb0 = t + lid.y;
    tile_a[lid.y * 80u + lid.x] = select(0.0, in0[off_a + r * 64u + ka0], r < 512u && ka0 < 64u);
    tile_b[lid.y * 8u + lid.x] = select(0.0, in1[off_b + kb0 * 32u + c], kb0 < 64u && c < 32u);
    let ka1 = t + lid.x + 8u;
    let kb1 = t + lid.y + 8u;
    tile_a[lid.y * 80u + lid.x + 8u] = select(0.0, in0[off_a + r * 64u + ka1], r < 512u && ka1 < 64u);
    tile_b[(lid.y + 8u) * 8u + lid.x] = select(0.0, in1[off_b + kb1 * 32u + c], kb1 < 64u && c < 32u);
    let ka2 = t + lid.x + 16u;
    let kb2 = t + lid.y + 16u;
    tile_a[lid.y * 80u + lid.x + 16u] = select(0.0, in0[off_a + r * 64u + ka2], r < 512u && ka2 < 64u);
    tile_b[(lid.y + 16u) * 8u + lid.x] = select(0.0, in1[off_b + kb2 * 32u + c], kb2 < 64u && c < 32u);
    let ka3 = t + lid.x + 24u;
    let kb3 = t + lid.y + 24u;
    tile_a[lid.y * 80u + lid.x + 24u] = select(0.0, in0[off_a + r * 64u + ka3], r < 512u && ka3 < 64u);
    tile_b[(lid.y + 24u) * 8u + lid.x] = select(0.0, in1[off_b + kb3 * 32u + c], kb3 < 64u && c < 32u);
    let ka4 = t + lid.x + 32u;
    let kb4 = t + lid.y + 32u;
    tile_a[lid.y * 80u + lid.x + 32u] = select(0.0, in0[off_a + r * 64u + ka4], r < 512u && ka4 < 64u);
    tile_b[(lid.y + 32u) * 8u + lid.x] = select(0.0, in1[off_b + kb4 * 32u + c], kb4 < 64u && c < 32u);
    let ka5 = t + lid.x + 40u;
    let kb5 = t + lid.y + 40u;
    tile_a[lid.y * 80u + lid.x + 40u] = select(0.0, in0[off_a + r * 64u + ka5], r < 512u && ka5 < 64u);
    tile_b[(lid.y + 40u) * 8u + lid.x] = select(0.0, in1[off_b + kb5 * 32u + c], kb5 < 64u && c < 32u);
    let ka6 = t + lid.x + 48u;
    let kb6 = t + lid.y + 48u;
    tile_a[lid.y * 80u + lid.x + 48u] = select(0.0, in0[off_a + r * 64u + ka6], r < 512u && ka6 < 64u);
    tile_b[(lid.y + 48u) * 8u + lid.x] = select(0.0, in1[off_b + kb6 * 32u + c], kb6 < 64u && c < 32u);
    let ka7 = t + lid.x + 56u;
    let kb7 = t + lid.y + 56u;
    tile_a[lid.y * 80u + lid.x + 56u] = select(0.0, in0[off_a + r * 64u + ka7], r < 512u && ka7 < 64u);
    tile_b[(lid.y + 56u) * 8u + lid.x] = select(0.0, in1[off_b + kb7 * 32u + c], kb7 < 64u && c < 32u);
    workgroupBarrier();
    for (var kk = 0u; kk < 64u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 80u + kk] * tile_b[kk * 8u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 512u && c < 32u) { out[wg.z * 16384u + r * 32u + c] = acc; }
}

