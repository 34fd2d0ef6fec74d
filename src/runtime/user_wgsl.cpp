#include "runtime/user_wgsl.h"

#include <sstream>

#include "ops/user_op.h"

namespace scellis::runtime {
namespace {

std::string LineOf(const std::string& text, uint64_t line) {
  std::istringstream in(text);
  std::string s;
  for (uint64_t i = 0; i < line && std::getline(in, s); ++i) {
  }
  return s;
}

}  // namespace

Diagnostic UserWgslInvalid(const ops::OpSpec& spec, const ProgramPipeline& pipeline,
                           const std::vector<WgslMessage>& errors) {
  const std::string& wgsl = spec.user->wgsl;
  std::string message = "the WGSL of \"" + spec.name + "\" does not compile:";
  bool outside = false;
  for (const WgslMessage& e : errors) {
    const int64_t user_line = static_cast<int64_t>(e.line) - pipeline.user_first_line + 1;
    if (e.line > 0 && user_line >= 1 && user_line <= pipeline.user_lines) {
      message += "\n  line " + std::to_string(user_line) + ":" + std::to_string(e.column) + ": " +
                 e.text + "\n    | " + LineOf(wgsl, static_cast<uint64_t>(user_line));
      if (e.column > 0) message += "\n    | " + std::string(e.column - 1, ' ') + "^";
    } else {
      outside = true;
      message += "\n  in the engine's code around it: " + e.text;
    }
  }
  Diagnostic d = UserError(
      "user-wgsl-invalid", spec.user->pointer + "/wgsl", message,
      outside ? "the engine calls fn " + spec.name +
                    "(index: u32) -> f32 and gives each input as <input>_at(index: u32) -> f32"
              : "");
  d.where = "user op \"" + spec.name + "\"";
  return d;
}

}  // namespace scellis::runtime
