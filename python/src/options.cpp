// What a caller's choices become for the engine: the compile options of a determinism tier and the
// backend selection, shared by one-shot runs, sessions and conformance; and an optional text back.
#include <nanobind/nanobind.h>

#include <optional>
#include <string>

#include "module_support.h"
#include "pipeline/compile.h"

namespace nb = nanobind;

namespace scellis::python {

pipeline::CompileOptions CompileOptionsFor(const std::optional<std::string>& tier) {
  pipeline::CompileOptions o;
  if (tier) {
    std::optional<policy::Tier> parsed = policy::ParseTier(*tier);
    if (!parsed) {
      throw EngineError(
          {UserError("bad-tier", "",
                     "the determinism tier is \"" + *tier + "\", expected debug, prod or fast")});
    }
    o.lower.tier = parsed;
  }
  return o;
}

runtime::SelectOptions SelectFor(const std::string& backend, bool allow_software_adapter,
                                 int cpu_threads) {
  return {.requested = backend,
          .allow_software_adapter = allow_software_adapter,
          .cpu_threads = cpu_threads};
}

nb::object Optional(const std::optional<std::string>& s) {
  return s ? nb::object(nb::str(s->c_str())) : nb::none();
}

}  // namespace scellis::python
