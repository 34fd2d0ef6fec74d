// The error corpus: every input in tests/errors/ must be refused by the real `scellis` binary with
// exit code 2 and the named diagnostic at the expected JSON pointer, without crashing and without
// writing an output file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "doc/document.h"
#include "support/cli.h"

namespace scellis::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(SCELLIS_SOURCE_DIR) / "tests" / "errors";

struct Expectation {
  std::string code;
  std::string pointer;  // "" when the expectation is "-"
};

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kCorpus))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

Expectation ReadExpectation(const std::string& name) {
  std::istringstream in(ReadWholeFile(kCorpus / (name + ".expect")));
  Expectation e;
  in >> e.code >> e.pointer;
  if (e.pointer == "-") e.pointer.clear();
  return e;
}

std::vector<std::string> FlagsFor(const std::string& name) {
  fs::path flags = kCorpus / (name + ".flags");
  if (!fs::exists(flags)) return {"--tier=prod"};
  std::istringstream in(ReadWholeFile(flags));
  std::vector<std::string> out;
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

// The pointer of a refusal of the command line itself, which concerns no file: `error[code]: ...`.
const std::string kCommandLine = "argv";

// Checks that stderr names `code` at `pointer` in the formatted form
// `FILE:POINTER (where): error[code]: ...`, `FILE: error[code]: ...` without a pointer, or
// `error[code]: ...` for the command line.
void ExpectDiagnostic(const CliRun& r, const std::string& file, const Expectation& e,
                      const std::string& what) {
  EXPECT_TRUE(r.exited) << what << ": killed by signal " << r.signal << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 2) << what << "\nstderr:\n" << r.err;
  std::string tag = "error[" + e.code + "]";
  bool found = false;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find(tag);
    if (at == std::string::npos) continue;
    std::string head = line.substr(0, at);
    if (e.pointer == kCommandLine) {
      found |= head.empty();
    } else if (e.pointer.empty()) {
      found |= head == file + ": ";
    } else {
      std::string prefix = file + ":" + e.pointer;
      found |= head.rfind(prefix + ": ", 0) == 0 || head.rfind(prefix + " (", 0) == 0;
    }
  }
  EXPECT_TRUE(found) << what << ": expected " << tag << " at "
                     << (e.pointer.empty() ? "-" : e.pointer) << "\nstderr:\n"
                     << r.err;
}

// Runs one input through `validate` and `run` and checks both refusals. Flags that choose a backend
// concern `run` alone: they replace its default `--backend=cpu`, and `validate` (which plans for
// the CPU) is not asked. A case for a backend this machine lacks is skipped.
void CheckRefused(const fs::path& input, const Expectation& e,
                  const std::vector<std::string>& flags) {
  std::string file = input.string();
  const bool chooses_backend = std::any_of(flags.begin(), flags.end(), [](const std::string& f) {
    return f.rfind("--backend=", 0) == 0;
  });
  if (!chooses_backend) {
    std::vector<std::string> validate = {"validate", file};
    validate.insert(validate.end(), flags.begin(), flags.end());
    ExpectDiagnostic(RunScellis(validate), file, e, "validate");
  }

  fs::path dir = MakeTempDir("scellis-errors");
  fs::path out_file = dir / "result.json";
  std::vector<std::string> run = {"run", file, "--out", out_file.string()};
  if (!chooses_backend) run.push_back("--backend=cpu");
  run.insert(run.end(), flags.begin(), flags.end());
  CliRun r = RunScellis(run);
  if (chooses_backend && r.err.find("error[backend-unavailable]") != std::string::npos) {
    fs::remove_all(dir);
    GTEST_SKIP() << "the backend this case needs is not available here:\n" << r.err;
  }
  ExpectDiagnostic(r, file, e, "run");
  EXPECT_FALSE(fs::exists(out_file)) << "a refused run wrote " << out_file;
  EXPECT_EQ(r.out.find("backend:"), std::string::npos) << "a refused run printed results";
  fs::remove_all(dir);
}

TEST(ErrorCorpus, BinaryIsBuilt) {
  ASSERT_TRUE(fs::exists(ScellisBinary())) << ScellisBinary();
}

// Every input has an expectation; every sidecar has its input; every expectation is well formed.
TEST(ErrorCorpus, EveryCaseHasAnExpectation) {
  std::set<std::string> inputs, expects;
  for (const auto& e : fs::directory_iterator(kCorpus)) {
    std::string ext = e.path().extension().string(), stem = e.path().stem().string();
    if (ext == ".json")
      inputs.insert(stem);
    else if (ext == ".expect")
      expects.insert(stem);
    else if (ext == ".flags")
      EXPECT_TRUE(fs::exists(kCorpus / (stem + ".json"))) << e.path();
    else if (ext == ".cpp" || e.path().filename() == "README.md")
      continue;
    else
      ADD_FAILURE() << "unexpected file in the corpus: " << e.path();
  }
  EXPECT_GE(inputs.size(), 30u);
  for (const std::string& name : inputs) {
    ASSERT_TRUE(expects.count(name)) << name << ".json has no " << name << ".expect";
    std::string text = ReadWholeFile(kCorpus / (name + ".expect"));
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << name << ".expect is not one line";
    Expectation e = ReadExpectation(name);
    EXPECT_FALSE(e.code.empty()) << name;
    EXPECT_TRUE(std::all_of(
        e.code.begin(), e.code.end(),
        [](char c) { return (c >= 'a' && c <= 'z') || c == '-' || (c >= '0' && c <= '9'); }))
        << name << ": code \"" << e.code << "\"";
    std::istringstream tokens(text);
    std::string code, pointer, extra;
    tokens >> code >> pointer >> extra;
    EXPECT_TRUE(pointer == "-" || pointer == kCommandLine ||
                (!pointer.empty() && pointer[0] == '/'))
        << name;
    EXPECT_TRUE(extra.empty()) << name << ".expect has more than two fields";
  }
  for (const std::string& name : expects)
    EXPECT_TRUE(inputs.count(name)) << name << ".expect has no " << name << ".json";
}

class ErrorCase : public ::testing::TestWithParam<std::string> {};

TEST_P(ErrorCase, IsRefusedWithItsDiagnostic) {
  const std::string& name = GetParam();
  CheckRefused(kCorpus / (name + ".json"), ReadExpectation(name), FlagsFor(name));
}

INSTANTIATE_TEST_SUITE_P(Corpus, ErrorCase, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// Generated inputs, too large to keep in the corpus.
class GeneratedCase : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("scellis-generated"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path Write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  fs::path dir_;
};

TEST_F(GeneratedCase, TenThousandLevelsOfNesting) {
  const int kLevels = 10000;
  std::string deep(kLevels, '[');
  deep += "1";
  deep.append(kLevels, ']');
  std::string text = R"({"version": 1, "nodes": [{"id": 0, "op": "input", "shape": [1], "data": )" +
                     deep + R"(}], "outputs": [{"name": "out", "id": 0}]})";
  CheckRefused(Write("deep_arrays.json", text), {"nesting-too-deep", ""}, {"--tier=prod"});

  std::string objects;
  for (int i = 0; i < kLevels; ++i) objects += R"({"a": )";
  objects += "1";
  objects.append(kLevels, '}');
  CheckRefused(Write("deep_objects.json", objects), {"nesting-too-deep", ""}, {"--tier=prod"});

  // In-process too: the parser must refuse it without recursing.
  auto d = doc::Parse(text);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.errors().front().code, "nesting-too-deep");
}

TEST_F(GeneratedCase, TooManyNodes) {
  std::string text =
      R"({"version": 1, "nodes": [{"id": 0, "op": "input", "shape": [1], "data": [1]})";
  for (size_t i = 1; i <= doc::kMaxNodes; ++i)
    text += R"(, {"id": )" + std::to_string(i) + R"(, "op": "relu", "a": )" +
            std::to_string(i - 1) + "}";
  text += R"(], "outputs": [{"name": "out", "id": 1}]})";
  CheckRefused(Write("many_nodes.json", text), {"too-many-nodes", "/nodes"}, {"--tier=prod"});
}

// Valid as a document, so `validate` accepts it; `run` must refuse for want of data.
TEST_F(GeneratedCase, InputWithoutDataIsRefusedAtRun) {
  fs::path p =
      Write("no_data.json", R"({"version": 1, "nodes": [{"id": 0, "op": "input", "shape": [2]},
    {"id": 1, "op": "relu", "a": 0}], "outputs": [{"name": "out", "id": 1}]})");
  CliRun v = RunScellis({"validate", p.string(), "--tier=prod"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  fs::path out_file = dir_ / "result.json";
  CliRun r =
      RunScellis({"run", p.string(), "--tier=prod", "--backend=cpu", "--out", out_file.string()});
  ExpectDiagnostic(r, p.string(), {"missing-input-data", "/nodes/0"}, "run");
  EXPECT_FALSE(fs::exists(out_file));
}

// The control: a good document runs, exits 0 and writes its output file.
TEST_F(GeneratedCase, GoodDocumentWritesItsOutput) {
  fs::path out_file = dir_ / "result.json";
  CliRun r = RunScellis(
      {"run", (fs::path(SCELLIS_SOURCE_DIR) / "examples" / "seed_mul_relu.json").string(),
       "--tier=prod", "--backend=cpu", "--out", out_file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(out_file));
  Json j = Json::parse(ReadWholeFile(out_file));
  EXPECT_EQ(j["outputs"]["values"]["data"], Json::parse("[0, 60, 120]"));
  EXPECT_EQ(j["determinism_tier"], "prod");
}

}  // namespace
}  // namespace scellis::testing
