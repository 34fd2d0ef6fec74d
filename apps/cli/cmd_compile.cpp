// `scellis lower`, `scellis plan`, `scellis validate`: descend the ladder without running.
#include <filesystem>
#include <iostream>

#include "base/atomic_file.h"
#include "common.h"

namespace scellis::cli {

int LowerCommand(const CompileFlags& f, const std::string& to, const std::string& dump_dir) {
  using pipeline::Rung;
  std::optional<Rung> rung =
      to.empty() ? std::optional<Rung>(Rung::kExecplan) : pipeline::ParseRung(to);
  if (!rung) {
    return Report(
        {UserError("bad-flag", "",
                   "--to takes doc, block, webir, kernel or execplan, got \"" + to + "\"")},
        "", f.json);
  }
  int modes = !to.empty() + !dump_dir.empty() + !f.print_after.empty();
  if (modes != 1) {
    return Report(
        {UserError("bad-flag", "",
                   "lower needs one of --to=RUNG, --print-after=PASS or --dump-rungs=DIR")},
        "", f.json);
  }
  if (!f.print_after.empty()) {
    auto pass_rung = pipeline::RungOfPass(f.print_after);
    if (!pass_rung.ok()) return Report(pass_rung.errors(), "", f.json);
    rung = pass_rung.value();
  }
  int code = 0;
  auto c = CompileFile(f, dump_dir.empty() ? *rung : Rung::kExecplan, {}, code);
  if (!c) return code;
  if (!dump_dir.empty()) {
    // Written only after every rung compiled: a failing document writes nothing.
    std::error_code ec;
    std::filesystem::create_directories(dump_dir, ec);
    const auto files = pipeline::RungDumps(*c);
    for (const auto& [name, text] : files) {
      Status s = WriteFileAtomic((std::filesystem::path(dump_dir) / name).string(), text);
      if (!s.ok()) return Report(s.errors(), "", f.json);
    }
    std::cout << "wrote " << files.size() << " rung dumps to " << dump_dir << "\n";
    return 0;
  }
  if (f.json)
    std::cout << pipeline::RungJson(*c, *rung).dump(2) << "\n";
  else
    std::cout << pipeline::PrintRung(*c, *rung);
  return 0;
}

// The plan is printed whatever its verdict; a red one is also an error (exit 2), its findings on
// stderr, so scripts can gate on `scellis plan`.
int PlanCommand(const CompileFlags& f) {
  int code = 0;
  auto c = CompileFile(f, pipeline::Rung::kExecplan, {}, code);
  if (!c) return code;
  const execplan::Plan& p = *c->plan;
  if (f.json)
    std::cout << execplan::ToJson(p).dump(2) << "\n";
  else
    std::cout << execplan::Print(p);
  if (p.verdict != execplan::Verdict::kRed) return 0;
  for (const Diagnostic& d : p.findings) std::cerr << d.Format(f.file) << "\n";
  return 2;
}

int ValidateCommand(const CompileFlags& f) {
  int code = 0;
  auto c = CompileFile(f, pipeline::Rung::kExecplan, {}, code);
  if (!c) return code;
  const execplan::Plan& p = *c->plan;
  if (p.verdict == execplan::Verdict::kRed) return Report(p.findings, f.file, f.json);
  if (f.json) {
    std::cout << Json{{"ok", true},
                      {"content_id", c->doc.content_id},
                      {"verdict", execplan::VerdictName(p.verdict)}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << f.file << ": valid (" << c->doc.content_id << "), plan verdict "
              << execplan::VerdictName(p.verdict) << "\n";
  }
  return 0;
}

}  // namespace scellis::cli
