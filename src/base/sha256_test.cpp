#include "base/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace scellis {
namespace {

// The examples of FIPS 180-4 (NIST's "SHA256.pdf" and "SHA2_Additional.pdf").
TEST(Sha256, NistVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 448 bits: the padding no longer fits the message's block, so a second block is compressed.
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // 896 bits.
  EXPECT_EQ(
      Sha256Hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                "klmnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the block and padding boundaries (55, 56, 63, 64, 65 bytes), against digests
// computed by `printf 'a%.0s' $(seq N) | sha256sum` (coreutils).
TEST(Sha256, PaddingBoundaries) {
  EXPECT_EQ(Sha256Hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(Sha256Hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(Sha256Hex(std::string(63, 'a')),
            "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
  EXPECT_EQ(Sha256Hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  EXPECT_EQ(Sha256Hex(std::string(65, 'a')),
            "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0");
}

TEST(Sha256, HashesEmbeddedNulBytes) {
  std::string with_nul("a\0b", 3);
  EXPECT_NE(Sha256Hex(with_nul), Sha256Hex("a"));
  EXPECT_EQ(Sha256Hex(with_nul).size(), 64u);
  EXPECT_EQ(Sha256Hex(std::string(1, '\0')),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d");
}

// Streaming in pieces of odd sizes (some straddling blocks, some empty, some several blocks long)
// gives the one-shot digest of the whole.
TEST(Sha256, StreamingInOddChunksEqualsOneShot) {
  std::string message;
  for (int i = 0; i < 5000; ++i) message.push_back(static_cast<char>((i * 131 + i / 7) & 0xff));
  const std::string whole = Sha256Hex(message);
  for (size_t chunk : {1u, 3u, 7u, 13u, 55u, 63u, 64u, 65u, 127u, 1000u, 4999u}) {
    Sha256 sha;
    for (size_t at = 0; at < message.size(); at += chunk) {
      sha.Update(std::string_view(message).substr(at, chunk));
      sha.Update("", 0);
    }
    EXPECT_EQ(sha.FinalHex(), whole) << "chunk " << chunk;
  }
  // Irregular pieces: 0, 1, 2, ... bytes.
  Sha256 sha;
  size_t at = 0;
  for (size_t piece = 0; at < message.size(); ++piece) {
    sha.Update(std::string_view(message).substr(at, piece));
    at += piece;
  }
  EXPECT_EQ(sha.FinalHex(), whole);
}

TEST(Sha256, DigestBytesMatchHex) {
  Sha256 sha;
  sha.Update("abc");
  Sha256::Digest digest = sha.Final();
  EXPECT_EQ(digest[0], 0xba);
  EXPECT_EQ(digest[31], 0xad);
  EXPECT_EQ(Sha256::Hex(digest), Sha256Hex("abc"));
}

}  // namespace
}  // namespace scellis
