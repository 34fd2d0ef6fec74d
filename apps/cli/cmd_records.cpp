// `scellis runs`, `scellis replay RUN_ID` and `scellis store verify|gc`: the run records and the
// store that holds them (src/record, src/store). Parses, calls, prints.
#include <cstdio>
#include <iostream>

#include "base/diagnostic_json.h"
#include "common.h"
#include "record/replay.h"
#include "record/run_record.h"

namespace scellis::cli {

std::string RecordOrWarn(bool no_record,
                         const std::function<Result<std::string>(const store::Store&)>& write) {
  if (no_record || !record::RecordingEnabled()) return "";
  auto store = store::Store::Open();
  Result<std::string> id = store.ok() ? write(store.value()) : Result<std::string>(store.status());
  if (id.ok()) return id.value();
  for (Diagnostic d : id.errors()) {
    d.severity = Severity::kWarning;
    d.message = "the run is not recorded: " + d.message;
    PrintNotes({d}, "");
  }
  return "";
}

int RunsCommand(const RunsFlags& flags) {
  auto store = store::Store::Open();
  if (!store.ok()) return Report(store.errors(), "", flags.json);
  std::vector<Diagnostic> problems;
  std::vector<record::RunSummary> runs =
      record::ListRuns(store.value(), static_cast<size_t>(flags.limit), &problems);
  for (Diagnostic d : problems) {
    d.severity = Severity::kWarning;
    PrintNotes({d}, "");
  }
  if (flags.json) {
    Json list = Json::array();
    for (const record::RunSummary& r : runs) list.push_back(r.ToJson());
    std::cout << Json{{"store", store->root()}, {"runs", list}}.dump(2) << "\n";
    return 0;
  }
  if (runs.empty()) std::cout << "no run records in " << store->root() << "\n";
  for (const record::RunSummary& r : runs) {
    std::printf("%s  %s  %-5s  %-6s  %-5s  document %s\n", r.date.c_str(), r.id.c_str(),
                r.command.c_str(), r.backend.c_str(), r.tier.c_str(), r.content_id.c_str());
  }
  return 0;
}

int ReplayCommand(const ReplayFlags& flags) {
  auto result = record::Replay(flags.run_id, {.store_root = "", .cpu_threads = flags.threads});
  if (!result.ok()) return Report(result.errors(), "", flags.json);
  const record::ReplayResult& r = result.value();
  if (flags.json) {
    std::cout << r.ToJson().dump(2) << "\n";
  } else {
    std::printf("replay of %s (%s) on %s: %s, guarantee %s", r.run_id.c_str(), r.command.c_str(),
                r.backend.c_str(), r.agree ? "agrees" : "DISAGREES", r.guarantee.c_str());
    if (r.guarantee == "tolerance")
      std::printf(" (%s: atol %g, rtol %g)", r.tolerance.c_str(), r.atol, r.rtol);
    std::printf("\n");
    for (const record::OutputComparison& c : r.outputs) {
      std::string how = c.digest_equal ? "equal bit for bit"
                        : c.ok ? "within tolerance (max abs diff " + std::to_string(c.max_abs_diff) + ")"
                               : "DIFFERS";
      std::printf("  %s: %s\n", c.name.c_str(), how.c_str());
    }
  }
  if (r.agree) return 0;
  // A disagreement is the replay's answer, not a failure to give one: exit 1, not a refusal's 2.
  std::cerr << r.Disagreement()->Format("") << "\n";
  return 1;
}

int StoreCommand(const StoreFlags& flags) {
  auto store = store::Store::Open();
  if (!store.ok()) return Report(store.errors(), "", flags.json);
  if (flags.action == "verify") {
    std::vector<Diagnostic> problems = store->Verify();
    if (flags.json) {
      std::cout << Json{{"store", store->root()},
                        {"ok", problems.empty()},
                        {"problems", DiagnosticsToJson(problems)}}
                       .dump(2)
                << "\n";
    } else {
      for (const Diagnostic& d : problems) std::cerr << d.Format("") << "\n";
      std::cout << store->root() << ": "
                << (problems.empty() ? "every object, blob and index entry checks out"
                                     : std::to_string(problems.size()) + " problem(s)")
                << "\n";
    }
    return problems.empty() ? 0 : 1;
  }
  auto gc = store->Gc(record::IsRecordObject, flags.dry_run);
  if (!gc.ok()) return Report(gc.errors(), "", flags.json);
  if (flags.json) {
    std::cout << Json{{"store", store->root()},
                      {"dry_run", flags.dry_run},
                      {"removed", gc->removed},
                      {"removed_bytes", gc->removed_bytes},
                      {"kept", gc->kept},
                      {"dangling_index_entries", gc->dangling_entries}}
                     .dump(2)
              << "\n";
    return 0;
  }
  for (const std::string& id : gc->removed)
    std::cout << (flags.dry_run ? "would remove " : "removed ") << id << "\n";
  std::cout << (flags.dry_run ? "would remove " : "removed ") << gc->removed.size()
            << " unreferenced object(s) and blob(s), " << gc->removed_bytes << " bytes, and "
            << gc->dangling_entries << " dangling index entr"
            << (gc->dangling_entries == 1 ? "y" : "ies") << "; kept " << gc->kept << "\n";
  return 0;
}

}  // namespace scellis::cli
