#include "execplan/plan.h"

#include <cstdio>

#include "base/enum_table.h"

namespace scellis::execplan {

namespace {
constexpr EnumTable<MemClass, kMemClasses> kMemClassNames({{{MemClass::kParameters, "parameters"},
                                                            {MemClass::kInputs, "inputs"},
                                                            {MemClass::kActivations, "activations"},
                                                            {MemClass::kGradients, "gradients"},
                                                            {MemClass::kOptimizerState,
                                                             "optimizer_state"},
                                                            {MemClass::kWorking, "working"}}});
constexpr EnumTable<Verdict, 3> kVerdicts(
    {{{Verdict::kGreen, "green"}, {Verdict::kYellow, "yellow"}, {Verdict::kRed, "red"}}});
}  // namespace

const char* MemClassName(MemClass c) {
  return kMemClassNames.Name(c);
}
const char* VerdictName(Verdict v) {
  return kVerdicts.Name(v);
}

std::string FormatBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

namespace {
std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

std::string Print(const Plan& p) {
  const webir::Graph& g = p.graph();
  std::string out = "plan";
  if (!g.name.empty()) out += " \"" + g.name + "\"";
  out += "\n";
  auto row = [&](const std::string& key, const std::string& value) {
    out += "  " + key + std::string(17 - key.size(), ' ') + ": " + value + "\n";
  };
  row("determinism_tier", std::string(policy::TierName(g.tier)) + "  (declared by " +
                              g.tier_source + ", never defaulted)");
  row("tolerance_class", std::string(policy::ToleranceName(g.tolerance)) + "  atol " +
                             Num(p.thresholds.atol) + ", rtol " + Num(p.thresholds.rtol) +
                             " under " + policy::TierName(g.tier));
  row("dispatches", std::to_string(p.steps.size()) + " kernels, one submission");
  row("buffers", std::to_string(p.buffers.size()) + " (" + FormatBytes(p.memory.allocated) +
                     " allocated, peak live " + FormatBytes(p.memory.peak_live) + ")");
  std::string classes;
  for (int c = 0; c < kMemClasses; ++c) {
    out += "";
    classes += std::string(c ? "\n                     " : "") +
               MemClassName(static_cast<MemClass>(c)) +
               std::string(16 - std::string(MemClassName(static_cast<MemClass>(c))).size(), ' ') +
               FormatBytes(p.memory.by_class[c]);
  }
  row("peak_memory", classes);
  row("budget", FormatBytes(p.memory.budget) + "  (" + p.memory.budget_source + ")");
  std::string verdict = VerdictName(p.verdict);
  if (p.verdict == Verdict::kGreen) verdict += "  fits the declared budgets";
  row("verdict", verdict);
  for (const Diagnostic& d : p.findings) out += "    " + d.Format() + "\n";
  out += "  steps:\n";
  for (const Step& s : p.steps) {
    const kernel::Kernel& k = p.module().kernels[s.kernel];
    out += "    " + k.name + "  reads";
    for (int b : s.reads) out += " b" + std::to_string(b);
    if (s.reads.empty()) out += " -";
    out += " -> b" + std::to_string(s.write) + "\n";
  }
  out += "  buffers:\n";
  for (const Buffer& b : p.buffers) {
    out += "    b" + std::to_string(b.id) + " " + FormatBytes(b.bytes) + " " + MemClassName(b.cls) +
           (b.pinned ? " pinned" : "") + ":";
    for (int v : b.values) out += " %" + g.at(v).name;
    out += "\n";
  }
  return out;
}

Json ToJson(const Plan& p) {
  Json j;
  const webir::Graph& g = p.graph();
  j["determinism_tier"] = policy::TierName(g.tier);
  j["tier_source"] = g.tier_source;
  j["tolerance_class"] = policy::ToleranceName(g.tolerance);
  j["thresholds"] = {{"atol", p.thresholds.atol}, {"rtol", p.thresholds.rtol}};
  for (int c = 0; c < kMemClasses; ++c)
    j["memory"]["by_class"][MemClassName(static_cast<MemClass>(c))] = p.memory.by_class[c];
  j["memory"]["allocated"] = p.memory.allocated;
  j["memory"]["peak_live"] = p.memory.peak_live;
  j["memory"]["budget"] = p.memory.budget;
  j["memory"]["budget_source"] = p.memory.budget_source;
  j["memory"]["host_staging"] = p.memory.host_staging;
  if (p.limits.device_memory_bytes > 0) j["memory"]["device_memory"] = p.limits.device_memory_bytes;
  if (p.limits.host_memory_bytes > 0) j["memory"]["host_memory"] = p.limits.host_memory_bytes;
  j["verdict"] = VerdictName(p.verdict);
  j["findings"] = Json::array();
  for (const Diagnostic& d : p.findings)
    j["findings"].push_back({{"code", d.code}, {"message", d.message}, {"help", d.help}});
  for (const Step& s : p.steps)
    j["steps"].push_back(
        {{"kernel", p.module().kernels[s.kernel].name}, {"reads", s.reads}, {"write", s.write}});
  for (const Buffer& b : p.buffers)
    j["buffers"].push_back({{"id", b.id},
                            {"bytes", b.bytes},
                            {"class", MemClassName(b.cls)},
                            {"pinned", b.pinned},
                            {"values", b.values}});
  return j;
}

Status Verify(const Plan& p) {
  // No step may write a buffer that holds a value some later step still needs.
  const webir::Graph& g = p.graph();
  std::vector<int> holder(p.buffers.size(), -1);
  for (const webir::Node& n : g.nodes)
    if (p.buffer_of[n.id] >= 0 && (n.role == webir::Role::kInput || n.role == webir::Role::kParam))
      holder[p.buffer_of[n.id]] = n.id;
  for (const Step& s : p.steps) {
    const kernel::Kernel& k = p.module().kernels[s.kernel];
    for (size_t i = 0; i < k.inputs.size(); ++i)
      if (holder[s.reads[i]] != k.inputs[i])
        return InternalError("execplan.Verify", k.name + " reads a buffer overwritten earlier");
    if (s.write < 0 || s.write >= static_cast<int>(p.buffers.size()))
      return InternalError("execplan.Verify", k.name + " writes no buffer");
    holder[s.write] = k.output;
  }
  for (const webir::Output& o : g.outputs)
    if (holder[p.buffer_of[o.node]] != o.node)
      return InternalError("execplan.Verify", "output " + o.name + " is overwritten");
  return Status::Ok();
}

}  // namespace scellis::execplan
