// Conformance cases of a user op (ops/user_op.h), generated from its signature alone: every input
// the shape of the one the output takes, at edge sizes of its declared rank (ranks 1 and 2 when it
// declares none) — ones, primes, sizes that are no multiple of the workgroup, a square of 64 — and
// each case a document that carries the op's definition, so it is compiled as a user's would be.
#include "conform/cases.h"
#include "doc/user_ops.h"
#include "ops/user_op.h"

namespace scellis::conform {
namespace {

using Shape = std::vector<int64_t>;

std::vector<Shape> ShapesOfRank(int rank) {
  switch (rank) {
    case 0:
      return {{}};
    case 1:
      return {{1}, {7}, {64}, {1000}, {4099}};
    case 2:
      return {{1, 1}, {1, 9}, {7, 13}, {64, 64}, {33, 97}, {130, 65}};
    case 3:
      return {{1, 1, 1}, {2, 3, 5}, {4, 17, 9}, {8, 8, 33}};
    default: {
      Shape ones(static_cast<size_t>(rank), 1), ragged(static_cast<size_t>(rank), 2);
      ragged.back() = 7;
      ragged.front() = 3;
      return {ones, ragged};
    }
  }
}

std::string ShapeName(const Shape& s) {
  std::string n = "r" + std::to_string(s.size());
  for (size_t i = 0; i < s.size(); ++i) n += (i ? "x" : "_") + std::to_string(s[i]);
  return n;
}

}  // namespace

std::vector<Case> UserOpCases(const ops::OpSpec& spec) {
  std::vector<Case> out;
  if (!spec.user) return out;
  const ops::UserKernel& user = *spec.user;
  std::vector<int> ranks = {1, 2};
  for (const ops::UserPortRank& r : user.ranks)
    if (r.port == user.shape_of) ranks = {r.rank};
  std::shared_ptr<ops::OpTable> callable_table;
  if (user.callable) {
    callable_table = std::make_shared<ops::OpTable>(*ops::BuiltinOps());
    callable_table->Add(spec);
  }
  for (int rank : ranks) {
    for (const Shape& shape : ShapesOfRank(rank)) {
      Case c;
      c.group = spec.name;
      c.name = ShapeName(shape);
      c.ops = {spec.name};
      c.tolerance = spec.tolerance;
      Json nodes = Json::array();
      Json op = {{"id", static_cast<int>(spec.ports.size())}, {"op", spec.name}};
      for (size_t i = 0; i < spec.ports.size(); ++i) {
        const std::string& port = spec.ports[i].name;
        c.inputs.push_back({port, shape, Domain::kSigned});
        nodes.push_back({{"id", i}, {"op", "input"}, {"name", port}, {"shape", shape}});
        op[port] = i;
      }
      nodes.push_back(op);
      // A gradient's op is defined by the op it differentiates.
      const std::string& defined = user.gradient_of.empty() ? spec.name : user.gradient_of;
      c.doc = {{"version", doc::kUserOpsVersion},
               {"name", spec.name + "/" + c.name},
               {"nodes", nodes},
               {"outputs", Json::array({{{"name", "out"}, {"id", spec.ports.size()}}})}};
      // A callable reference cannot travel in a document: the case is read against a table
      // that holds the op.
      if (user.callable)
        c.table = callable_table;
      else
        c.doc["ops"] = {{defined, user.definition}};
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<Case> UserOpGroupCases(const ops::OpSpec& spec, const ops::OpTable& table) {
  if (!spec.user || !spec.user->gradient_of.empty()) return {};
  std::vector<Case> out = UserOpCases(spec);
  for (const ops::UserKernel::Gradient& g : spec.user->gradients) {
    const ops::OpSpec* d = table.Find(g.op);
    if (!d) continue;
    for (Case c : UserOpCases(*d)) {
      c.group = spec.name;
      c.name = "grad_" + g.port + "/" + c.name;
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace scellis::conform
