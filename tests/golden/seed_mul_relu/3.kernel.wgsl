// ---- k0_fused_mul_relu ----
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= 3u) { return; }
  let x0 = in0[i];
  let x1 = in1[i];
  let s0 = (x0 * x1);
  let s1 = select(0.0, s0, s0 > 0.0);
  out[i] = s1;
}

