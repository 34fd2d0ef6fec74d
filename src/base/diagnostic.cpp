#include "base/diagnostic.h"

namespace scellis {

std::string Diagnostic::Format(const std::string& file) const {
  std::string out;
  if (!file.empty() || !pointer.empty()) {
    out += file;
    if (!pointer.empty()) out += (file.empty() ? "" : ":") + pointer;
    if (!where.empty()) out += " (" + where + ")";
    out += ": ";
  }
  switch (severity) {
    case Severity::kError:
      out += kind == ErrorKind::kInternal ? "internal error" : "error";
      break;
    case Severity::kWarning:
      out += "warning";
      break;
    case Severity::kNote:
      out += "note";
      break;
  }
  out += "[" + code + "]: " + message;
  if (!help.empty()) out += "\n  help: " + help;
  return out;
}

Diagnostic UserError(std::string code, std::string pointer, std::string message, std::string help) {
  Diagnostic d;
  d.code = std::move(code);
  d.pointer = std::move(pointer);
  d.message = std::move(message);
  d.help = std::move(help);
  return d;
}

Diagnostic InternalError(std::string pass, std::string message) {
  Diagnostic d;
  d.kind = ErrorKind::kInternal;
  d.code = "internal";
  d.message = "in pass " + pass + ": " + message;
  return d;
}

Diagnostic RuntimeError(std::string code, std::string message) {
  Diagnostic d;
  d.kind = ErrorKind::kRuntime;
  d.code = std::move(code);
  d.message = std::move(message);
  return d;
}

Diagnostic Warning(std::string code, std::string pointer, std::string message, std::string help) {
  Diagnostic d =
      UserError(std::move(code), std::move(pointer), std::move(message), std::move(help));
  d.severity = Severity::kWarning;
  return d;
}

Diagnostic Note(std::string code, std::string message) {
  Diagnostic d;
  d.severity = Severity::kNote;
  d.code = std::move(code);
  d.message = std::move(message);
  return d;
}

int ExitCodeFor(const Diagnostic& d) {
  switch (d.kind) {
    case ErrorKind::kUser:
      return 2;
    case ErrorKind::kInternal:
      return 3;
    case ErrorKind::kRuntime:
      return 4;
    case ErrorKind::kState:
      return 4;
  }
  return 3;
}

}  // namespace scellis
