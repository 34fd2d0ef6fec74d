// SHA-256 digests, as used to name and verify artifacts (checkpoints, datasets, caches).
#pragma once

#include <string>
#include <string_view>

namespace scellis {

// The SHA-256 digest of `bytes` (which may hold any byte, NUL included) as 64 lowercase hex
// digits. Computed by OpenSSL; a failure there (out of memory) aborts, as no caller could
// continue without the digest.
std::string Sha256Hex(std::string_view bytes);

}  // namespace scellis
