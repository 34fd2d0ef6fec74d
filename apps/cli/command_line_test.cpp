// The command line is parsed and checked whole before anything runs (command_line.h): byte sizes
// and integers of their exact form, names suggested for typos, each bad form refused as
// `bad-flag`, the good ones read into the invocation, and --threads capped at the machine's.
#include "command_line.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cli_test.h"
#include "doc/keys.h"
#include "typed_flags.h"

namespace scellis::testing {
namespace {

using cli::ParseByteSize;
using cli::ParseCommandLine;
using cli::ParseInteger;

TEST(CliFlags, ByteSizes) {
  EXPECT_EQ(ParseByteSize("512"), 512);
  EXPECT_EQ(ParseByteSize("64K"), 64 * 1024);
  EXPECT_EQ(ParseByteSize("3MiB"), 3 * 1024 * 1024);
  EXPECT_EQ(ParseByteSize("2G"), int64_t{2} << 30);
  EXPECT_EQ(ParseByteSize("1000000G"), int64_t{1000000} << 30);  // parses; the plan judges it
  EXPECT_EQ(ParseByteSize("8388607T"), int64_t{8388607} << 40);  // 2^63 - 2^40: the largest T
  EXPECT_EQ(ParseByteSize("8388608T"), std::nullopt);            // 2^63: beyond int64
  EXPECT_EQ(ParseByteSize("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ParseByteSize("9223372036854775808"), std::nullopt);
  for (const char* bad : {"", "0", "0K", "0.5", "1.5G", "-1", "+1", "1e9", " 1", "1 ", "1g", "1GB",
                          "G", "0x10", "1KK"})
    EXPECT_EQ(ParseByteSize(bad), std::nullopt) << bad;
}

TEST(CliFlags, Integers) {
  EXPECT_EQ(ParseInteger("7", 1, 10), 7);
  EXPECT_EQ(ParseInteger("-3", -5, 5), -3);
  for (const char* bad : {"", "0", "11", "-3", "1.0", "+2", " 2", "2x", "99999999999999999999"})
    EXPECT_EQ(ParseInteger(bad, 1, 10), std::nullopt) << bad;
}

// The command line suggests names with the document's matcher.
std::string ClosestMatch(const std::string& word, const std::vector<std::string>& candidates) {
  return doc::ClosestKey(word, candidates).value_or("");
}

TEST(CliFlags, ClosestMatchIsForTyposOnly) {
  std::vector<std::string> flags = {"--epochs", "--threads", "--max-steps", "--steps-per-run"};
  EXPECT_EQ(ClosestMatch("--epoch", flags), "--epochs");
  EXPECT_EQ(ClosestMatch("--thread", flags), "--threads");
  EXPECT_EQ(ClosestMatch("--max-step", flags), "--max-steps");
  EXPECT_EQ(ClosestMatch("--colour", flags), "");
  EXPECT_EQ(ClosestMatch("runn", {"run", "train", "plan"}), "run");
}

// The first diagnostic of a refused command line.
Diagnostic Refusal(const std::vector<std::string>& args) {
  auto r = ParseCommandLine(args, 4);
  if (r.ok()) return Diagnostic{};
  return r.errors().front();
}

TEST(CliFlags, ParserRefusesEachBadForm) {
  const std::string doc = Example("seed_mul_relu.json");
  struct Case {
    std::vector<std::string> args;
    std::string needle;  // in the message or help
  };
  const std::vector<Case> cases = {
      {{"run", doc, "--steps", "0"}, "--steps takes an integer from 1"},
      {{"run", doc, "--threads", "-1"}, "--threads takes an integer from 0"},
      {{"run", doc, "--threads", "1e9"}, "--threads"},
      {{"run", doc, "--threads", "99999999999"}, "--threads"},
      {{"train", doc, "--epochs", "-3"}, "--epochs takes an integer from 1"},
      {{"train", doc, "--epochs=0"}, "--epochs"},
      {{"train", doc, "--max-steps", "0"}, "--max-steps takes an integer from 1"},
      {{"train", doc, "--steps-per-run", "65"}, "from 1 to 64"},
      {{"plan", doc, "--budget=0.5"}, "--budget takes a whole, positive number of bytes"},
      {{"plan", doc, "--budget="}, "--budget"},
      {{"plan", doc, "--bind", "=5"}, "--bind takes NAME=SIZE"},
      {{"plan", doc, "--bind", "N=-1"}, "--bind takes NAME=SIZE"},
      {{"plan", doc, "--bind", "N=4", "--bind", "N=5"}, "two sizes"},
      {{"run", doc, "--out", ""}, "--out needs a non-empty value"},
      {{"train", doc, "--resume="}, "--resume"},
      {{"train", doc, "--resume", ""}, "--resume needs a non-empty value"},
      {{"conform", "--tier=prod", "--seed", "-1"}, "--seed takes a non-negative integer"},
      {{"train", doc, "--epoch", "3"}, "did you mean --epochs?"},
      {{"run", doc, "--thread=3"}, "did you mean --threads?"},
      {{"runn", doc}, "did you mean run?"},
      {{"run", doc, "second.json"}, "unexpected argument"},
      {{"run"}, "file is required"},
      {{}, "no command given"},
      {{"lower", doc}, "lower needs exactly one of"},
      {{"lower", doc, "--to=silicon"}, "--to takes doc"},
      {{"lower", doc, "--to=execplan", "--ranks=2"}, "--ranks and --chunks go with --to=workplan"},
      {{"lower", doc, "--to=workplan", "--ranks=0"}, "--ranks"},
      {{"train", doc, "--ranks=0"}, "--ranks"},
      {{"verify", "sha256:00", "--shard=-1"}, "--shard"},
      {{"plan", doc, "--tier=sometimes"}, "--tier"},
  };
  for (const Case& c : cases) {
    std::string joined;
    for (const std::string& a : c.args) joined += a + " ";
    Diagnostic d = Refusal(c.args);
    EXPECT_EQ(d.code, "bad-flag") << joined;
    EXPECT_NE((d.message + " " + d.help).find(c.needle), std::string::npos)
        << joined << ": " << d.message << " / " << d.help;
  }
}

TEST(CliFlags, ParserAcceptsGoodForms) {
  const std::string doc = Example("seed_mul_relu.json");
  auto run = ParseCommandLine({"run", doc, "--steps=3", "--threads", "2", "--budget=1000000G",
                               "--bind", "N=64", "--tier=prod"},
                              4);
  ASSERT_TRUE(run.ok()) << run.errors().front().Format();
  EXPECT_EQ(run->command, cli::Command::kRun);
  EXPECT_EQ(run->run.steps, 3);
  EXPECT_EQ(run->run.threads, 2);
  EXPECT_EQ(run->compile.budget_bytes, int64_t{1000000} << 30);
  EXPECT_TRUE(run->notes.empty());

  auto train = ParseCommandLine({"train", doc, "--epochs", "2", "--max-steps", "5"}, 4);
  ASSERT_TRUE(train.ok()) << train.errors().front().Format();
  EXPECT_EQ(train->train.epochs, 2);
  EXPECT_EQ(train->train.max_steps, 5);

  auto studio = ParseCommandLine(
      {"studio", "--port", "0", "--backend", "cpu", "--max-request-bytes", "1M", "--open"}, 4);
  ASSERT_TRUE(studio.ok()) << studio.errors().front().Format();
  EXPECT_EQ(studio->command, cli::Command::kStudio);
  EXPECT_EQ(studio->studio.port, 0);
  EXPECT_EQ(studio->studio.host, "127.0.0.1") << "loopback unless asked";
  EXPECT_EQ(studio->studio.max_request_bytes, int64_t{1} << 20);
  EXPECT_TRUE(studio->studio.open);
  for (std::vector<std::string> bad : {std::vector<std::string>{"studio", "--port", "70000"},
                                       {"studio", "--port", "-1"},
                                       {"studio", "--backend", "null"},
                                       {"studio", "--max-request-bytes", "0"}}) {
    auto r = ParseCommandLine(bad, 4);
    ASSERT_FALSE(r.ok()) << bad[2];
    EXPECT_EQ(r.errors().front().code, "bad-flag");
  }

  auto help = ParseCommandLine({"run", "--help"}, 4);
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(help->command, cli::Command::kHelp);
  EXPECT_NE(help->help.find("--steps"), std::string::npos) << help->help;
}

TEST(CliFlags, ThreadsAboveTheMachineAreCappedAndSaid) {
  auto r = ParseCommandLine({"run", Example("seed_mul_relu.json"), "--threads", "1000000"}, 4);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->run.threads, 4);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0].code, "threads-capped");
  auto at = ParseCommandLine({"train", Example("seed_mul_relu.json"), "--threads", "4"}, 4);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(at->train.threads, 4);
  EXPECT_TRUE(at->notes.empty());
}

}  // namespace
}  // namespace scellis::testing
