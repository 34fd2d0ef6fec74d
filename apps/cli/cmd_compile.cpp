// `scellis lower`, `scellis plan`, `scellis validate`: descend the ladder without running.
#include <filesystem>
#include <iostream>

#include "common.h"
#include "base/atomic_file.h"

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
  if (to.empty() && dump_dir.empty()) {
    return Report({UserError("bad-flag", "", "lower needs --to=RUNG or --dump-rungs=DIR")}, "",
                  f.json);
  }
  int code = 0;
  auto c = CompileFile(f, dump_dir.empty() ? *rung : Rung::kExecplan, {}, code);
  if (!c) return code;
  if (!dump_dir.empty()) {
    // Written only after every rung compiled: a failing document writes nothing.
    std::error_code ec;
    std::filesystem::create_directories(dump_dir, ec);
    const std::pair<const char*, std::string> files[] = {
        {"0.doc.json", CanonicalJson(pipeline::RungJson(*c, Rung::kDoc)) + "\n"},
        {"1.block.txt", pipeline::PrintRung(*c, Rung::kBlock)},
        {"2.webir.txt", pipeline::PrintRung(*c, Rung::kWebir)},
        {"3.kernel.txt", pipeline::PrintRung(*c, Rung::kKernel)},
        {"3.kernel.wgsl", kernel::PrintWgsl(*c->module)},
        {"4.execplan.txt", pipeline::PrintRung(*c, Rung::kExecplan)},
    };
    for (const auto& [name, text] : files) {
      Status s = WriteFileAtomic((std::filesystem::path(dump_dir) / name).string(), text);
      if (!s.ok()) return Report(s.errors(), "", f.json);
    }
    std::cout << "wrote " << std::size(files) << " rung dumps to " << dump_dir << "\n";
    return 0;
  }
  if (f.json)
    std::cout << pipeline::RungJson(*c, *rung).dump(2) << "\n";
  else
    std::cout << pipeline::PrintRung(*c, *rung);
  return 0;
}

int PlanCommand(const CompileFlags& f) {
  int code = 0;
  auto c = CompileFile(f, pipeline::Rung::kExecplan, {}, code);
  if (!c) return code;
  if (f.json)
    std::cout << execplan::ToJson(*c->plan).dump(2) << "\n";
  else
    std::cout << execplan::Print(*c->plan);
  return 0;
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
