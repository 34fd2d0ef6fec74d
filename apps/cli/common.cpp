#include "common.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <limits>

#include "api/fit_batch.h"
#include "api/stream.h"
#include "base/atomic_file.h"
#include "base/diagnostic_json.h"
#include "base/json_util.h"
#include "typed_flags.h"

namespace scellis::cli {
namespace {

// A dimension's name as documents spell it: a letter or '_', then letters, digits or '_'.
bool IsIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

int Report(const std::vector<Diagnostic>& diags, const std::string& file, bool json) {
  int code = 0;
  for (const Diagnostic& d : diags) {
    std::cerr << d.Format(file) << "\n";
    if (d.severity == Severity::kError) code = std::max(code, ExitCodeFor(d));
  }
  if (json && code)
    std::cout << Json{{"ok", false}, {"diagnostics", DiagnosticsToJson(diags)}}.dump(2) << "\n";
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
    std::string name = b.substr(0, eq);
    std::optional<int64_t> size =
        eq == std::string::npos
            ? std::nullopt
            : ParseInteger(b.substr(eq + 1), 0, std::numeric_limits<int64_t>::max());
    if (!IsIdentifier(name) || !size) {
      flag_errors.push_back(UserError(
          "bad-flag", "",
          "--bind takes NAME=SIZE (a dimension's name and a non-negative integer), got \"" + b +
              "\"",
          "for example --bind N=64"));
      continue;
    }
    auto [it, fresh] = options.lower.bind.emplace(name, *size);
    if (!fresh && it->second != *size) {
      flag_errors.push_back(UserError("bad-flag", "",
                                      "--bind gives " + name + " two sizes, " +
                                          std::to_string(it->second) + " and " +
                                          std::to_string(*size)));
    }
  }
  options.plan.budget_bytes = f.budget_bytes;
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
  // A red training plan states its fix, the largest batch that fits, found by planning again;
  // should that search itself fail to plan, the plan's own findings still stand.
  if (up_to == pipeline::Rung::kExecplan) {
    (void)api::ExplainRedPlan(text.value(), options, compiled.value());
    // A streamed input that does not fit whole plans as chunks (a yellow plan), or is refused.
    auto streaming = api::PlanStreaming(text.value(), options, compiled.value());
    if (!streaming.ok()) {
      exit_code = Report(streaming.errors(), f.file, f.json);
      return std::nullopt;
    }
  }
  PrintNotes(compiled->notes, f.file);
  exit_code = 0;
  return std::move(compiled.value());
}

}  // namespace scellis::cli
