// Fuzz target: DecodeSafetensors on arbitrary bytes must return tensors or diagnostics, never
// crash; whatever it accepts must pass CheckTensors and survive a canonical re-encoding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "store/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using scellis::store::NamedTensor;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> meta;
  scellis::Result<std::vector<NamedTensor>> r = scellis::store::DecodeSafetensors(bytes, &meta);
  if (!r.ok()) {
    if (r.errors().empty()) std::abort();
    return 0;
  }
  // Names like "" are readable but not writable by the encoder; skip those.
  if (!scellis::store::CheckTensors(*r, meta).ok()) return 0;
  std::string again = scellis::store::EncodeSafetensors(*r, meta);
  std::map<std::string, std::string> meta2;
  scellis::Result<std::vector<NamedTensor>> r2 = scellis::store::DecodeSafetensors(again, &meta2);
  if (!r2.ok() || r2->size() != r->size() || meta2 != meta) std::abort();
  for (size_t i = 0; i < r->size(); ++i) {
    const NamedTensor& a = (*r)[i];
    const NamedTensor& b = (*r2)[i];
    if (a.name != b.name || a.dtype != b.dtype || a.shape != b.shape || a.bytes != b.bytes) {
      std::abort();
    }
  }
  return 0;
}
