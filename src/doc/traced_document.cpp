#include "doc/traced_document.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace scellis::doc {

namespace {

struct Read {
  PortSlot slot;
  int64_t ref;  // the node read, by its place in the trace
};

// The trace as the roll-up reads it: each node's reads in its op's port order, and an integer per
// node that is equal when the ops and attributes (the reads aside) are.
struct Trace {
  std::vector<std::vector<Read>> reads;
  std::vector<int64_t> codes;
  std::vector<int64_t> outputs;
  int64_t size() const { return static_cast<int64_t>(codes.size()); }
};

Diagnostic BadTrace(const std::string& pointer, const std::string& message) {
  return UserError("bad-trace", pointer, message,
                   "a trace is graph-protocol nodes in order, each reading earlier nodes by their "
                   "place in the list, beside the nodes it returns, the ports of the user ops it "
                   "calls and, to become a document, each node's type and protocol version, the "
                   "inputs that are arguments and the loop declared with loop(), if any");
}

Result<std::vector<std::string>> PortNames(const std::string& op, const Json& user_ports,
                                           const ops::OpTable& table, const std::string& pointer) {
  std::vector<std::string> names;
  if (user_ports.is_object() && user_ports.contains(op)) {
    const Json& list = user_ports.at(op);
    for (size_t i = 0; list.is_array() && i < list.size(); ++i) {
      if (!list[i].is_string()) break;
      names.push_back(list[i].get<std::string>());
    }
    if (!list.is_array() || names.size() != list.size())
      return BadTrace(PointerJoin("/ports", op),
                      "the ports of \"" + op + "\" are not a list of names");
    return names;
  }
  const ops::OpSpec* spec = table.Find(op);
  if (!spec)
    return UserError("unknown-op", PointerJoin(pointer, "op"),
                     "the trace uses \"" + op + "\", which is neither an op of the table nor " +
                         "one of its \"ports\"",
                     "give a user op's input ports in the trace's \"ports\"");
  for (const ops::Port& p : spec->ports) names.push_back(p.name);
  return names;
}

Result<Trace> ParseTrace(const Json& trace, const ops::OpTable& table) {
  if (!trace.is_object() || !trace.contains("nodes") || !trace.at("nodes").is_array())
    return BadTrace("", "the trace is not an object with a \"nodes\" list");
  const Json& nodes = trace.at("nodes");
  const Json user_ports = trace.value("ports", Json::object());
  Trace t;
  std::map<std::string, int64_t> seen;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string at = PointerJoin("/nodes", i);
    const Json& node = nodes[i];
    if (!node.is_object() || !node.contains("op") || !node.at("op").is_string())
      return BadTrace(at, "node " + std::to_string(i) + " is not an object with an \"op\"");
    auto names = PortNames(node.at("op").get<std::string>(), user_ports, table, at);
    if (!names.ok()) return names.status();
    std::vector<Read> reads;
    Json rest = node;
    rest.erase("id");
    auto read = [&](const Json& ref, const std::string& port, int64_t index) -> Status {
      const std::string where =
          index < 0 ? PointerJoin(at, port) : PointerJoin(PointerJoin(at, port), index);
      if (!ref.is_number_integer() || ref.get<int64_t>() < 0 ||
          ref.get<int64_t>() >= static_cast<int64_t>(i))
        return BadTrace(where, "node " + std::to_string(i) + " reads " + ref.dump() +
                                   ", which is not the place of an earlier node");
      reads.push_back({{port, index}, ref.get<int64_t>()});
      return Status::Ok();
    };
    for (const std::string& port : *names) {
      if (!node.contains(port)) continue;
      const Json& v = node.at(port);
      rest.erase(port);
      if (v.is_array()) {
        for (size_t e = 0; e < v.size(); ++e)
          if (Status s = read(v[e], port, static_cast<int64_t>(e)); !s.ok()) return s;
      } else if (Status s = read(v, port, -1); !s.ok()) {
        return s;
      }
    }
    t.reads.push_back(std::move(reads));
    t.codes.push_back(seen.emplace(rest.dump(), static_cast<int64_t>(seen.size())).first->second);
  }
  const Json outputs = trace.value("outputs", Json::array());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].is_number_integer() || outputs[i].get<int64_t>() < 0 ||
        outputs[i].get<int64_t>() >= t.size())
      return BadTrace(PointerJoin("/outputs", i),
                      "output " + std::to_string(i) + " is not the place of a node of the trace");
    t.outputs.push_back(outputs[i].get<int64_t>());
  }
  return t;
}

bool SameSlots(const std::vector<Read>& a, const std::vector<Read>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](const Read& x, const Read& y) { return x.slot == y.slot; });
}

// How many copies of the body [start, start + length) follow each other exactly (up to count),
// with the carry pairs and the first copy's reads that are state.
struct Verified {
  int64_t copies = 0;
  std::vector<std::pair<int64_t, int64_t>> carry;
  std::vector<std::pair<int64_t, PortSlot>> carried;
};

Verified Verify(const Trace& t, int64_t start, int64_t length, int64_t count) {
  enum class Role { kUnknown, kInvariant, kCarried };
  Verified v;
  std::map<int64_t, int64_t> carry;  // before -> after, beside v.carry's order
  std::vector<std::vector<Role>> roles(length);
  for (int64_t j = 0; j < length; ++j) roles[j].assign(t.reads[start + j].size(), Role::kUnknown);
  auto done = [&](int64_t copies) {
    v.copies = copies;
    for (int64_t j = 0; j < length; ++j)
      for (size_t r = 0; r < roles[j].size(); ++r)
        if (roles[j][r] == Role::kCarried)
          v.carried.push_back({start + j, t.reads[start + j][r].slot});
    return v;
  };
  for (int64_t k = 1; k < count; ++k) {
    const int64_t shift = k * length;
    for (int64_t j = start; j < start + length; ++j) {
      const int64_t i = j + shift;
      if (i >= t.size() || !SameSlots(t.reads[i], t.reads[j])) return done(k);
      const std::vector<Read>& first = t.reads[j];
      for (size_t r = 0; r < first.size(); ++r) {
        const int64_t a = first[r].ref, b = t.reads[i][r].ref;
        if (a >= start) {  // a read within the body: the same read, one copy on
          if (b != a + shift) return done(k);
          continue;
        }
        Role& role = roles[j - start][r];
        if (role == Role::kUnknown) {  // the second copy says what the read is
          const auto known = carry.find(a);
          if (b == a) {
            role = Role::kInvariant;
          } else if (start <= b && b < start + length &&
                     (known == carry.end() || known->second == b)) {
            role = Role::kCarried;
            if (known == carry.end()) {
              carry.emplace(a, b);
              v.carry.push_back({a, b});
            }
          } else {
            return done(k);
          }
        } else if (role == Role::kInvariant ? b != a : b != carry.at(a) + shift - length) {
          return done(k);
        }
      }
    }
  }
  return done(count);
}

// Whether an output, or a node after the loop's copies, reads a copy other than the last.
bool Escapes(const Trace& t, int64_t start, int64_t length, int64_t copies) {
  const int64_t end = start + length * copies, last = end - length;
  auto inside = [&](int64_t ref) { return start <= ref && ref < last; };
  if (std::any_of(t.outputs.begin(), t.outputs.end(), inside)) return true;
  for (int64_t i = end; i < t.size(); ++i)
    for (const Read& r : t.reads[i])
      if (inside(r.ref)) return true;
  return false;
}

// The body lengths worth scanning for: every length up to 256, and the distances between the k-th
// next occurrences of one op (k up to 16, the times one op may occur in a body), the 256 most
// frequent — a body's length is one of them, and scanning only these keeps a long trace (768
// Gray-Scott steps are 26k nodes) from costing a scan per length.
std::vector<int64_t> BodyLengths(const std::vector<int64_t>& codes) {
  constexpr int64_t kExhaustive = 256, kPerBody = 16, kMost = 256;
  const int64_t n = static_cast<int64_t>(codes.size()), half = n / 2;
  std::set<int64_t> lengths;
  for (int64_t l = 1; l <= std::min(kExhaustive, half); ++l) lengths.insert(l);
  std::map<int64_t, std::vector<int64_t>> positions;  // by code, each in increasing order
  for (int64_t i = 0; i < n; ++i) positions[codes[i]].push_back(i);
  std::vector<int64_t> order;  // gaps in the order first counted
  std::map<int64_t, int64_t> counts;
  for (const auto& [code, at] : positions) {
    const int64_t occurrences = static_cast<int64_t>(at.size());
    for (int64_t k = 1; k <= std::min(kPerBody, occurrences - 1); ++k) {
      std::map<int64_t, int64_t> times;
      for (int64_t x = k; x < occurrences; ++x) ++times[at[x] - at[x - k]];
      for (const auto& [gap, count] : times) {
        if (gap > half) continue;
        if (counts.emplace(gap, 0).second) order.push_back(gap);
        counts[gap] += count;
      }
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return counts[x] > counts[y]; });
  for (size_t i = 0; i < order.size() && static_cast<int64_t>(i) < kMost; ++i)
    lengths.insert(order[i]);
  return {lengths.begin(), lengths.end()};
}

std::optional<TracedLoop> RollUp(const Trace& t) {
  const int64_t n = t.size();
  // (cover, -length, first node of the run, run): runs of nodes equal to the node `length` on.
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> candidates;
  for (int64_t length : BodyLengths(t.codes)) {
    int64_t r0 = -1;
    for (int64_t i = 0; i <= n - length; ++i) {
      const bool same = i < n - length && t.codes[i] == t.codes[i + length];
      if (same && r0 < 0) r0 = i;
      if (!same && r0 >= 0) {
        const int64_t run = i - r0;
        if (run >= length) candidates.emplace_back((run / length + 1) * length, -length, r0, run);
        r0 = -1;
      }
    }
  }
  std::sort(candidates.rbegin(), candidates.rend());
  std::optional<TracedLoop> best;
  auto size = [&] { return best ? best->length * best->count : 0; };
  for (const auto& [cover, negative_length, r0, run] : candidates) {
    if (best && cover <= size()) break;
    const int64_t length = -negative_length;
    for (int64_t start = r0; start < r0 + length; ++start) {
      const int64_t count = (r0 + run - start) / length + 1;
      if (count < 2 || (best && count * length <= size())) continue;
      Verified v = Verify(t, start, length, count);
      if (v.copies < 2) continue;
      // Fewer copies when something after the loop reads one of its middle copies.
      for (int64_t k = v.copies; k > 1; --k) {
        if (Escapes(t, start, length, k)) continue;
        if (!best || k * length > size()) best = TracedLoop{start, length, k, v.carry, v.carried};
        break;
      }
    }
  }
  return best;
}

}  // namespace

Result<std::optional<TracedLoop>> FindTracedLoop(const Json& trace, const ops::OpTable& table) {
  auto parsed = ParseTrace(trace, table);
  if (!parsed.ok()) return parsed.status();
  return RollUp(*parsed);
}

Json ToJson(const std::optional<TracedLoop>& loop) {
  if (!loop) return nullptr;
  Json carry = Json::array(), carried = Json::array();
  for (const auto& [before, after] : loop->carry) carry.push_back({before, after});
  for (const auto& [node, slot] : loop->carried) {
    Json read = {node, slot.port};
    if (slot.index >= 0) read.push_back(slot.index);
    carried.push_back(std::move(read));
  }
  return {{"start", loop->start},
          {"length", loop->length},
          {"count", loop->count},
          {"carry", std::move(carry)},
          {"carried", std::move(carried)}};
}

namespace {

bool IsIndex(const Json& v, int64_t below) {
  return v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < below;
}

// A loop the trace gives explicitly (one written with loop(), its body traced once), as ToJson
// writes one; "carried" may be left out.
Result<TracedLoop> GivenLoop(const Json& given, const Trace& t) {
  const std::string at = "/loop";
  auto field = [&](const char* key) {
    return given.is_object() ? given.value(key, Json()) : Json();
  };
  const Json start = field("start"), length = field("length"), count = field("count");
  const Json carry = field("carry"), carried = field("carried");
  if (!IsIndex(start, t.size()) || !length.is_number_integer() || length.get<int64_t>() < 1 ||
      start.get<int64_t>() + length.get<int64_t>() > t.size() || !count.is_number_integer() ||
      count.get<int64_t>() < 1 || !carry.is_array() || !(carried.is_null() || carried.is_array()))
    return BadTrace(at, "the loop is not {start, length, count, carry, carried} within the trace");
  TracedLoop l{start.get<int64_t>(), length.get<int64_t>(), count.get<int64_t>(), {}, {}};
  for (const Json& pair : carry) {
    if (!pair.is_array() || pair.size() != 2 || !IsIndex(pair[0], t.size()) ||
        !IsIndex(pair[1], t.size()))
      return BadTrace(PointerJoin(at, "carry"), "a carry pair is not [node, node] of the trace");
    l.carry.push_back({pair[0].get<int64_t>(), pair[1].get<int64_t>()});
  }
  // Without "carried", the body's reads of the nodes it carries are the state it reads.
  if (carried.is_null()) {
    std::set<int64_t> carried_nodes;
    for (const auto& [before, after] : l.carry) carried_nodes.insert(before);
    for (int64_t j = l.start; j < l.start + l.length; ++j)
      for (const Read& r : t.reads[j])
        if (carried_nodes.count(r.ref)) l.carried.push_back({j, r.slot});
    return l;
  }
  for (const Json& read : carried) {
    if (!read.is_array() || read.size() < 2 || read.size() > 3 || !IsIndex(read[0], t.size()) ||
        !read[1].is_string() || (read.size() == 3 && !read[2].is_number_integer()))
      return BadTrace(PointerJoin(at, "carried"),
                      "a carried read is not [node, port] or [node, port, index] of the trace");
    l.carried.push_back(
        {read[0].get<int64_t>(),
         {read[1].get<std::string>(), read.size() == 3 ? read[2].get<int64_t>() : -1}});
  }
  return l;
}

void WriteSlot(Json& node, const PortSlot& slot, int64_t id) {
  if (slot.index < 0)
    node[slot.port] = id;
  else
    node[slot.port][slot.index] = id;
}

}  // namespace

Result<Json> TracedDocument(const Json& trace, const ops::OpTable& table) {
  if (!trace.is_object()) return BadTrace("", "the trace is not an object");
  const Json returns = trace.value("returns", Json());
  if (!returns.is_array() || returns.empty())
    return BadTrace("/returns", "the trace returns nothing: \"returns\" is [[name, node], ...]");
  std::vector<std::pair<std::string, int64_t>> returned;
  Json with_outputs = trace;
  with_outputs["outputs"] = Json::array();
  for (size_t i = 0; i < returns.size(); ++i) {
    const Json& r = returns[i];
    if (!r.is_array() || r.size() != 2 || !r[0].is_string() || !r[1].is_number_integer())
      return BadTrace(PointerJoin("/returns", i), "a returned value is not [name, node]");
    returned.push_back({r[0].get<std::string>(), r[1].get<int64_t>()});
    with_outputs["outputs"].push_back(r[1]);
  }
  auto parsed = ParseTrace(with_outputs, table);
  if (!parsed.ok()) return parsed.status();
  const Trace& t = *parsed;
  const Json& nodes = trace.at("nodes");
  const int64_t n = t.size();
  const Json types = trace.value("types", Json()), needs = trace.value("needs", Json());
  if (!types.is_array() || !needs.is_array() || static_cast<int64_t>(types.size()) != n ||
      static_cast<int64_t>(needs.size()) != n)
    return BadTrace("", "\"types\" and \"needs\" do not hold one entry per node");
  for (int64_t i = 0; i < n; ++i) {
    const Json& type = types[i];
    if (!type.is_array() || type.size() != 2 || !(type[0].is_null() || type[0].is_array()) ||
        !type[1].is_string() || !needs[i].is_number_integer())
      return BadTrace(PointerJoin("/types", i), "node " + std::to_string(i) +
                                                    "'s type is not [shape or null, dtype], or "
                                                    "its need not a protocol version");
  }
  std::set<std::string> arguments;
  for (const Json& name : trace.value("inputs", Json::array()))
    if (name.is_string()) arguments.insert(name.get<std::string>());

  std::optional<TracedLoop> loop;
  int64_t traced_copies = 0;
  if (trace.contains("loop") && !trace.at("loop").is_null()) {
    auto given = GivenLoop(trace.at("loop"), t);
    if (!given.ok()) return given.status();
    loop = *given;
    traced_copies = 1;
  } else {
    loop = RollUp(t);
    if (loop) traced_copies = loop->count;
  }

  // The nodes the document keeps: the trace's, or those before the loop, its first copy and those
  // after its copies, whose reads of the last copy are pointed at the first (`source`).
  std::vector<int64_t> keep;
  int64_t last = 0, end = 0;
  if (loop) {
    end = loop->start + loop->length * traced_copies;
    last = end - loop->length;
  }
  for (int64_t i = 0; i < n; ++i)
    if (!loop || i < loop->start + loop->length || i >= end) keep.push_back(i);
  auto source = [&](int64_t ref) {
    return loop && last <= ref && ref < end ? ref - (last - loop->start) : ref;
  };
  std::set<std::tuple<int64_t, std::string, int64_t>> carried_reads;
  std::map<int64_t, int64_t> carry_of;
  if (loop) {
    for (const auto& [node, slot] : loop->carried)
      carried_reads.insert({node, slot.port, slot.index});
    for (const auto& [before, after] : loop->carry) carry_of.emplace(before, after);
  }
  auto carried = [&](int64_t node, const PortSlot& slot) {
    return carried_reads.count({node, slot.port, slot.index}) > 0;
  };
  // A given loop's carried reads must be reads of the trace, of nodes it carries.
  for (const auto& [node, slot] :
       loop ? loop->carried : std::vector<std::pair<int64_t, PortSlot>>{}) {
    const Read* read = nullptr;
    for (const Read& r : t.reads[node])
      if (r.slot == slot) read = &r;
    if (!read || !carry_of.count(read->ref))
      return BadTrace("/loop/carried", "node " + std::to_string(node) + " has no read \"" +
                                           slot.port + "\" of a node the loop carries");
  }

  // Which nodes are read other than as state, and the name each returned node goes out under.
  std::set<int64_t> plain_reads;
  std::map<int64_t, std::string> out_name;
  for (const auto& [name, id] : returned) {
    plain_reads.insert(source(id));
    out_name.emplace(source(id), name);
  }
  for (int64_t i : keep)
    for (const Read& r : t.reads[i])
      if (!carried(i, r.slot)) plain_reads.insert(source(r.ref));

  // The carried state: a param per node the loop starts from, taking its body node's value. An
  // argument read only as state is its param; one read otherwise too is fed beside a `.state`
  // copy; a starting value computed before the loop is the prologue's.
  struct StateParam {
    int64_t before;
    std::string param, out;
  };
  std::vector<StateParam> params;
  std::vector<std::pair<std::string, int64_t>> extra_outputs, starts;
  Json state = Json::object(), fed = Json::object();
  for (const auto& [before, after] :
       loop ? loop->carry : std::vector<std::pair<int64_t, int64_t>>{}) {
    const Json& node = nodes[before];
    std::string arg, param;
    if (node.value("op", "") == "input" && arguments.count(node.value("name", ""))) {
      arg = node.value("name", "");
      param = plain_reads.count(before) ? arg + ".state" : arg;
    } else {
      arg = param = "start." + std::to_string(starts.size());
      starts.push_back({param, before});
    }
    auto [named, fresh] = out_name.emplace(after, param + ".next");
    if (fresh) extra_outputs.push_back({named->second, after});
    params.push_back({before, param, named->second});
    state[param] = arg;
  }

  Json doc_nodes = Json::array();
  std::map<int64_t, int64_t> new_id, state_id;
  for (const StateParam& p : params) {
    const Json& type = types[p.before];
    if (type[0].is_null())
      return UserError(
          "unknown-shape", PointerJoin("/nodes", static_cast<size_t>(p.before)),
          "the loop starts from node #" + std::to_string(p.before) + ", whose shape is not known",
          "give the loop's starting value a known shape");
    state_id[p.before] = static_cast<int64_t>(doc_nodes.size());
    doc_nodes.push_back({{"id", doc_nodes.size()},
                         {"op", "param"},
                         {"name", p.param},
                         {"shape", type[0]},
                         {"dtype", type[1]},
                         {"init", {{"kind", "zeros"}}},
                         {"carry", p.out}});
  }
  // The kept nodes the results need, reads of state included.
  std::set<int64_t> kept(keep.begin(), keep.end()), reachable;
  std::vector<int64_t> stack;
  for (const auto& [name, id] : returned) stack.push_back(source(id));
  for (const auto& [name, id] : extra_outputs) stack.push_back(id);
  while (!stack.empty()) {
    const int64_t i = stack.back();
    stack.pop_back();
    if (!reachable.insert(i).second) continue;
    for (const Read& r : t.reads[i]) {
      if (carried(i, r.slot))
        stack.push_back(carry_of.at(r.ref));
      else if (kept.count(source(r.ref)))
        stack.push_back(source(r.ref));
    }
  }
  int64_t version = loop ? 5 : 1;
  for (int64_t i : keep) {
    if (!reachable.count(i)) continue;
    version = std::max(version, needs[i].get<int64_t>());
    Json node = nodes[i];
    const bool is_input = node.value("op", "") == "input";
    if (is_input && state.contains(node.value("name", ""))) continue;  // its carried param
    new_id[i] = static_cast<int64_t>(doc_nodes.size());
    node["id"] = doc_nodes.size();
    for (const Read& r : t.reads[i]) {
      const auto id = carried(i, r.slot) ? state_id.find(r.ref) : new_id.find(source(r.ref));
      if (id == (carried(i, r.slot) ? state_id.end() : new_id.end()))
        return InternalError("traced-document", "node " + std::to_string(i) +
                                                    " reads a node the document does not hold");
      WriteSlot(node, r.slot, id->second);
    }
    if (is_input) fed[node.value("name", "")] = node.value("name", "");
    doc_nodes.push_back(std::move(node));
  }
  Json doc = {{"version", version}, {"nodes", std::move(doc_nodes)}, {"outputs", Json::array()}};
  const std::string name =
      trace.value("name", Json()).is_string() ? trace.at("name").get<std::string>() : "";
  if (!name.empty()) doc["name"] = name;
  if (loop) doc["repeat"] = loop->count;
  for (const auto& [out, id] : returned) {
    const auto kept_id = new_id.find(source(id));
    if (kept_id == new_id.end())
      return InternalError("traced-document",
                           "the result \"" + out + "\" is no node of the document");
    doc["outputs"].push_back({{"name", out}, {"id", kept_id->second}});
  }
  for (const auto& [out, id] : extra_outputs)
    doc["outputs"].push_back({{"name", out}, {"id", new_id.at(id)}});

  // The loop's computed starting values: the nodes they need, under their places in the trace.
  Json prologue = nullptr;
  if (!starts.empty()) {
    std::set<int64_t> needed;
    for (const auto& [param, id] : starts) stack.push_back(id);
    while (!stack.empty()) {
      const int64_t i = stack.back();
      stack.pop_back();
      if (!needed.insert(i).second) continue;
      for (const Read& r : t.reads[i]) stack.push_back(r.ref);
    }
    Json p = {{"version", 1}, {"nodes", Json::array()}, {"outputs", Json::array()}};
    Json inputs = Json::array();
    for (int64_t i : needed) {
      p["version"] = std::max(p["version"].get<int64_t>(), needs[i].get<int64_t>());
      p["nodes"].push_back(nodes[i]);
      if (nodes[i].value("op", "") == "input") inputs.push_back(nodes[i].value("name", ""));
    }
    if (!name.empty()) p["name"] = name;
    Json outputs = Json::array();
    for (const auto& [param, id] : starts) {
      p["outputs"].push_back({{"name", param}, {"id", id}});
      outputs.push_back(param);
    }
    prologue = {
        {"doc", std::move(p)}, {"inputs", std::move(inputs)}, {"outputs", std::move(outputs)}};
  }
  return Json{{"doc", std::move(doc)},
              {"repeat", loop ? loop->count : 1},
              {"fed", std::move(fed)},
              {"state", std::move(state)},
              {"prologue", std::move(prologue)}};
}

}  // namespace scellis::doc
