// WGSL of the counter-hash ops: the hash of base/random.h in u32 arithmetic, which WGSL defines to
// wrap modulo 2^32, so every device gives the reference's bits.
#include "kernel/emit/wgsl/codegen.h"
#include "kernel/ref/ref.h"

namespace scellis::kernel::wgsl {

// pcg_u32 is PcgHash, stream_bits StreamBits and step_u32 StepNumber (base/random.h). The step
// value is tested for NaN on the bits and clamped before the conversion, which WGSL leaves
// unspecified outside u32's range.
const char* const kCounterHashFns =
    "fn pcg_u32(v: u32) -> u32 {\n"
    "  let s = v * 747796405u + 2891336453u;\n"
    "  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;\n"
    "  return (w >> 22u) ^ w;\n"
    "}\n"
    "fn stream_bits(seed: u32, step: u32, index: u32) -> u32 {\n"
    "  return pcg_u32(pcg_u32(index) ^ pcg_u32(seed ^ pcg_u32(step)));\n"
    "}\n"
    "fn step_u32(t: f32) -> u32 {\n"
    "  if (is_nan_f32(t) || !(t > 0.0)) { return 0u; }\n"
    "  return u32(min(t, 4294967040.0));\n"
    "}\n";

namespace {}  // namespace

Generated RandomTile(const Module& m, const Kernel& k, int64_t base, int64_t count) {
  const webir::Node& n = m.graph().at(k.output);
  const std::string seed = U32(ref::RandomSeed(n));
  // The hash takes the element's index in the whole tensor, modulo 2^32 as the reference's u32
  // counter (u32 addition wraps), so a tile gives the untiled kernel's bits; `i` counts from the
  // tile's first element, where every operand of the output's shape is bound.
  const bool tiled = base != 0 || count != n.type.elements();
  const int64_t base_u32 = base & int64_t{0xffffffff};
  const std::string index = base_u32 ? "i + " + U32(base_u32) : "i";
  std::string body;
  if (k.op == "uniform") {
    body = "  let bits = stream_bits(" + seed + ", step_u32(in0[0]), " + index +
           ");\n"
           "  out[i] = f32(bits >> 8u) * (1.0 / 16777216.0);\n";
  } else {
    const double p = n.attrs.value("p", 0.5);
    // A dropped element is a * 0 as torch computes it: NaN for NaN and infinities, else a zero of
    // a's sign, made on the bits (WGSL may assume no NaN or infinity occurs).
    body =
        "  let x = in0[i];\n"
        "  let keep = (stream_bits(" +
        seed + ", step_u32(in1[0]), " + index + ") >> 8u) >= " + U32(ref::DropoutThreshold(p)) +
        ";\n"
        "  let non_finite = (bitcast<u32>(x) & 0x7f800000u) == 0x7f800000u;\n"
        "  let dropped = select(bitcast<f32>(bitcast<u32>(x) & 0x80000000u), nan_f32(), "
        "non_finite);\n"
        "  out[i] = select(dropped, x * " +
        F32(static_cast<float>(1.0 / (1.0 - p))) + ", keep);\n";
  }
  const std::string title = tiled ? "// a tile of " + std::to_string(count) + " elements from " +
                                        std::to_string(base) + "\n"
                                  : "";
  Generated out;
  out.source = title + Bindings(m, k) + kSpecialValueFns + kCounterHashFns + "\n" +
               LinearEntry(count) + body + "}\n";
  out.workgroups = LinearGrid(count);
  return out;
}

bool GenerateRandom(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kOp || (k.op != "uniform" && k.op != "dropout")) return false;
  out = RandomTile(m, k, 0, m.graph().at(k.output).type.elements());
  return true;
}

}  // namespace scellis::kernel::wgsl
