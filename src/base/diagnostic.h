// Diagnostics: how Scellis tells a user what is wrong with what they gave it.
//
// A diagnostic names itself (`shape-mismatch`), points into the document with a JSON pointer
// (`/nodes/12`), says what was seen and what was expected, and gives a `help:` line where a fix
// exists. User problems are diagnostics (exit code 2); our own bugs are internal errors that name
// the pass that failed (exit code 3); a failure of the device after work began is a runtime error
// (exit code 4).
#pragma once

#include <string>
#include <vector>

namespace scellis {

enum class Severity { kError, kWarning, kNote };

enum class ErrorKind {
  kUser,      // bad input: exit 2, nothing executed or written
  kInternal,  // a bug in Scellis: exit 3
  kRuntime,   // the device failed after work began: exit 4
  kState,     // a poisoned session was used again
};

struct Diagnostic {
  Severity severity = Severity::kError;
  ErrorKind kind = ErrorKind::kUser;
  std::string code;     // stable name, e.g. "missing-determinism-tier"
  std::string pointer;  // JSON pointer into the document, "" when it concerns the whole run
  std::string where;    // a short description of the node at `pointer`, e.g. `matmul "proj"`
  std::string message;  // one lowercase sentence with the values seen and expected
  std::string help;     // how to fix it, "" when there is nothing useful to say

  // `file.json:/nodes/12 (matmul "proj"): error[shape-mismatch]: ...` plus a help line.
  std::string Format(const std::string& file = "") const;
};

Diagnostic UserError(std::string code, std::string pointer, std::string message,
                     std::string help = "");
Diagnostic InternalError(std::string pass, std::string message);
Diagnostic RuntimeError(std::string code, std::string message);
Diagnostic Warning(std::string code, std::string pointer, std::string message,
                   std::string help = "");
Diagnostic Note(std::string code, std::string message);

int ExitCodeFor(const Diagnostic& d);

}  // namespace scellis
