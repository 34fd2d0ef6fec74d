// Golden rung dumps: every example, lowered again by tools/regen_golden.sh into a temporary
// directory with the binary built beside this test, must match tests/golden/<case>/ byte for byte.
// A change to any rung's output, generated WGSL included, shows up here and then as a diff in
// review.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "support/cli.h"

namespace scellis::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = SCELLIS_SOURCE_DIR;
const fs::path kGolden = kRoot / "tests" / "golden";
const char* kRegen = "tools/regen_golden.sh";

std::vector<std::string> Examples() {
  std::vector<std::string> names;
  // examples/workplan/ holds documents that fit only split over ranks: out of the loops that run
  // every example on one device, in the golden set all the same.
  for (const fs::path& dir : {kRoot / "examples", kRoot / "examples" / "workplan"})
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::set<std::string> FilesIn(const fs::path& dir) {
  std::set<std::string> names;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// Where two texts first differ, with a few lines of each.
std::string DiffHint(const std::string& want, const std::string& got) {
  std::vector<std::string> w = Lines(want), g = Lines(got);
  size_t i = 0;
  while (i < w.size() && i < g.size() && w[i] == g[i]) ++i;
  std::ostringstream out;
  out << "first difference at line " << i + 1 << " (golden " << w.size() << " lines, now "
      << g.size() << " lines)\n";
  for (size_t k = i; k < std::min(w.size(), i + 3); ++k) out << "  - " << w[k] << "\n";
  for (size_t k = i; k < std::min(g.size(), i + 3); ++k) out << "  + " << g[k] << "\n";
  if (i >= w.size() && i >= g.size()) out << "  (the line endings or the final newline differ)\n";
  return out.str();
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, DumpsMatchByteForByte) {
  const std::string& name = GetParam();
  fs::path tmp = MakeTempDir("scellis-golden");
  CliRun r = RunProgram("/bin/bash", {(kRoot / kRegen).string(), "--out", tmp.string(), "--scellis",
                                      ScellisBinary().string(), name});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << "regen_golden failed:\n" << r.err;

  fs::path golden = kGolden / name, now = tmp / name;
  std::string regen = std::string("to accept the new output, run ") + kRegen + " " + name +
                      " and review the diff (git diff tests/golden/" + name + ")";
  std::set<std::string> want = FilesIn(golden), got = FilesIn(now);
  ASSERT_FALSE(want.empty()) << "no golden dumps in " << golden << "; " << regen;
  EXPECT_EQ(want, got) << "the set of rung dumps changed; " << regen;
  for (const std::string& f : want) {
    if (!got.count(f)) continue;
    std::string w = ReadWholeFile(golden / f), g = ReadWholeFile(now / f);
    EXPECT_TRUE(w == g) << name << "/" << f << " differs from the golden dump\n"
                        << DiffHint(w, g) << "see: diff -u " << (golden / f).string() << " "
                        << (now / f).string() << "\n"
                        << regen;
  }
  if (!HasFailure()) fs::remove_all(tmp);  // kept on failure for the diff above
}

INSTANTIATE_TEST_SUITE_P(Examples, Golden, ::testing::ValuesIn(Examples()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// Every golden directory belongs to an example (a removed example leaves no stale dumps).
TEST(GoldenSet, EveryDumpHasItsExample) {
  std::vector<std::string> examples = Examples();
  for (const auto& e : fs::directory_iterator(kGolden)) {
    if (!e.is_directory()) continue;
    std::string name = e.path().filename().string();
    EXPECT_TRUE(std::find(examples.begin(), examples.end(), name) != examples.end())
        << "tests/golden/" << name << " has no examples/" << name << ".json";
  }
}

// Lowering is a pure function of the document: two dumps made now are identical too.
TEST(GoldenSet, DumpingTwiceGivesTheSameBytes) {
  fs::path a = MakeTempDir("scellis-golden-a"), b = MakeTempDir("scellis-golden-b");
  for (const fs::path& dir : {a, b}) {
    CliRun r = RunProgram("/bin/bash", {(kRoot / kRegen).string(), "--out", dir.string(),
                                        "--scellis", ScellisBinary().string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  for (const std::string& name : Examples())
    for (const std::string& f : FilesIn(a / name))
      EXPECT_EQ(ReadWholeFile(a / name / f), ReadWholeFile(b / name / f)) << name << "/" << f;
  fs::remove_all(a);
  fs::remove_all(b);
}

}  // namespace
}  // namespace scellis::testing
