// The fields every rung carries about the module as a whole. Program and Graph are rung headers
// (each lowering copies the header in one assignment); Module and Plan hold no copy and read the
// header of the graph they refer to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/determinism.h"
#include "base/diagnostic.h"

namespace scellis {

struct RungHeader {
  std::string name;
  int version = 1;  // graph protocol version of the document
  policy::Tier tier = policy::Tier::kProd;
  std::string tier_source;  // what declared the tier ("the document", "--tier", ...)
  policy::ToleranceClass tolerance = policy::ToleranceClass::kDefault;
  bool bit_exact_across_devices = false;  // the same bits on every backend, not just run to run
  std::string content_id;  // of the document
  std::optional<int64_t> budget_bytes;
  // Iterations of the whole graph per run step (protocol version 5's `repeat`): its carried inputs
  // take their outputs between iterations, and only the last iteration's outputs come back.
  int64_t repeat = 1;
  std::vector<Diagnostic> notes;  // warnings raised while lowering (e.g. a tier override)
};

}  // namespace scellis
