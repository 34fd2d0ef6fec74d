// SHA-256 digests (FIPS 180-4), as used to name and verify artifacts (checkpoints, datasets,
// caches) and documents (their content ids). The engine's own implementation: it carries no
// dependency, so every build of the engine — the WebAssembly one included — names the same bytes
// by the same digest.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace scellis {

// A streaming digest: Update with the message in pieces of any size, then Final once. The digest
// is that of the concatenation of the pieces.
class Sha256 {
 public:
  using Digest = std::array<std::uint8_t, 32>;

  Sha256();
  void Update(std::string_view bytes);
  void Update(const void* data, std::size_t size);
  // The digest of everything given to Update. The object may not be updated or finalized again.
  Digest Final();
  // Final as 64 lowercase hex digits.
  std::string FinalHex();

  static std::string Hex(const Digest& digest);

 private:
  void Compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_;
  std::size_t buffered_ = 0;
  std::uint64_t length_bytes_ = 0;
};

// The SHA-256 digest of `bytes` (which may hold any byte, NUL included) as 64 lowercase hex
// digits.
std::string Sha256Hex(std::string_view bytes);

}  // namespace scellis
