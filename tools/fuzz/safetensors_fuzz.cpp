// Fuzz target: DecodeSafetensors on arbitrary bytes must return tensors or diagnostics, never
// crash; whatever it accepts must pass CheckTensors and survive a canonical re-encoding.
// LoadSafetensors, which judges a file's header against its size before reading the data, must
// reach the same verdict on the same bytes held in a file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "store/safetensors.h"

namespace {

// The bytes as a regular file (in memory), named by a path the readers can open.
class MemFile {
 public:
  MemFile() : fd_(::memfd_create("safetensors_fuzz", 0)) {
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
  using scellis::store::NamedTensor;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> meta;
  scellis::Result<std::vector<NamedTensor>> r = scellis::store::DecodeSafetensors(bytes, &meta);
  static MemFile file;
  std::map<std::string, std::string> file_meta;
  scellis::Result<std::vector<NamedTensor>> from_file =
      scellis::store::LoadSafetensors(file.Write(bytes), &file_meta);
  if (from_file.ok() != r.ok()) std::abort();
  if (!r.ok() && from_file.errors().front().code != r.errors().front().code) std::abort();
  if (r.ok() && (from_file->size() != r->size() || file_meta != meta)) std::abort();
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
