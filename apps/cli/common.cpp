#include "common.h"

#include <cstdio>
#include <iostream>

#include "base/atomic_file.h"
#include "base/json_util.h"

namespace scellis::cli {

void AddCompileFlags(CLI::App* cmd, CompileFlags& f) {
  cmd->add_option("file", f.file, "workflow document or graph (JSON)")->required();
  cmd->add_option("--tier", f.tier,
                  "determinism tier: debug | prod | fast (composes strictest-wins)")
      ->check(CLI::IsMember({"debug", "prod", "fast"}));
  cmd->add_flag("--tier-override", f.tier_override,
                "let --tier replace the declared tiers (announced when it drops a stricter one)");
  cmd->add_option("--bind", f.bind, "bind a symbolic dimension, e.g. --bind N=64");
  cmd->add_option("--budget", f.budget, "memory budget in bytes (suffixes K, M, G)");
  cmd->add_flag("--json", f.json, "machine-readable output");
}

void AddPassFlags(CLI::App* cmd, CompileFlags& f) {
  cmd->add_option("--disable-pass", f.disabled_passes,
                  "leave out an optional pass (fuse-elementwise, fold-transposes); repeatable");
}

namespace {

std::optional<int64_t> ParseBytes(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string suffix = end;
  double mult = 1;
  if (suffix == "K" || suffix == "KiB")
    mult = 1024;
  else if (suffix == "M" || suffix == "MiB")
    mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty())
    return std::nullopt;
  if (!(v > 0) || v * mult > 9e18) return std::nullopt;
  return static_cast<int64_t>(v * mult);
}

}  // namespace

int Report(const std::vector<Diagnostic>& diags, const std::string& file, bool json) {
  int code = 0;
  Json out = Json::array();
  for (const Diagnostic& d : diags) {
    std::cerr << d.Format(file) << "\n";
    if (d.severity == Severity::kError) code = std::max(code, ExitCodeFor(d));
    out.push_back({{"code", d.code},
                   {"pointer", d.pointer},
                   {"where", d.where},
                   {"message", d.message},
                   {"help", d.help},
                   {"severity", d.severity == Severity::kError ? "error" : "warning"}});
  }
  if (json && code) std::cout << Json{{"ok", false}, {"diagnostics", out}}.dump(2) << "\n";
  return code;
}

void PrintNotes(const std::vector<Diagnostic>& notes, const std::string& file) {
  for (const Diagnostic& d : notes) std::cerr << d.Format(file) << "\n";
}

Result<pipeline::CompileOptions> CompileOptionsFrom(const CompileFlags& f) {
  std::vector<Diagnostic> flag_errors;
  pipeline::CompileOptions options;
  if (!f.tier.empty()) options.lower.tier = policy::ParseTier(f.tier);
  options.lower.tier_override = f.tier_override;
  options.disabled_passes.insert(f.disabled_passes.begin(), f.disabled_passes.end());
  options.print_after = f.print_after;
  if (f.tier_override && f.tier.empty())
    flag_errors.push_back(UserError("bad-flag", "", "--tier-override needs --tier"));
  for (const std::string& b : f.bind) {
    size_t eq = b.find('=');
    char* end = nullptr;
    long long v = eq == std::string::npos ? -1 : std::strtoll(b.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || v < 0 || *end) {
      flag_errors.push_back(UserError("bad-flag", "", "--bind takes NAME=SIZE, got \"" + b + "\""));
      continue;
    }
    options.lower.bind[b.substr(0, eq)] = v;
  }
  if (!f.budget.empty()) {
    options.plan.budget_bytes = ParseBytes(f.budget);
    if (!options.plan.budget_bytes)
      flag_errors.push_back(UserError(
          "bad-flag", "", "--budget takes a byte count such as 2G, got \"" + f.budget + "\""));
  }
  if (!flag_errors.empty()) return Status(flag_errors);
  return options;
}

std::optional<pipeline::Compiled> CompileFile(const CompileFlags& f, pipeline::Rung up_to,
                                              const execplan::DeviceLimits& limits,
                                              int& exit_code) {
  auto parsed = CompileOptionsFrom(f);
  if (!parsed.ok()) {
    exit_code = Report(parsed.errors(), "", f.json);
    return std::nullopt;
  }
  pipeline::CompileOptions options = parsed.value();
  options.up_to = up_to;
  options.plan.limits = limits;
  auto text = ReadFile(f.file, size_t{256} << 20);
  if (!text.ok()) {
    exit_code = Report(text.errors(), f.file, f.json);
    return std::nullopt;
  }
  auto compiled = pipeline::Compile(text.value(), options);
  if (!compiled.ok()) {
    exit_code = Report(compiled.errors(), f.file, f.json);
    return std::nullopt;
  }
  PrintNotes(compiled->notes, f.file);
  exit_code = 0;
  return std::move(compiled.value());
}

}  // namespace scellis::cli
