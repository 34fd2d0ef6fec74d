// What a user op's WGSL that does not compile becomes: a user diagnostic, `user-wgsl-invalid`,
// pointing at the op's "wgsl" in the document and counting lines as the user wrote them (the
// engine's prologue before them is not the user's to count). Any backend that compiles WGSL
// reports through this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/diagnostic.h"
#include "ops/op_table.h"
#include "runtime/device_program.h"

namespace scellis::runtime {

// One error of a WGSL compiler: its 1-based line and column in the compiled source (0: none).
struct WgslMessage {
  uint64_t line = 0, column = 0;
  std::string text;
};

// `errors` are the compiler's for `pipeline`, the kernel of user op `spec`: each is told at its
// line of the user's WGSL with that line quoted; one outside it (in the engine's call of the
// user's function) says what signature the engine calls.
Diagnostic UserWgslInvalid(const ops::OpSpec& spec, const ProgramPipeline& pipeline,
                           const std::vector<WgslMessage>& errors);

}  // namespace scellis::runtime
