#include "api/user_ops.h"

#include "doc/user_ops.h"

namespace scellis::api {

Result<std::shared_ptr<const ops::OpTable>> DefineOps(
    const std::vector<UserOpDefinition>& definitions, const ops::OpTable& base) {
  auto table = std::make_shared<ops::OpTable>(base);
  std::vector<Diagnostic> errors;
  for (const UserOpDefinition& d : definitions) {
    std::vector<Diagnostic> e =
        doc::ParseCallableUserOp(d.name, d.signature, d.reference, d.reference_version, *table);
    errors.insert(errors.end(), e.begin(), e.end());
  }
  if (!errors.empty()) return Status(errors);
  return std::shared_ptr<const ops::OpTable>(std::move(table));
}

}  // namespace scellis::api
