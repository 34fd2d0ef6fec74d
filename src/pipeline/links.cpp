#include "pipeline/links.h"

#include <map>
#include <set>

namespace scellis::pipeline {
namespace {

// The document node a pointer lies in: the longest node pointer that is a prefix of it, ending at
// a token boundary ("/nodes/1" holds "/nodes/1/params/scalar", not "/nodes/12").
std::string DocNodeOf(const std::string& origin, const std::map<std::string, std::string>& ids) {
  std::string best, id;
  for (const auto& [pointer, node] : ids) {
    if (origin.rfind(pointer, 0) == 0 &&
        (origin.size() == pointer.size() || origin[pointer.size()] == '/') &&
        pointer.size() > best.size()) {
      best = pointer;
      id = node;
    }
  }
  return id;
}

}  // namespace

Json ProvenanceLinks(const Compiled& c) {
  std::map<std::string, std::string> pointer_to_id;
  for (const doc::Node& n : c.doc.nodes) pointer_to_id[n.pointer] = n.id;

  Json out = {{"webir", Json::array()},
              {"kernels", Json::array()},
              {"steps", Json::array()},
              {"doc", Json::object()}};
  auto doc_entry = [&](const std::string& id) -> Json& {
    Json& e = out["doc"][id];
    if (e.is_null())
      e = {{"webir", Json::array()}, {"kernels", Json::array()}, {"steps", Json::array()}};
    return e;
  };
  std::vector<std::string> doc_of_node;
  if (c.graph) {
    for (const webir::Node& n : c.graph->nodes) {
      std::string id = DocNodeOf(n.origin, pointer_to_id);
      doc_of_node.push_back(id);
      out["webir"].push_back({{"node", n.id},
                              {"name", n.name},
                              {"origin", n.origin},
                              {"doc", id.empty() ? Json(nullptr) : Json(id)}});
      if (!id.empty()) doc_entry(id)["webir"].push_back(n.id);
    }
  }
  std::vector<std::set<std::string>> doc_of_kernel;
  if (c.module) {
    for (size_t k = 0; k < c.module->kernels.size(); ++k) {
      const kernel::Kernel& kernel = c.module->kernels[k];
      std::set<std::string> ids;
      Json docs = Json::array();
      for (int node : kernel.nodes) {
        if (node < 0 || node >= static_cast<int>(doc_of_node.size())) continue;
        const std::string& id = doc_of_node[node];
        if (!id.empty() && ids.insert(id).second) docs.push_back(id);
      }
      for (const std::string& id : ids) doc_entry(id)["kernels"].push_back(k);
      doc_of_kernel.push_back(ids);
      out["kernels"].push_back(
          {{"kernel", k}, {"name", kernel.name}, {"webir", kernel.nodes}, {"doc", docs}});
    }
  }
  if (c.plan) {
    for (size_t s = 0; s < c.plan->steps.size(); ++s) {
      const int k = c.plan->steps[s].kernel;
      const bool known = k >= 0 && k < static_cast<int>(doc_of_kernel.size());
      out["steps"].push_back(
          {{"step", s}, {"kernel", k}, {"name", known ? c.module->kernels[k].name : ""}});
      if (known)
        for (const std::string& id : doc_of_kernel[k]) doc_entry(id)["steps"].push_back(s);
    }
  }
  return out;
}

}  // namespace scellis::pipeline
