// The wide fused elementwise kernel (ElementwiseSchedule width 4): vectors of four elements loaded
// and stored whole, each workgroup over chunks of consecutive vectors. The fused expression stays
// one scalar function, `fused_element`, that computes one output from its inputs' storage values: a
// vector's components are four calls of it. So every op the scalar kernel emits works unchanged
// (its NaN tests on the bits included), and an element's bits cannot differ from the scalar
// kernel's; a GPU executes vector arithmetic one component at a time anyway, so nothing is lost by
// not writing it on vec4.
#include <algorithm>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {

namespace {

constexpr const char* kComponents[] = {"x", "y", "z", "w"};

}  // namespace

Generated VectorTile(const Module& m, const Kernel& k, const ElementwiseSchedule& s, int64_t base,
                     int64_t count) {
  const TensorType& type = m.graph().at(k.output).type;
  const int64_t total = type.elements();
  const int width = s.width;
  const int64_t vectors = count / width;
  const int64_t first = base / width;  // the tile's first vector in the whole output

  // Each input is read at i % period (ReadPeriod): a single element is loaded once and given to
  // every component; any other input as vectors, indexed by the vector's place in the tile when
  // it is bound as a window of the output's shape (device_program windows exactly those), else by
  // its place in the whole output, modulo the period's vectors.
  std::vector<bool> vec4_inputs(k.inputs.size());
  std::string params, loads;
  for (size_t n = 0; n < k.inputs.size(); ++n) {
    const TensorType& in = m.graph().at(k.inputs[n]).type;
    const int64_t period = ReadPeriod(m, k, static_cast<int>(n)).value_or(total);
    vec4_inputs[n] = period != 1;
    std::string index = "0u";
    if (period != 1) {
      const bool windowed = in.SameShape(type);
      index = windowed || first == 0 ? "j" : "(j + " + U32(first) + ")";
      if (!windowed && period != total) index += " % " + U32(period / width);
    }
    loads += "      let v" + std::to_string(n) + " = in" + std::to_string(n) + "[" + index + "];\n";
    params += (n ? ", a" : "a") + std::to_string(n) + ": " + StorageType(in.dtype);
  }
  std::string store =
      "      out[j] = vec" + std::to_string(width) + "<" + StorageType(type.dtype) + ">(";
  for (int c = 0; c < width; ++c) {
    store += std::string(c ? "," : "") + "\n        fused_element(";
    for (size_t n = 0; n < k.inputs.size(); ++n)
      store += (n ? ", v" : "v") + std::to_string(n) +
               (vec4_inputs[n] ? std::string(".") + kComponents[c] : "");
    store += ")";
  }
  store += ");\n";

  std::string element = "fn fused_element(" + params + ") -> " + StorageType(type.dtype) + " {\n";
  for (size_t n = 0; n < k.inputs.size(); ++n)
    element += "  let x" + std::to_string(n) + " = " +
               RegisterValue(m.graph().at(k.inputs[n]).type.dtype, "a" + std::to_string(n)) + ";\n";
  // No shift step reaches here: a shifted input has no period, so the kernel is never wide.
  element += ExpressionSteps(m, k, [](const ExprStep&, const std::string&) { return ""; });
  element +=
      "  return " + StorageValue(type.dtype, "s" + std::to_string(k.expr.size() - 1)) + ";\n}\n";

  const int64_t per_group = int64_t{s.workgroup_size} * s.per_invocation;
  const int64_t groups = std::clamp<int64_t>((vectors + per_group - 1) / per_group, 1,
                                             ElementwiseSchedule::kMaxWorkgroups);
  // Each workgroup covers chunks of workgroup_size x per_invocation consecutive vectors (its
  // invocation t takes vectors t, t + workgroup_size, ... of the chunk), and strides over chunks
  // only when there are more than the grid's workgroups. So the workgroups resident at one time
  // stream one compact window of every buffer, moving through memory in order. The expression is
  // written once, in the loop over an invocation's vectors: a software adapter inlines every copy
  // of it, and unrolled copies made its shaders many times slower to compile.
  const std::string chunk = U32(per_group);
  Generated out;
  const bool tiled = base != 0 || count != total;
  out.source = (tiled ? "// a tile of " + std::to_string(count) + " elements from " +
                            std::to_string(base) + "\n"
                      : "") +
               Bindings(m, k, vec4_inputs, true) + ExpressionHelpers(m, k) + element + "\n" +
               "@compute @workgroup_size(" + std::to_string(s.workgroup_size) +
               ")\n"
               "fn main(@builtin(workgroup_id) group: vec3<u32>,\n"
               "        @builtin(local_invocation_index) lane: u32,\n"
               "        @builtin(num_workgroups) groups: vec3<u32>) {\n"
               "  for (var c = group.x; c < " +
               U32((vectors + per_group - 1) / per_group) + "; c = c + groups.x) {\n" +
               "    for (var t = 0u; t < " + U32(s.per_invocation) + "; t = t + 1u) {\n" +
               "      let j = c * " + chunk + " + t * " + U32(s.workgroup_size) + " + lane;\n" +
               "      if (j >= " + U32(vectors) + ") { break; }\n" + loads + store +
               "    }\n  }\n}\n";
  out.workgroups = {static_cast<uint32_t>(groups), 1, 1};
  return out;
}

}  // namespace scellis::kernel::wgsl
