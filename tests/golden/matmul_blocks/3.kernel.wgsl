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
  for (var t = 0u; t < 64u; t = t + 16u) {
    let ka = t + lid.x;
    let kb = t + lid.y;
    tile_a[lid.y * 16u + lid.x] = select(0.0, in0[off_a + r * 64u + ka], r < 512u && ka < 64u);
    tile_b[lid.y * 16u + lid.x] = select(0.0, in1[off_b + kb * 32u + c], kb < 64u && c < 32u);
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      acc = acc + tile_a[lid.y * 16u + kk] * tile_b[kk * 16u + lid.x];
    }
    workgroupBarrier();
  }
  if (r < 512u && c < 32u) { out[wg.z * 16384u + r * 32u + c] = acc; }
}

