// Typed flags: the one way every `scellis` subcommand turns its command-line text into values.
//
// CLI11 only collects the text of these flags; the rules here convert it, and a value out of its
// range or of the wrong shape is a `bad-flag` diagnostic naming the flag, the value and what it
// takes. Conversion runs while the command line is parsed, before any command does any work.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/diagnostic.h"

namespace scellis::cli {

// A byte size: a whole number with an optional binary suffix K, M, G or T (also KiB, MiB, GiB,
// TiB), each 1024 times the one before: "512", "64K", "2G". Fractions, signs, zero and sizes that
// do not fit an int64 are refused (nullopt). Whether the machine has that much is the plan's call.
std::optional<int64_t> ParseByteSize(const std::string& text);

// A decimal integer in [lo, hi], nothing else around it (no sign for lo >= 0, no fraction, no
// exponent, no surrounding space).
std::optional<int64_t> ParseInteger(const std::string& text, int64_t lo, int64_t hi);
std::optional<uint64_t> ParseUnsigned(const std::string& text);

// The typed options of one subcommand.
class TypedFlags {
 public:
  explicit TypedFlags(CLI::App* cmd) : cmd_(cmd) {}

  // An integer in [lo, hi]; `out` keeps its default when the flag is not given.
  template <typename Int>
  void Integer(const std::string& name, Int* out, int64_t lo, int64_t hi, const std::string& help) {
    Add(name, help, [=](const std::string& flag, const std::string& text) {
      std::optional<int64_t> v = ParseInteger(text, lo, hi);
      if (v) *out = static_cast<Int>(*v);
      return v ? ""
               : flag + " takes an integer from " + std::to_string(lo) + " to " +
                     std::to_string(hi) + ", got \"" + text + "\"";
    });
  }
  // A non-negative 64-bit integer (seeds).
  void Unsigned(const std::string& name, std::optional<uint64_t>* out, const std::string& help);
  // A byte size (see ParseByteSize).
  void Bytes(const std::string& name, std::optional<int64_t>* out, const std::string& help);

  // Converts every flag that was given; a diagnostic for each that does not convert.
  std::vector<Diagnostic> Convert() const;

 private:
  // Returns "" when `text` converted, else the message.
  using Rule = std::function<std::string(const std::string& flag, const std::string& text)>;
  void Add(const std::string& name, const std::string& help, Rule rule);

  struct Flag {
    std::string name;
    std::string text;  // CLI11 writes the given value here
    CLI::Option* option = nullptr;
    Rule rule;
  };
  CLI::App* cmd_;
  std::deque<Flag> flags_;  // a deque: CLI11 keeps pointers to `text`
};

}  // namespace scellis::cli
