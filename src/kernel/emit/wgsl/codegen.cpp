#include "kernel/emit/wgsl/codegen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "webir/op_rules.h"

namespace scellis::kernel::wgsl {

std::array<uint32_t, 3> LinearGrid(int64_t invocations) {
  int64_t groups = (invocations + kWorkgroupSize - 1) / kWorkgroupSize;
  if (groups < 1) groups = 1;
  if (groups <= kMaxWorkgroupsPerDim) return {static_cast<uint32_t>(groups), 1, 1};
  int64_t y = (groups + kMaxWorkgroupsPerDim - 1) / kMaxWorkgroupsPerDim;
  return {kMaxWorkgroupsPerDim, static_cast<uint32_t>(y), 1};
}

std::string F32(double v) {
  if (std::isnan(v)) return "bitcast<f32>(0x7fc00000u)";
  if (std::isinf(v)) return v > 0 ? "bitcast<f32>(0x7f800000u)" : "bitcast<f32>(0xff800000u)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v)));
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return "f32(" + s + ")";
}

std::string U32(int64_t v) {
  return std::to_string(v) + "u";
}

const char* StorageType(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kI32:
      return "i32";
    case DType::kU32:
    case DType::kBool:
    case DType::kQ4K:  // packed blocks, read as little-endian bytes of their words
    case DType::kQ6K:
      return "u32";
  }
  return "f32";
}

std::string Bindings(const Module& m, const Kernel& k, const std::vector<bool>& vec4_inputs,
                     bool vec4_output) {
  auto element = [](DType t, bool vec4) {
    return vec4 ? std::string("vec4<") + StorageType(t) + ">" : std::string(StorageType(t));
  };
  std::string s;
  bool f16 = m.graph().at(k.output).type.dtype == DType::kF16;
  const std::vector<int>& in_place = k.in_place;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const DType t = m.graph().at(k.inputs[i]).type.dtype;
    f16 |= t == DType::kF16;
    // A uniform input is its one element; an input an output is written over is read and
    // written through its one binding.
    if (k.UniformInput(i)) {
      s += "@group(0) @binding(" + std::to_string(i) + ") var<uniform> in" + std::to_string(i) +
           ": " + StorageType(t) + ";\n";
      continue;
    }
    const bool written = std::count(in_place.begin(), in_place.end(), static_cast<int>(i)) > 0;
    s += "@group(0) @binding(" + std::to_string(i) + ") var<storage, " +
         (written ? "read_write" : "read") + "> in" + std::to_string(i) + ": array<" +
         element(t, i < vec4_inputs.size() && vec4_inputs[i]) + ">;\n";
  }
  // A literal argument (Kernel::literals) is read where its binding would be, from a private
  // array of its one value.
  for (size_t j = 0; j < k.literals.size(); ++j)
    s += "var<private> in" + std::to_string(k.inputs.size() + j) +
         ": array<f32, 1> = array<f32, 1>(" + F32(k.literals[j].value) + ");\n";
  // Outputs written in place have no binding; the others follow the inputs, in order.
  size_t binding = k.inputs.size();
  if (k.InPlaceOf(0) < 0)
    s += "@group(0) @binding(" + std::to_string(binding++) +
         ") var<storage, read_write> out: array<" +
         element(m.graph().at(k.output).type.dtype, vec4_output) + ">;\n";
  for (size_t j = 0; j < k.extra_outputs.size(); ++j) {
    const DType t = m.graph().at(k.extra_outputs[j]).type.dtype;
    f16 |= t == DType::kF16;
    if (k.InPlaceOf(j + 1) >= 0) continue;
    s += "@group(0) @binding(" + std::to_string(binding++) + ") var<storage, read_write> out" +
         std::to_string(j + 1) + ": array<" + element(t, false) + ">;\n";
  }
  return (f16 ? "enable f16;\n" : "") + s;
}

std::string TreeCombine(const std::string& finish) {
  return "  workgroupBarrier();\n"
         "  for (var w = 128u; w > 0u; w = w >> 1u) {\n"
         "    if (t < w) { partial[t] = partial[t] + partial[t + w]; }\n"
         "    workgroupBarrier();\n"
         "  }\n"
         "  if (t == 0u) {\n" +
         finish +
         "  }\n"
         "}\n";
}

std::string TreeReduce256(const std::string& term, int64_t count, const std::string& finish,
                          const std::string& type, const std::string& start) {
  return "var<workgroup> partial: array<" + type +
         ", 256>;\n"
         "@compute @workgroup_size(256)\n"
         "fn main(@builtin(local_invocation_index) t: u32) {\n" +
         TreeReduce256Body(term, count, finish, type, start);
}

std::string TreeReduce256Body(const std::string& term, int64_t count, const std::string& finish,
                              const std::string& type, const std::string& start) {
  return "  var s = " +
         (!start.empty()  ? start
          : type == "f32" ? std::string("0.0")
                          : type + "(0)") +
         ";\n"
         "  for (var j = t; j < " +
         U32(count) + "; j = j + 256u) { s = s + " + term +
         "; }\n"
         "  partial[t] = s;\n" +
         TreeCombine(finish);
}

std::string LaneTileEntry(const std::string& term, int64_t count, bool continues, bool finishes,
                          const std::string& finish) {
  const std::string start = continues ? "lanes[t]" : "";
  // Every binding is used, so the pipeline's layout (derived from the shader) has them all.
  if (finishes)
    return TreeReduce256(term, count, "    _ = arrayLength(&lanes);\n" + finish, "f32", start);
  return "@compute @workgroup_size(256)\n"
         "fn main(@builtin(local_invocation_index) t: u32) {\n"
         "  var s = " +
         (continues ? start : std::string("0.0")) +
         ";\n"
         "  for (var j = t; j < " +
         U32(count) + "; j = j + 256u) { s = s + " + term +
         "; }\n"
         "  lanes[t] = s;\n"
         "  _ = arrayLength(&out);\n"
         "}\n";
}

std::string TreeReduce256Vec4(int64_t count, const std::string& finish) {
  constexpr int kUnroll = 16;  // vectors each of the 64 summing invocations has in flight
  const int64_t vectors = count / 4;
  std::string loads, adds;
  for (int u = 0; u < kUnroll; ++u) {
    const std::string v = "v" + std::to_string(u);
    loads += "      let " + v + " = in0[r" + (u ? " + " + U32(64 * u) : "") + "];\n";
    adds += "      s = s + " + v + ";\n";
  }
  return "var<workgroup> partial: array<f32, 256>;\n"
         "@compute @workgroup_size(256)\n"
         "fn main(@builtin(local_invocation_index) t: u32) {\n"
         "  if (t < 64u) {\n"
         "    var s = vec4<f32>(0.0);\n"
         "    var r = t;\n"
         "    for (; r + " +
         U32(64 * (kUnroll - 1)) + " < " + U32(vectors) + "; r = r + " + U32(64 * kUnroll) +
         ") {\n" + loads + adds +
         "    }\n"
         "    for (; r < " +
         U32(vectors) +
         "; r = r + 64u) { s = s + in0[r]; }\n"
         "    partial[4u * t] = s.x;\n"
         "    partial[4u * t + 1u] = s.y;\n"
         "    partial[4u * t + 2u] = s.z;\n"
         "    partial[4u * t + 3u] = s.w;\n"
         "  }\n" +
         TreeCombine(finish);
}

std::string LinearEntry(int64_t total) {
  return "@compute @workgroup_size(" + std::to_string(kWorkgroupSize) +
         ")\n"
         "fn main(@builtin(global_invocation_id) gid: vec3<u32>,\n"
         "        @builtin(num_workgroups) groups: vec3<u32>) {\n"
         "  let i = gid.x + gid.y * groups.x * " +
         U32(kWorkgroupSize) +
         ";\n"
         "  if (i >= " +
         U32(total) + ") { return; }\n";
}

namespace {

// Layout kernels move elements without looking at them, in any storage type; index kernels take
// the dtypes their ports do (i32 indices; moved elements in any type; i32 sums); sum takes i32 (an
// exact integer sum) and f16 (accumulated in f32) as well as f32; matmul takes f16 (products and
// sums in f32, rounded once).
bool TakesItsPortDtypes(const Module& m, const Kernel& k) {
  if (k.kind != KernelKind::kOp) return false;
  if (IsLayoutOp(k.op) || IsIndexOp(k.op)) return true;
  const DType in = m.graph().at(k.inputs[0]).type.dtype;
  if (k.op == "matmul") return in == DType::kF16;
  return k.op == "sum" && (in == DType::kI32 || in == DType::kF16);
}

// matmul_fixed computes in integers: i32 operands (its ports say so) and an i32 result.
bool ComputesInIntegers(const Kernel& k) {
  return k.kind == KernelKind::kOp && k.op == "matmul_fixed";
}

}  // namespace

Result<Generated> Generate(const Module& m, const Kernel& k) {
  if (!k.row_gathers.empty()) {
    SCELLIS_ASSIGN_OR_RETURN(Generated out, Generate(m, UnfoldRowGathers(k)));
    SCELLIS_ASSIGN_OR_RETURN(out.source, ReadRowGathers(m, k, out.source));
    return out;
  }
  if (k.kind == KernelKind::kRowStages) return RowStages(m, k);
  if (k.kind != KernelKind::kElementwise && !TakesItsPortDtypes(m, k) && !ComputesInIntegers(k)) {
    // A matmul's epilogue reads f32 and bool inputs of its own (fuse-matmul-epilogue checked
    // them) and ends in f32: the op's own operands are the ones held to its dtypes.
    std::vector<int> nodes = k.inputs;
    if (k.HasEpilogue()) nodes.resize(2);
    nodes.push_back(k.output);
    const ops::OpSpec* spec = k.kind == KernelKind::kOp ? m.graph().ops->Find(k.op) : nullptr;
    for (size_t j = 0; j < nodes.size(); ++j) {
      const webir::Node& n = m.graph().at(nodes[j]);
      if (n.type.dtype == DType::kF32) continue;
      // An operand of a port that declares the dtype (matmul_q's blocks) is the op's to read.
      if (spec && j < spec->ports.size() && nodes[j] != k.output &&
          std::find(spec->ports[j].dtypes.begin(), spec->ports[j].dtypes.end(), n.type.dtype) !=
              spec->ports[j].dtypes.end())
        continue;
      const webir::Node& op = m.graph().at(k.output);
      return UserError("unsupported-dtype", op.origin,
                       k.op + " computes in f32 only, and \"" +
                           (n.label.empty() ? n.name : n.label) + "\" is " +
                           DTypeName(n.type.dtype),
                       "declare the tensor f32; the ops table lists the dtypes of each op's "
                       "inputs (layout ops move every dtype, sum and the elementwise arithmetic "
                       "also take integers)");
    }
  }
  // WebIR lowers a longer list into a tree of list ops that each fit the WebGPU minimum of
  // storage buffers per stage, so a kernel over more is a broken invariant, not a user's graph.
  if (const ops::OpSpec* spec = m.graph().ops->Find(k.op); k.kind == KernelKind::kOp && spec &&
                                                           spec->ListPort() &&
                                                           k.inputs.size() > webir::kMaxListArgs) {
    return InternalError("wgsl.Generate", "a " + k.op + " kernel of " +
                                              std::to_string(k.inputs.size()) +
                                              " inputs, more than one kernel binds");
  }
  if (k.kind == KernelKind::kOp && k.op == "matmul") {
    if (!k.matmul_schedule)
      return InternalError("wgsl.Generate", k.name +
                                                " has no schedule: the schedule-matmul pass runs "
                                                "before emit-wgsl");
    SCELLIS_TRY(
        CheckMatmulSchedule(*k.matmul_schedule, MatmulShapeOf(m, k), m.workgroup_storage_bytes));
  }
  static const FamilyGen kFamilies[] = {
      GenerateElementwise, GenerateReduce, GenerateLinalg, GenerateLayout, GenerateStencil,
      GenerateNn,          GenerateOptim,  GenerateRandom, GenerateIndex,  GenerateUser};
  Generated out;
  for (FamilyGen f : kFamilies)
    if (f(m, k, out)) return out;
  return InternalError("wgsl.Generate", "no WGSL generator for kernel " + k.op);
}

}  // namespace scellis::kernel::wgsl

namespace scellis::kernel::wgsl {

Generated PerElementTile(const Module& m, const Kernel& k, int64_t base, int64_t count) {
  return k.kind == KernelKind::kElementwise ? ElementwiseTile(m, k, base, count)
                                            : RandomTile(m, k, base, count);
}

Generated TileSource(const Module& m, const Kernel& k, const Tiling& tiling, const Tile& t,
                     const std::vector<int64_t>& window) {
  // Where the tile's first element of each binding lies in that binding's window.
  const TileSpace& box = SpaceOf(tiling.space, t);
  std::vector<int64_t> offset(window.size());
  for (size_t b = 0; b < window.size(); ++b) {
    const TileStrides& st = box.layouts[b];
    const int64_t origin = box.origins.empty() ? 0 : box.origins[b];
    offset[b] = origin + t.row0 * st[0] + t.col0 * st[1] + t.depth0 * st[2] - window[b];
  }
  switch (tiling.space.kind) {
    case TileSpace::Kind::kMatmul: {
      if (t.batch_count != 1 || tiling.space.batches <= 1)
        return MatmulTile(m, k, t, {offset[0], offset[1], offset[2]});
      // A tile of one product of a batch: its product's start folded into the offsets (product 0
      // then starts at 0), so the tiles of products whose windows sit alike share their WGSL and
      // pipeline.
      Tile first = t;
      first.batch0 = 0;
      for (int b = 0; b < 3; ++b) offset[b] += BatchOffset(tiling.space, b, t.batch0);
      return MatmulTile(m, k, first, {offset[0], offset[1], offset[2]});
    }
    case TileSpace::Kind::kAxisSum:
    case TileSpace::Kind::kWholeSum:
      return SumTile(m, k, tiling, t, {offset[0], offset[1]});
    case TileSpace::Kind::kSoftmax:
      if (tiling.passes == 3) return SoftmaxRowTile(m, k, tiling, t, offset[0]);
      return SoftmaxTile(m, k, t, offset[0]);
    case TileSpace::Kind::kCrossEntropy:
      return CrossEntropyTile(m, k, tiling, t,
                              {offset[0], offset[1], offset.size() > 4 ? offset[4] : 0});
    case TileSpace::Kind::kCopy:
      return CopyTile(m, k, tiling, t, offset);
    case TileSpace::Kind::kCrossEntropyGrad:
      return CrossEntropyGradTile(m, k, t, {offset[0], offset[1], offset[3]});
    case TileSpace::Kind::kCumsum:
      return CumsumTile(m, k, tiling, t, {offset[0], offset[1]});
  }
  return {};
}

}  // namespace scellis::kernel::wgsl
