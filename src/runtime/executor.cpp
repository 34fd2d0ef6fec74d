#include "runtime/executor.h"

#include <cmath>

namespace scellis::runtime {

std::string FeedName(const webir::Node& n) {
  return n.label.empty() ? n.name : n.label;
}

Result<std::vector<float>> SourceData(const webir::Node& n, const Feeds& feeds) {
  int64_t count = n.type.elements();
  if (n.role == webir::Role::kConst)
    return std::vector<float>(static_cast<size_t>(count), n.attrs["value"].get<float>());
  // A feed wins over an initializer: evaluation feeds trained weights into the params by name.
  if (auto it = feeds.find(FeedName(n)); it != feeds.end()) {
    if (!it->second.type.SameShape(n.type)) {
      return UserError("feed-shape-mismatch", n.origin,
                       "the feed \"" + FeedName(n) + "\" has shape " +
                           it->second.type.ShapeStringWithSizes() + ", the input expects " +
                           n.type.ShapeStringWithSizes());
    }
    return it->second.data;
  }
  if (n.role == webir::Role::kParam && n.init) return n.init->Generate(count);
  if (n.data) return *n.data;
  return UserError("missing-input-data", n.origin,
                   "the input \"" + FeedName(n) + "\" has no data and no feed",
                   "give it \"data\" in the document, or feed it when running a session");
}

Json ResultToJson(const RunResult& r) {
  Json j;
  j["backend"] = r.backend;
  j["executor"] = r.executor;
  j["fallback_reason"] = r.fallback_reason ? Json(*r.fallback_reason) : Json();
  j["attempts"] = r.attempts;
  j["outputs"] = Json::object();
  for (const auto& [name, t] : r.outputs) {
    Json data = Json::array();
    for (float v : t.data) {
      // Integral values print as integers ([0, 60, 120]), like the protocol's own examples.
      if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 16777216.0f)
        data.push_back(static_cast<int64_t>(v));
      else if (std::isfinite(v))
        data.push_back(v);
      else
        data.push_back(std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity"));
    }
    j["outputs"][name] = {
        {"shape", t.type.sizes()}, {"dtype", DTypeName(t.type.dtype)}, {"data", data}};
  }
  j["stats"] = r.stats;
  return j;
}

}  // namespace scellis::runtime
