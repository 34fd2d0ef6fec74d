// schedule-matmul: the one place a matmul's schedule is chosen, from its shape alone, so the plan
// says which kernel runs (and prints it) and the emitter only follows it.
#include <algorithm>

#include "kernel/passes/passes.h"

namespace scellis::kernel {

namespace {

// Workgroups a grid needs before a larger tile pays: one per multiprocessor of a large GPU (an
// H200 has 132). A grid with fewer leaves multiprocessors idle, and a smaller tile, with more
// workgroups, finishes sooner even though each of its invocations does less.
constexpr int64_t kFillWorkgroups = 132;
constexpr int64_t kMaxWorkgroupsPerDim = 65535;

int64_t CeilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

MatmulSchedule Tiled(int tile_m, int tile_n, int tile_k, int block_m, int block_n,
                     bool prefetch = false) {
  MatmulSchedule s;
  s.tile_m = tile_m;
  s.tile_n = tile_n;
  s.tile_k = tile_k;
  s.block_m = block_m;
  s.block_n = block_n;
  s.prefetch = prefetch;
  return s;
}

MatmulSchedule WithKStagedForShape(MatmulSchedule s, const MatmulShape& shape) {
  // A product with few rows or columns (the 64 x 784 x 256 layer of a small batch) has few
  // workgroups of the one-output kernel, and each K step's loads wait out a whole memory latency
  // between barriers. Staging K 64 deep takes a quarter of the 16-deep steps and puts four loads
  // of each operand in flight. A shorter K takes a step of about its own length (64, 32, 16, or
  // the tile's side), so no step is mostly padding.
  if (s.kind != MatmulSchedule::Kind::kTiled || s.block_m != 1 || s.block_n != 1) return s;
  s.tile_k = s.tile_m;
  for (int depth : {64, 32, 16}) {
    if (depth >= s.tile_m && shape.k >= depth) {
      s.tile_k = depth;
      break;
    }
  }
  return s;
}

}  // namespace

// Measured on the H200 with the K steps unrolled (bench/RESULTS.md, 2026-12-03): 64 x 128 tiles
// ran 4096^3 at 37.8 TFLOP/s against 36.7 for 128 x 64 and 34.2 for 128 x 128. 64 x 64 tiles
// with 8 x 8 outputs per invocation ran 1024^3 at 25.8 against 21.3 with 4 x 4, but the medium
// schedule keeps 4 x 4: SwiftShader did not finish compiling 64 x 64 x 16 / 8 x 8 with scalar
// loads (an operand whose rows are not a multiple of 4 long) in two minutes, its memory past
// 11 GiB, where the vec4 variants took 1-4 s; medium shapes are those a software adapter still
// runs.
//
// With prefetch (H100, 2026-12-06): 128 x 128 tiles ran 4096^3 at 39.8 TFLOP/s (36.1 without it)
// and 2048^3 at 39.4 (36.3), ahead of 64 x 128 without it (38.3-38.8 and 36.5-37.5), which
// prefetch slowed (34.2-34.6 and 24.7-25.2: 128 invocations holding the next step's loads too).
// Each operand prefetched by half of the 256 invocations (the emitter's TileLoaders): 4096^3 43.7,
// 8192^3 44.5, 2048^3 42.3 (H100, 2026-12-06, 14:23 UTC). With the next step's loads issued before
// the multiply-adds and their addresses hoisted: 4096^3 44.6-44.7 where the kernel before ran
// 43.7-44.0 (H100, 16:26 UTC); 43.2-43.3, 8192^3 45.1 and 2048^3 41.5-42.0 on a slower H100
// (16:42 UTC, where the kernel before ran 41.9-42.6).
const MatmulSchedule& LargeMatmulSchedule() {
  static const MatmulSchedule s = Tiled(128, 128, 16, 8, 8, /*prefetch=*/true);
  return s;
}
const MatmulSchedule& MediumMatmulSchedule() {
  static const MatmulSchedule s = Tiled(64, 64, 16, 4, 4);
  return s;
}
// The medium tiles where both operands load as vec4 (H100, 2026-12-07, by the GPU's span of each
// run): 8 x 8 outputs per invocation, the next step's tiles prefetched, ran 1024^3 at 27.0
// TFLOP/s against 19.9 for 4 x 4 and 23.1 for 8 x 8 without prefetch; 2048^3 and 4096^3 keep the
// large tiles (41.9 and 45.3 against 29.3 and 38.6). With scalar loads the 4 x 4 kernel stays: a
// software adapter could not compile 8 x 8 of them (above).
const MatmulSchedule& MediumVec4MatmulSchedule() {
  static const MatmulSchedule s = Tiled(64, 64, 16, 8, 8, /*prefetch=*/true);
  return s;
}
const MatmulSchedule& SmallMatmulSchedule() {
  static const MatmulSchedule s = Tiled(16, 16, 16, 1, 1);
  return s;
}

MatmulSchedule WithVec4Loads(MatmulSchedule s, const MatmulShape& shape) {
  // vec4 loads need the operand's contiguous dimension (its row length in memory) a multiple of
  // 4, so that no vec4 straddles two rows and every row starts 16-byte aligned; a tile of
  // multiples of 4 then has each vec4 wholly inside or wholly past the matrix's edge. The
  // one-output kernel loads one element per invocation and takes none.
  const bool blocked = s.kind == MatmulSchedule::Kind::kTiled && s.block_m % 4 == 0 &&
                       s.block_n % 4 == 0 && s.tile_k % 4 == 0;
  s.vec4_a = blocked && (shape.trans_a ? shape.m % 4 == 0 : shape.k % 4 == 0);
  s.vec4_b = blocked && (shape.trans_b ? shape.k % 4 == 0 : shape.n % 4 == 0);
  return s;
}

bool MatmulScheduleFits(const MatmulSchedule& s, const MatmulShape& shape,
                        int64_t workgroup_storage_bytes) {
  if (s.kind == MatmulSchedule::Kind::kPerElement) return true;
  return shape.m * shape.n * shape.batches > 0 && s.WorkgroupBytes() <= workgroup_storage_bytes &&
         CeilDiv(shape.n, s.tile_n) <= kMaxWorkgroupsPerDim &&
         CeilDiv(shape.m, s.tile_m) <= kMaxWorkgroupsPerDim &&
         shape.batches <= kMaxWorkgroupsPerDim;
}

MatmulSchedule ChooseMatmulSchedule(const MatmulShape& shape) {
  auto workgroups = [&](const MatmulSchedule& s) {
    return CeilDiv(shape.m, s.tile_m) * CeilDiv(shape.n, s.tile_n) * shape.batches;
  };
  if (MatmulScheduleFits(LargeMatmulSchedule(), shape) &&
      workgroups(LargeMatmulSchedule()) >= kFillWorkgroups)
    return WithVec4Loads(LargeMatmulSchedule(), shape);
  if (MatmulScheduleFits(MediumMatmulSchedule(), shape) &&
      workgroups(MediumMatmulSchedule()) >= kFillWorkgroups) {
    const MatmulSchedule vec4 = WithVec4Loads(MediumVec4MatmulSchedule(), shape);
    return vec4.vec4_a && vec4.vec4_b ? vec4 : WithVec4Loads(MediumMatmulSchedule(), shape);
  }
  // One output per invocation: 16 x 16 tiles, or 8 x 8 where 16 x 16 tiles leave the GPU
  // under-filled and 8 x 8 ones fill it (the 64 x 784 x 256 layer of a batch of 64: 64 workgroups
  // against 256, 13.9 -> 12.2 us on the H200); where neither fills it, the larger workgroups
  // measured faster (64 x 256 x 10: 7.0 against 7.3 us).
  if (MatmulScheduleFits(SmallMatmulSchedule(), shape)) {
    const MatmulSchedule eighths = Tiled(8, 8, 8, 1, 1);
    const bool eighths_fill = workgroups(SmallMatmulSchedule()) < kFillWorkgroups &&
                              MatmulScheduleFits(eighths, shape) &&
                              workgroups(eighths) >= kFillWorkgroups;
    return WithKStagedForShape(eighths_fill ? eighths : SmallMatmulSchedule(), shape);
  }
  // An empty output, or a grid past WebGPU's 65535 workgroups per dimension.
  MatmulSchedule per_element;
  per_element.kind = MatmulSchedule::Kind::kPerElement;
  return per_element;
}

Status ScheduleMatmul(Module& m) {
  for (Kernel& k : m.kernels) {
    if (k.kind != KernelKind::kOp || k.op != "matmul") continue;
    const MatmulShape shape = MatmulShapeOf(m, k);
    // An f16 product runs a one-output kernel: the register-blocked kernels bind f32 (or vec4<f32>)
    // operands only.
    if (m.graph().at(k.OpNode()).type.dtype == DType::kF16) {
      MatmulSchedule per_element;
      per_element.kind = MatmulSchedule::Kind::kPerElement;
      k.matmul_schedule =
          MatmulScheduleFits(SmallMatmulSchedule(), shape) ? SmallMatmulSchedule() : per_element;
      continue;
    }
    k.matmul_schedule = ChooseMatmulSchedule(shape);
    if (const auto& forced = m.matmul_schedule_override) {
      MatmulSchedule s = *forced;
      const MatmulSchedule allowed = WithVec4Loads(s, shape);
      s.vec4_a = s.vec4_a && allowed.vec4_a;
      s.vec4_b = s.vec4_b && allowed.vec4_b;
      if (MatmulScheduleFits(s, shape, m.workgroup_storage_bytes)) k.matmul_schedule = s;
    }
  }
  return Status::Ok();
}

}  // namespace scellis::kernel
