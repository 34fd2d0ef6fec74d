// A kernel's folded row gathers (Kernel::row_gathers, the fold-row-gathers pass) in its WGSL. The
// kernel is emitted as it reads (UnfoldRowGathers): binding i holds its gathered value. Then each
// read of that value, `in<i>[e]`, becomes `gathered_in<i>(e)`, which loads element e from the
// table now bound there, at row index[e / row]; the index bindings go after the inputs (a uniform
// index as an array of vec4, uniform memory's stride), and the outputs' bindings move up past
// them, the order the plan binds the kernel's buffers in.
#include <cctype>
#include <set>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {
namespace {

bool IdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Every `@binding(b)` with b >= first becomes `@binding(b + shift)`.
std::string ShiftBindings(const std::string& source, size_t first, size_t shift) {
  static const std::string kBinding = "@binding(";
  std::string out;
  size_t at = 0;
  for (size_t p = source.find(kBinding); p != std::string::npos; p = source.find(kBinding, at)) {
    const size_t digits = p + kBinding.size();
    size_t end = digits;
    while (end < source.size() && std::isdigit(static_cast<unsigned char>(source[end]))) ++end;
    const size_t b = std::stoul(source.substr(digits, end - digits));
    out.append(source, at, digits - at);
    out += std::to_string(b >= first ? b + shift : b);
    at = end;
  }
  out.append(source, at, std::string::npos);
  return out;
}

// The element type of binding `name`'s array ("f32", "vec4<f32>"), from its declaration.
Result<std::string> DeclaredElement(const std::string& source, const std::string& name) {
  const std::string head = "> " + name + ": array<";
  const size_t p = source.find(head);
  const size_t end = p == std::string::npos ? p : source.find(">;\n", p);
  if (end == std::string::npos)
    return InternalError("wgsl.RowGathers", "no storage array " + name + " to read rows from");
  return source.substr(p + head.size(), end - p - head.size());
}

// `source` with every `name[x]` read as `fn(x)`; refused where `name` is used any other way than
// indexed (its declaration aside): a gathered value can only be read element by element.
Result<std::string> ReadThrough(const std::string& source, const std::string& name,
                                const std::string& fn) {
  std::string out;
  std::vector<bool> closes_call;  // per open '[': whether it closes as ')'
  for (size_t i = 0; i < source.size();) {
    const char c = source[i];
    const bool word_start = i == 0 || !IdentifierChar(source[i - 1]);
    if (word_start && source.compare(i, name.size(), name) == 0 &&
        (i + name.size() == source.size() || !IdentifierChar(source[i + name.size()]))) {
      const size_t after = i + name.size();
      if (after < source.size() && source[after] == '[') {
        out += fn + "(";
        closes_call.push_back(true);
        i = after + 1;
        continue;
      }
      if (source.compare(after, 2, ": ") != 0 || i < 2 || source.compare(i - 2, 2, "> ") != 0)
        return InternalError("wgsl.RowGathers", name + " is read other than by element");
    }
    if (c == '[') closes_call.push_back(false);
    if (c == ']') {
      if (closes_call.empty()) return InternalError("wgsl.RowGathers", "unbalanced brackets");
      out += closes_call.back() ? ')' : ']';
      closes_call.pop_back();
      ++i;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

}  // namespace

Result<std::string> ReadRowGathers(const Module& m, const Kernel& k, const std::string& source) {
  const size_t indices = RowGatherIndexInputs(k);
  const size_t read = k.inputs.size() - indices;
  std::string s = ShiftBindings(source, read, indices);
  std::string declarations, functions;
  std::set<int> declared;
  for (const Kernel::RowGather& g : k.row_gathers) {
    const std::string index = "row_index" + std::to_string(g.index);
    const TensorType& index_type = m.graph().at(k.inputs[g.index]).type;
    const std::string index_element = StorageType(index_type.dtype);
    const bool uniform = k.UniformInput(g.index);
    if (declared.insert(g.index).second)
      declarations +=
          "@group(0) @binding(" + std::to_string(g.index) + ") " +
          (uniform ? "var<uniform> " + index + ": array<vec4<" + index_element + ">, " +
                         std::to_string(index_type.elements() / 4) + ">;\n"
                   : "var<storage, read> " + index + ": array<" + index_element + ">;\n");
    const std::string name = "in" + std::to_string(g.input);
    const std::string fn = "gathered_" + name;
    SCELLIS_ASSIGN_OR_RETURN(const std::string element, DeclaredElement(s, name));
    SCELLIS_ASSIGN_OR_RETURN(s, ReadThrough(s, name, fn));
    // Elements per row of the table, in the binding's units (vectors of 4 when loaded so).
    const TensorType& table = m.graph().at(k.inputs[g.input]).type;
    int64_t row = table.elements() / std::max<int64_t>(table.dims[0].size, 1);
    if (element.rfind("vec4<", 0) == 0) {
      if (row % 4)
        return InternalError("wgsl.RowGathers", k.name + " loads rows of " + std::to_string(row) +
                                                    " elements as vec4");
      row /= 4;
    }
    // The index's element p: in uniform memory the component p % 4 of vector p / 4.
    const std::string position = row == 1 ? "e" : "e / " + U32(row);
    const std::string picked = uniform ? index + "[p / 4u][p % 4u]" : index + "[p]";
    const std::string at = row == 1 ? "u32(" + picked + ")"
                                    : "u32(" + picked + ") * " + U32(row) + " + e % " + U32(row);
    functions += "fn " + fn + "(e: u32) -> " + element + " {\n  let p = " + position +
                 ";\n  return " + name + "[" + at + "];\n}\n";
  }
  // Enable directives come first in a module; the index bindings follow them.
  size_t head = 0;
  while (s.compare(head, 7, "enable ") == 0) head = s.find('\n', head) + 1;
  s.insert(head, declarations);
  return s + functions;
}

}  // namespace scellis::kernel::wgsl
