#include "api/user_ops.h"

#include "doc/user_ops.h"

namespace scellis::api {

Result<std::shared_ptr<const ops::OpTable>> DefineOps(
    const std::vector<UserOpDefinition>& definitions, const ops::OpTable& base) {
  auto table = std::make_shared<ops::OpTable>(base);
  std::vector<Diagnostic> errors;
  for (const UserOpDefinition& d : definitions) {
    const ops::UserCallable forward{d.reference, d.reference_f64, d.reference_version};
    std::map<std::string, ops::UserCallable> gradients;
    Json signature = d.signature;
    for (const auto& [port, g] : d.gradients) {
      gradients[port] = {g.reference, g.reference_f64, g.reference_version};
      // Written into the definition as a document's gradient would be (a "gradient" the
      // signature holds itself, of another type, is left for the parser to refuse by name).
      if (!signature.is_object()) continue;
      Json& entry = signature["gradient"];
      if (entry.is_null()) entry = Json::object();
      if (entry.is_object() && (!entry.contains(port) || entry[port].is_object()))
        entry[port]["wgsl"] = g.wgsl;
    }
    std::vector<Diagnostic> e =
        doc::ParseCallableUserOp(d.name, signature, forward, gradients, *table);
    errors.insert(errors.end(), e.begin(), e.end());
  }
  if (!errors.empty()) return Status(errors);
  return std::shared_ptr<const ops::OpTable>(std::move(table));
}

}  // namespace scellis::api
