// Fuzz target: DecodeIdx on arbitrary bytes must return a value or a diagnostic, never crash,
// hang or allocate beyond its cap; ReadIdx, which checks a file's header against its size before
// reading the body, must reach the same verdict on the same bytes held in a file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "data/idx.h"

namespace {

// The bytes as a regular file (in memory), named by a path the readers can open.
class MemFile {
 public:
  MemFile() : fd_(::memfd_create("idx_fuzz", 0)) {
    if (fd_ < 0) std::abort();
  }
  ~MemFile() { ::close(fd_); }
  std::string Write(std::string_view bytes) {
    if (::ftruncate(fd_, 0) != 0 ||
        ::pwrite(fd_, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
      std::abort();
    }
    return "/proc/self/fd/" + std::to_string(fd_);
  }

 private:
  int fd_;
};

}  // namespace

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
  static MemFile file;
  scellis::Result<scellis::data::IdxArray> from_file =
      scellis::data::ReadIdx(file.Write(bytes), kCap);
  if (from_file.ok() != r.ok()) std::abort();
  if (!r.ok() && from_file.errors().front().code != r.errors().front().code) std::abort();
  if (r.ok() && (from_file->dims != r->dims || from_file->values.size() != r->values.size()))
    std::abort();
  return 0;
}
