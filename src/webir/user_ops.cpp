#include "webir/user_ops.h"

#include "doc/user_ops.h"

namespace scellis::webir {
namespace {

Status AtReference(const ops::OpSpec& spec, const Status& s) {
  std::vector<Diagnostic> out;
  for (const Diagnostic& d : s.errors()) out.push_back(doc::AtReference(spec, d));
  return Status(out);
}

}  // namespace

Result<Graph> ReferenceGraph(const ops::OpSpec& spec, const std::vector<TensorType>& args) {
  auto d = doc::Parse(CanonicalJson(doc::ReferenceDocument(spec, args)), *ops::BuiltinOps());
  if (!d.ok()) return AtReference(spec, d.status());
  block::LowerOptions options;
  auto p = block::FromDoc(d.value(), options);
  if (!p.ok()) return AtReference(spec, p.status());
  auto g = FromBlock(p.value());
  if (!g.ok()) return AtReference(spec, g.status());
  return g;
}

}  // namespace scellis::webir
