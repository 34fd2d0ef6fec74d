// Whole-file reads and crash-safe whole-file writes: the one place that decides which paths
// Scellis reads from and writes to.
//
// Artifacts (checkpoints, caches, reports) are written so that a reader sees either the old file
// or the complete new one, never a torn mixture, even if the process or the machine dies midway.
//
// Policy, for writes: only regular files are written. A target that exists and is anything else
// (a directory, a device node such as /dev/null, a FIFO, a socket) is refused, and so is a
// symbolic link, whatever it points to: replacing the link would silently cut it, writing through
// it would write where the path does not say. Reads open without blocking and accept only regular
// files, so a FIFO or a device cannot hang or flood a reader.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace scellis {

// Whether `path` may be written by WriteFileAtomic: it does not exist, or it is a regular file
// (not a link to one). Diagnostic `bad-output-path` naming the path and what it is otherwise.
// Front ends call it while checking their flags, before any work; WriteFileAtomic calls it again.
Status CheckOutputPath(const std::string& path);

// Whether the two paths name the same existing file (same device and inode, links and `..`
// resolved by the system). False when either does not exist.
bool SameFile(const std::string& a, const std::string& b);

// Replaces the file at `path` with `bytes`, atomically: the bytes go to a temporary file
// `.<name>.tmp.XXXXXX` in the same directory (a rename is only atomic within one file system),
// which is flushed to disk, renamed over `path`, and then the directory itself is flushed so the
// rename survives a crash. An existing file keeps its permission bits; a new one gets 0644.
// Temporaries of the same target left behind by an earlier write that was killed are removed
// first (only names of exactly that pattern; two processes writing one target at once are not
// supported).
//
// Refused targets (see CheckOutputPath) give `bad-output-path` and leave everything untouched. On
// failure the temporary file is removed and `path` is untouched (diagnostic `write-failed`, naming
// the step and the system's reason). If only the final flush of the directory fails, the new
// content is in place but may not survive a crash; that is reported as `write-failed` too.
//
// With Flush::kNone nothing is flushed: the write is still atomic for readers (rename), but after
// a machine crash the file may be missing or hold fewer bytes. Only for content checked when it is
// read (the store's caches, named by their hash), where a torn file is refused and made again;
// a flush costs milliseconds per file on many disks.
enum class Flush { kToDisk, kNone };
Status WriteFileAtomic(const std::string& path, std::string_view bytes,
                       Flush flush = Flush::kToDisk);

// Reads the whole file at `path`. Diagnostics: `file-not-found` when it does not exist,
// `not-a-regular-file` for a directory, device, FIFO or socket (refused after a non-blocking open,
// before reading a byte), `file-too-large` when it holds more than `max_bytes` (checked against
// its size first, and again while reading, so a file that grows, or one that reports no size like
// those of /proc, cannot exhaust memory), `read-failed` for anything else (no permission, an I/O
// error).
Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes);

// The first bytes of a file and its size, for readers that check a format's header against the
// file's length before reading its body: a hostile file is refused after a few bytes, not after
// gigabytes.
struct FileHead {
  std::string bytes;  // the first min(n, size) bytes
  uint64_t size = 0;  // the whole file's, from fstat
};

// Reads the first `n` bytes of the file at `path`, under ReadFile's rules: opened without
// blocking, only a regular file (`not-a-regular-file`), `file-not-found`, `read-failed`.
Result<FileHead> ReadFileHead(const std::string& path, uint64_t n);

}  // namespace scellis
