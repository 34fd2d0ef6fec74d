// The first bytes of a file and its size, for readers that check a format's header against the
// file's length before reading its body: a hostile file is refused after a few bytes, not after
// gigabytes.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace scellis {

struct FileHead {
  std::string bytes;  // the first min(n, size) bytes
  uint64_t size = 0;  // the whole file's, from fstat
};

// Opens `path` without blocking (a FIFO would otherwise hang the open) and reads its first `n`
// bytes. Only regular files are read: a device, FIFO or socket has no size to check a header
// against, and /dev/zero never ends. Diagnostics: `file-not-found`, `read-failed` (not a
// regular file, no permission, an I/O error).
Result<FileHead> ReadFileHead(const std::string& path, uint64_t n);

}  // namespace scellis
