// The gallery: examples/*.json, embedded at build time (CMakeLists.txt generates the definitions),
// so the server never reads a path to show them.
#pragma once

#include <cstddef>

namespace scellis::studio {

struct EmbeddedExample {
  const char* name;  // the file's name without .json
  const unsigned char* data;
  size_t size;
};

extern const EmbeddedExample kEmbeddedExamples[];
extern const size_t kEmbeddedExampleCount;

}  // namespace scellis::studio
