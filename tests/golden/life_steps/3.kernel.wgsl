// ---- k0_life ----
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 256u) { return; }
  let r = i / 16u;
  let c = i % 16u;
  var n = 0u;
  for (var dr = 0u; dr < 3u; dr = dr + 1u) {
    for (var dc = 0u; dc < 3u; dc = dc + 1u) {
      if (dr == 1u && dc == 1u) { continue; }
      let rr = (r + dr + 15u) % 16u;
      let cc = (c + dc + 15u) % 16u;
      n = n + select(0u, 1u, in0[rr * 16u + cc] > 0.5);
    }
  }
  let alive = in0[i] > 0.5;
  out[i] = select(0.0, 1.0, n == 3u || (alive && n == 2u));
}

