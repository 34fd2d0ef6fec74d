#include "base/diagnostic_json.h"

#include <charconv>

namespace scellis {
namespace {

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kNote:
      return "note";
  }
  return "error";
}

const char* KindName(ErrorKind k) {
  switch (k) {
    case ErrorKind::kUser:
      return "user";
    case ErrorKind::kInternal:
      return "internal";
    case ErrorKind::kRuntime:
      return "runtime";
    case ErrorKind::kState:
      return "state";
  }
  return "internal";
}

Json NullIfEmpty(const std::string& s) {
  return s.empty() ? Json(nullptr) : Json(s);
}

// The id of nodes[i] when `pointer` is "/nodes/<i>" or lies below it.
Json NodeIdAt(const std::string& pointer, const Json* document) {
  static const std::string kPrefix = "/nodes/";
  if (!document || !document->is_object() || pointer.rfind(kPrefix, 0) != 0) return nullptr;
  const char* first = pointer.data() + kPrefix.size();
  const char* last = pointer.data() + pointer.size();
  size_t index = 0;
  auto [end, ec] = std::from_chars(first, last, index);
  if (ec != std::errc() || end == first || (end != last && *end != '/')) return nullptr;
  auto nodes = document->find("nodes");
  if (nodes == document->end() || !nodes->is_array() || index >= nodes->size()) return nullptr;
  const Json& node = (*nodes)[index];
  if (!node.is_object()) return nullptr;
  auto id = node.find("id");
  if (id == node.end()) return nullptr;
  if (id->is_string()) return *id;
  if (id->is_number_integer()) return id->dump();  // graph-protocol ids are integers
  return nullptr;
}

}  // namespace

Json DiagnosticToJson(const Diagnostic& d, const Json* document) {
  return {{"code", d.code},
          {"severity", SeverityName(d.severity)},
          {"kind", KindName(d.kind)},
          {"pointer", NullIfEmpty(d.pointer)},
          {"where", NullIfEmpty(d.where)},
          {"message", d.message},
          {"help", NullIfEmpty(d.help)},
          {"node", NodeIdAt(d.pointer, document)}};
}

Json DiagnosticsToJson(const std::vector<Diagnostic>& ds, const Json* document) {
  Json out = Json::array();
  for (const Diagnostic& d : ds) out.push_back(DiagnosticToJson(d, document));
  return out;
}

}  // namespace scellis
