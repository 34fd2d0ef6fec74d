// Whole-file reads and crash-safe whole-file writes.
//
// Artifacts (checkpoints, caches, reports) are written so that a reader sees either the old file
// or the complete new one, never a torn mixture, even if the process or the machine dies midway.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace scellis {

// Replaces the file at `path` with `bytes`, atomically: the bytes go to a temporary file in the
// same directory (a rename is only atomic within one file system), which is flushed to disk,
// renamed over `path`, and then the directory itself is flushed so the rename survives a crash.
// An existing file keeps its permission bits; a new one gets 0644.
//
// On failure the temporary file is removed and `path` is untouched (diagnostic `write-failed`,
// naming the step and the system's reason). If only the final flush of the directory fails, the
// new content is in place but may not survive a crash; that is reported as `write-failed` too.
Status WriteFileAtomic(const std::string& path, std::string_view bytes);

// Reads the whole file at `path`. Diagnostics: `file-not-found` when it does not exist,
// `file-too-large` when it holds more than `max_bytes` (checked while reading, so a file that
// grows, or a pipe, cannot exhaust memory), `read-failed` for anything else (a directory, no
// permission, an I/O error).
Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes);

}  // namespace scellis
