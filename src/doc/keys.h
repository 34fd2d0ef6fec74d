// Strict objects: every object a document holds has a known set of keys, and a key outside it is
// a named error pointing at the key, with a "did you mean" when the key is a likely misspelling of
// a known one. One checker serves every reader (the document's objects, op attributes from the op
// table, the train section and its sub-objects).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"

namespace scellis::doc {

// The known key `key` was most likely meant as: one within edit distance 2 (and nearer than the
// key's own length, so short keys do not match anything), or the same up to case, '_' and '-'.
// The nearest wins; ties go to the earlier known key.
std::optional<std::string> ClosestKey(std::string_view key, const std::vector<std::string>& known);

// Appends one diagnostic per key of `obj` outside `known` (nothing when `obj` is not an object):
// code `code`, pointer `pointer`/key, a message naming `what` ("a budget", "the train section"),
// and a help that names the likely key or lists the accepted ones.
void CheckKeys(const Json& obj, const std::string& pointer, const std::vector<std::string>& known,
               std::string_view what, std::vector<Diagnostic>& errors,
               std::string_view code = "unknown-field", const std::string& where = "");

}  // namespace scellis::doc
