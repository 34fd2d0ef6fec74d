// Fuzz target: DecodeIdx on arbitrary bytes must return a value or a diagnostic, never crash,
// hang or allocate beyond its cap.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  constexpr uint64_t kCap = uint64_t{1} << 24;
  scellis::Result<scellis::data::IdxArray> r = scellis::data::DecodeIdx(bytes, kCap);
  if (r.ok()) {
    uint64_t count = 1;
    for (int64_t d : r->dims) count *= static_cast<uint64_t>(d);
    if (r->values.size() != count) std::abort();
  } else if (r.errors().empty()) {
    std::abort();
  }
  return 0;
}
