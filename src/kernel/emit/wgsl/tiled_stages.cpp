// WGSL for a run of elementwise stages in one dispatch (kernel/passes/block_butterfly_stages.cpp
// chooses the run): each workgroup owns `stage_tile` consecutive elements and runs every stage
// over them. A stage's value that later stages read lives in a workgroup-memory slot (its bits,
// as u32); a stage reads it there at its own element or at its butterfly partner l ^ mask, inside
// the tile. Values of the run's inputs are read from their buffers as the stage's own kernel
// reads them. Each stage computes into registers, then stores them in its slot (after a barrier
// when the slot's earlier value may still be read: no barrier since its last reader), then a
// barrier (every store is seen by the next stage). Barriers are what a software adapter spends
// its compile time on (SwiftShader), so none is added that order does not need. Every element of
// every stage evaluates the stage's own expression on the same operands, in the same order: the
// unblocked kernels' bits.
#include <algorithm>
#include <map>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {
namespace {

constexpr int64_t kMaxInvocations = 256;

// The WGSL register type of a value of `t` (bool and f32 in f32, integers in their own).
std::string RegisterType(DType t) {
  return t == DType::kI32 ? "i32" : t == DType::kU32 ? "u32" : "f32";
}

// The stage that writes `node` in `k`'s run, or -1 when the run reads it from a buffer.
int StageWriting(const Kernel& k, int node) {
  for (size_t s = 0; s < k.stages.size(); ++s)
    if (k.stages[s].output == node) return static_cast<int>(s);
  return -1;
}

// The last stage that reads each stage's value (-1: none in the run).
std::vector<int> LastReaders(const Kernel& k) {
  const int n = static_cast<int>(k.stages.size());
  std::vector<int> last_reader(n, -1);
  for (int s = 0; s < n; ++s)
    for (int in : k.stages[s].inputs)
      if (int w = StageWriting(k, in); w >= 0) last_reader[w] = s;
  return last_reader;
}

}  // namespace

std::vector<int> StageSlots(const Kernel& k) {
  const int n = static_cast<int>(k.stages.size());
  const std::vector<int> last_reader = LastReaders(k);
  std::vector<int> slot(n, -1), free_after;  // free_after[slot]: its value's last reader
  for (int s = 0; s < n; ++s) {
    if (last_reader[s] < 0) continue;
    // A slot whose value this stage reads last is free: the stage stores after a barrier.
    int chosen = -1;
    for (size_t j = 0; j < free_after.size() && chosen < 0; ++j)
      if (free_after[j] <= s) chosen = static_cast<int>(j);
    if (chosen < 0) {
      chosen = static_cast<int>(free_after.size());
      free_after.push_back(0);
    }
    free_after[chosen] = last_reader[s];
    slot[s] = chosen;
  }
  return slot;
}

Generated TiledStages(const Module& m, const Kernel& k) {
  const webir::Graph& g = m.graph();
  const int64_t total = g.at(k.output).type.elements(), tile = k.stage_tile;
  const int64_t invocations = std::min(kMaxInvocations, tile), per_invocation = tile / invocations;
  const std::vector<int> slot = StageSlots(k);
  const int slots = slot.empty() ? 0 : *std::max_element(slot.begin(), slot.end()) + 1;
  std::map<int, int> input_of;  // node -> the merged kernel's binding
  for (size_t q = 0; q < k.inputs.size(); ++q) input_of[k.inputs[q]] = static_cast<int>(q);
  const std::vector<int> outputs = k.Outputs();

  // Helpers once for every stage: ExpressionHelpers over all the stages' steps at once.
  Kernel all;
  for (const Kernel& st : k.stages) all.expr.insert(all.expr.end(), st.expr.begin(), st.expr.end());
  std::string s = "// " + std::to_string(k.stages.size()) + " stages per dispatch, tiles of " +
                  std::to_string(tile) + " elements\n" + Bindings(m, k) + ExpressionHelpers(m, all);
  for (int j = 0; j < slots; ++j)
    s +=
        "var<workgroup> slot" + std::to_string(j) + ": array<u32, " + std::to_string(tile) + ">;\n";

  for (size_t si = 0; si < k.stages.size(); ++si) {
    const Kernel& st = k.stages[si];
    // Stage input n's value at the element (`l` in the tile, `i` in the tensor) or its partner.
    auto read = [&](int n, bool partner, int64_t mask) {
      const int node = st.inputs[n];
      const DType t = g.at(node).type.dtype;
      if (int w = StageWriting(k, node); w >= 0) {
        const std::string at = partner ? "l ^ " + U32(mask) : "l";
        return "bitcast<" + RegisterType(t) + ">(slot" + std::to_string(slot[w]) + "[" + at + "])";
      }
      const std::string at = g.at(node).type.elements() == 1 ? "0u"
                             : partner                       ? "i ^ " + U32(mask)
                                                             : "i";
      return RegisterValue(t, "in" + std::to_string(input_of.at(node)) + "[" + at + "]");
    };
    std::vector<bool> read_directly(st.inputs.size(), false);
    for (const ExprStep& e : st.expr)
      for (int o : e.operands)
        if (!IsStepRef(o) && !IsPermutedLoad(e.op)) read_directly[o] = true;
    std::string body = "  let d0 = i;\n";
    for (size_t n = 0; n < st.inputs.size(); ++n)
      if (read_directly[n])
        body += "  let x" + std::to_string(n) + " = " + read(static_cast<int>(n), false, 0) + ";\n";
    body += ExpressionSteps(m, st, [&](const ExprStep& e, const std::string& name) {
      const int64_t mask = g.at(e.node).attrs.at("mask").get<int64_t>();
      return "  let " + name + " = " + read(e.operands.at(0), true, mask) + ";\n";
    });
    s += "\nfn stage" + std::to_string(si) + "(i: u32, l: u32) -> " +
         RegisterType(g.at(st.output).type.dtype) + " {\n" + body + "  return s" +
         std::to_string(st.expr.size() - 1) + ";\n}\n";
  }

  s += "\n@compute @workgroup_size(" + std::to_string(invocations) +
       ")\n"
       "fn main(@builtin(workgroup_id) wg: vec3<u32>,\n"
       "        @builtin(local_invocation_index) t: u32) {\n"
       "  let base = wg.x * " +
       U32(tile) + ";\n";
  const std::string each = "    for (var j = 0u; j < " + U32(per_invocation) +
                           "; j = j + 1u) {\n      let l = t + j * " + U32(invocations) + ";\n";
  // One array of register values per type, reused by every stage: a stage's values are stored
  // (in its slot, its output) before the next stage computes.
  std::vector<std::string> declared;
  for (const Kernel& st : k.stages) {
    const std::string type = RegisterType(g.at(st.output).type.dtype);
    if (std::find(declared.begin(), declared.end(), type) != declared.end()) continue;
    declared.push_back(type);
    s += "  var v_" + type + ": array<" + type + ", " + std::to_string(per_invocation) + ">;\n";
  }
  // Per slot, the last stage that reads the value it holds (-1: none yet); the last stage that
  // ended with a barrier.
  std::vector<int> last_read(slots, -1);
  int last_barrier = -1;
  const std::vector<int> last_reader = LastReaders(k);
  for (size_t si = 0; si < k.stages.size(); ++si) {
    const Kernel& st = k.stages[si];
    const DType t = g.at(st.output).type.dtype;
    const std::string v = "v_" + RegisterType(t);
    s += "  {\n" + each + "      " + v + "[j] = stage" + std::to_string(si) + "(base + l, l);\n";
    auto out = std::find(outputs.begin(), outputs.end(), st.output);
    if (out != outputs.end()) {
      const size_t o = static_cast<size_t>(out - outputs.begin());
      s += "      out" + (o ? std::to_string(o) : std::string()) +
           "[base + l] = " + StorageValue(t, v + "[j]") + ";\n";
    }
    s += "    }\n";
    if (slot[si] >= 0) {
      // The slot's earlier value was last read by stage last_read[slot]: unless a barrier ended
      // that stage or one since, some invocation may still be reading it.
      const int y = slot[si];
      const bool wait = last_read[y] >= 0 && last_barrier < last_read[y];
      s += std::string(wait ? "    workgroupBarrier();\n" : "") + each + "      slot" +
           std::to_string(y) + "[l] = bitcast<u32>(" + v +
           "[j]);\n    }\n    workgroupBarrier();\n";
      last_read[y] = last_reader[si];
      last_barrier = static_cast<int>(si);
    }
    s += "  }\n";
  }
  s += "}\n";
  Generated gen;
  gen.source = std::move(s);
  gen.workgroups = {static_cast<uint32_t>(total / tile), 1, 1};
  return gen;
}

}  // namespace scellis::kernel::wgsl
