// A user op's kernel: the user's WGSL (ops/user_op.h) wrapped in what the engine owns. Before it,
// the bindings, each port's shape as constants (`<PORT>_SHAPE_<axis>`, `<PORT>_RANK`, and the same
// for OUT) and its read-only accessor `fn <port>_at(index: u32) -> f32`; after it, the entry point:
// one invocation per output element, bounds-checked, storing `NAME(index)`. The user never sees a
// binding, so the plan may place the buffers as it does for any kernel.
#include <algorithm>
#include <cctype>

#include "kernel/emit/wgsl/codegen.h"
#include "ops/user_op.h"

namespace scellis::kernel::wgsl {
namespace {

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

std::string ShapeConstants(const std::string& prefix, const TensorType& t) {
  std::string s = "const " + prefix + "_RANK: u32 = " + U32(t.rank()) + ";\n";
  const std::vector<int64_t> sizes = t.sizes();
  for (size_t d = 0; d < sizes.size(); ++d)
    s += "const " + prefix + "_SHAPE_" + std::to_string(d) + ": u32 = " + U32(sizes[d]) + ";\n";
  return s;
}

}  // namespace

bool GenerateUser(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kOp) return false;
  const ops::OpSpec* spec = m.graph().ops->Find(k.op);
  if (!spec || !spec->user) return false;
  const TensorType& out_type = m.graph().at(k.output).type;
  std::string prologue = Bindings(m, k);
  for (size_t i = 0; i < spec->ports.size() && i < k.inputs.size(); ++i)
    prologue += ShapeConstants(Upper(spec->ports[i].name), m.graph().at(k.inputs[i]).type);
  prologue += ShapeConstants("OUT", out_type);
  for (size_t i = 0; i < spec->ports.size() && i < k.inputs.size(); ++i)
    prologue += "fn " + spec->ports[i].name + "_at(index: u32) -> f32 { return in" +
                std::to_string(i) + "[index]; }\n";
  prologue += "// ---- " + k.op + ", as the document defines it ----\n";
  std::string wgsl = spec->user->wgsl;
  if (wgsl.empty() || wgsl.back() != '\n') wgsl += '\n';
  out.user_first_line = 1 + static_cast<int>(std::count(prologue.begin(), prologue.end(), '\n'));
  out.user_lines = static_cast<int>(std::count(wgsl.begin(), wgsl.end(), '\n'));
  out.source = prologue + wgsl + "// ---- end of " + k.op + " ----\n" +
               LinearEntry(out_type.elements()) + "  out[i] = " + k.op + "(i);\n}\n";
  out.workgroups = LinearGrid(out_type.elements());
  return true;
}

}  // namespace scellis::kernel::wgsl
