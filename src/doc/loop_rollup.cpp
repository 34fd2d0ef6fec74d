#include "doc/loop_rollup.h"

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
                   "a trace is {\"nodes\": [...], \"outputs\": [node, ...], \"ports\": {op: "
                   "[port, ...]}}, each node reading earlier nodes by their place in the list");
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

}  // namespace

Result<std::optional<TracedLoop>> FindTracedLoop(const Json& trace, const ops::OpTable& table) {
  auto parsed = ParseTrace(trace, table);
  if (!parsed.ok()) return parsed.status();
  const Trace& t = *parsed;
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

}  // namespace scellis::doc
