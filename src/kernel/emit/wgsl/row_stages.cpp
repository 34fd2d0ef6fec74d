// A kernel of row stages (the fuse-gradient-product-into-loss pass): workgroup 0 runs the loss's
// tree; every other workgroup, of kWorkgroupLanes invocations, a block of rows through the other
// stages in turn, with a storage barrier between two stages, so that a stage reads what the ones
// before it wrote for the block's rows. Each stage's code is what its own kernel computes
// (LossStage, GradientRowsStage, MatmulRowsStage), written with the names it would bind alone and
// renamed to the kernel's bindings.
#include <algorithm>
#include <cctype>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {

std::string RenameIdentifiers(const std::string& source,
                              const std::map<std::string, std::string>& names) {
  std::string out;
  out.reserve(source.size());
  auto starts = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  auto continues = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < source.size();) {
    // A number's letters (1.0e-5, 7u) are part of it, never an identifier.
    if (std::isdigit(static_cast<unsigned char>(source[i]))) {
      size_t j = i;
      while (j < source.size() && (continues(source[j]) || source[j] == '.')) ++j;
      out.append(source, i, j - i);
      i = j;
      continue;
    }
    if (!starts(source[i])) {
      out += source[i++];
      continue;
    }
    size_t j = i;
    while (j < source.size() && continues(source[j])) ++j;
    const std::string word = source.substr(i, j - i);
    auto it = names.find(word);
    out += it == names.end() ? word : it->second;
    i = j;
  }
  return out;
}

namespace {

// The name a kernel alone gives input i (literal j after its inputs) and output j.
std::string InputName(size_t i) {
  return "in" + std::to_string(i);
}
std::string OutputName(size_t j) {
  return j ? "out" + std::to_string(j) : "out";
}

}  // namespace

Generated RowStages(const Module& m, const Kernel& k) {
  // The kernel's own name of each value it binds or folds in.
  std::map<int, std::string> bound;
  for (size_t i = 0; i < k.inputs.size(); ++i) bound[k.inputs[i]] = InputName(i);
  for (size_t j = 0; j < k.literals.size(); ++j)
    bound[k.literals[j].node] = InputName(k.inputs.size() + j);
  const std::vector<int> outs = k.Outputs();
  for (size_t j = 0; j < outs.size(); ++j) bound[outs[j]] = OutputName(j);

  // The epilogues' helpers once, for all of them (two epilogues may need the same one).
  Kernel epilogues;
  for (const Kernel& st : k.stages)
    if (st.HasEpilogue()) {
      const Kernel e = EpilogueKernel(st);
      epilogues.expr.insert(epilogues.expr.end(), e.expr.begin(), e.expr.end());
    }
  // The loss and its gradient need the special values; an epilogue's helpers may hold them already.
  std::string functions = ExpressionHelpers(m, epilogues);
  if (functions.find(kSpecialValueFns) == std::string::npos) functions.insert(0, kSpecialValueFns);
  const int64_t rows = m.graph().at(k.stages.front().inputs[0]).type.dims[0].size;
  const int64_t per = std::max<int64_t>(k.stage_tile, 1);
  std::string main =
      "var<workgroup> partial: array<f32, 256>;\n"
      "@compute @workgroup_size(" +
      std::to_string(kWorkgroupLanes) +
      ")\n"
      "fn main(@builtin(workgroup_id) wg: vec3<u32>,\n"
      "        @builtin(local_invocation_index) t: u32) {\n"
      "  if (wg.x == 0u) {\n"
      "    stage_0(t);\n"
      "    return;\n"
      "  }\n"
      "  let r0 = (wg.x - 1u) * " +
      U32(per) + ";\n  let r1 = min(r0 + " + U32(per) + ", " + U32(rows) + ");\n";
  for (size_t s = 0; s < k.stages.size(); ++s) {
    const Kernel& st = k.stages[s];
    const StageSource src = s == 0                          ? LossStage(m, st)
                            : st.op == "cross_entropy_grad" ? GradientRowsStage(m, st)
                                                            : MatmulRowsStage(m, st);
    std::map<std::string, std::string> names;
    for (size_t i = 0; i < st.inputs.size(); ++i) names[InputName(i)] = bound.at(st.inputs[i]);
    for (size_t j = 0; j < st.literals.size(); ++j)
      names[InputName(st.inputs.size() + j)] = bound.at(st.literals[j].node);
    const std::vector<int> stage_outs = st.Outputs();
    for (size_t j = 0; j < stage_outs.size(); ++j) names[OutputName(j)] = bound.at(stage_outs[j]);
    names["epilogue"] = "epilogue_" + std::to_string(s);
    functions += RenameIdentifiers(src.functions, names);
    functions += "fn stage_" + std::to_string(s) +
                 (s == 0 ? "(t: u32) {\n" : "(t: u32, r0: u32, r1: u32) {\n") +
                 RenameIdentifiers(src.body, names) + "\n";
    if (s == 0) continue;
    if (s > 1) main += "  storageBarrier();\n";
    main += "  stage_" + std::to_string(s) + "(t, r0, r1);\n";
  }
  Generated out;
  out.source = Bindings(m, k) + functions + main + "}\n";
  out.workgroups = {static_cast<uint32_t>(1 + (rows + per - 1) / per), 1, 1};
  return out;
}

}  // namespace scellis::kernel::wgsl
