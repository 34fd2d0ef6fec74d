#include "base/file_head.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace scellis {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

Result<FileHead> ReadFileHead(const std::string& path, uint64_t n) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    int err = errno;
    if (err == ENOENT) {
      return UserError("file-not-found", "", "no such file: '" + path + "'",
                       "check the path; relative paths are relative to the working directory");
    }
    return UserError("read-failed", "", "could not open '" + path + "': " + std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return UserError("read-failed", "", "could not stat '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return UserError("read-failed", "", "'" + path + "' is not a regular file",
                     "name a regular file (not a directory, device, FIFO or socket)");
  }
  FileHead head;
  head.size = static_cast<uint64_t>(st.st_size);
  head.bytes.resize(static_cast<size_t>(std::min(n, head.size)));
  size_t got = 0;
  while (got < head.bytes.size()) {
    ssize_t r = ::read(fd.get(), head.bytes.data() + got, head.bytes.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return UserError("read-failed", "", "could not read '" + path + "': " + std::strerror(errno));
    }
    if (r == 0) break;  // the file shrank since fstat; the whole read will notice
    got += static_cast<size_t>(r);
  }
  head.bytes.resize(got);
  return head;
}

}  // namespace scellis
