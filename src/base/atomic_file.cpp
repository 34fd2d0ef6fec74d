#include "base/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace scellis {
namespace {

std::string ErrnoText(int err) {
  return std::strerror(err);
}

Diagnostic WriteFailed(const std::string& path, const std::string& step, int err) {
  return UserError("write-failed", "",
                   "could not write '" + path + "': " + step + " failed: " + ErrnoText(err),
                   "check that the directory exists, is writable and has free space");
}

// The directory part of `path` ("." for a bare file name), and the file name part.
void SplitPath(const std::string& path, std::string* dir, std::string* base) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) {
    *dir = ".";
    *base = path;
  } else {
    *dir = slash == 0 ? "/" : path.substr(0, slash);
    *base = path.substr(slash + 1);
  }
}

// Closes a descriptor once, on every path out of a scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now and reports close's own error, which can be the first sign of a failed write.
  int Close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

// What a non-regular file is, for a message.
std::string KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The temporaries WriteFileAtomic makes for `base` are `<prefix>XXXXXX`, six characters of
// mkostemp's alphabet; the name is cut short so the suffix cannot push it past NAME_MAX.
std::string TempPrefix(const std::string& base) {
  return "." + base.substr(0, 200) + ".tmp.";
}

bool IsOurTemporary(const std::string& name, const std::string& prefix) {
  if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) return false;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    char c = name[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum) return false;
  }
  return true;
}

// Removes the regular files in `dir` that are temporaries of `base` left by a killed write.
void RemoveStaleTemporaries(const std::string& dir, const std::string& base) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;  // the write itself will report an unusable directory
  const std::string prefix = TempPrefix(base);
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (!IsOurTemporary(name, prefix)) continue;
    std::string full = dir + "/" + name;
    struct stat st;
    if (::lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(full.c_str());
  }
  ::closedir(d);
}

bool WriteAll(int fd, std::string_view bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Status CheckOutputPath(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return Status::Ok();
  if (S_ISLNK(st.st_mode)) {
    return UserError("bad-output-path", "",
                     "'" + path +
                         "' is a symbolic link; outputs are written only as regular "
                         "files, never through or over a link",
                     "name the file the link points to, or remove the link first");
  }
  return UserError(
      "bad-output-path", "",
      "'" + path + "' is " + KindOf(st.st_mode) + "; outputs are written only as regular files",
      "choose a path that is a regular file or does not exist yet");
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

Status WriteFileAtomic(const std::string& path, std::string_view bytes, Flush flush) {
  std::string dir, base;
  SplitPath(path, &dir, &base);
  if (base.empty()) return WriteFailed(path, "naming the file", EISDIR);
  SCELLIS_TRY(CheckOutputPath(path));
  RemoveStaleTemporaries(dir, base);
  std::string tmp = dir + "/" + TempPrefix(base) + "XXXXXX";
  std::vector<char> tmpl(tmp.begin(), tmp.end());
  tmpl.push_back('\0');
  Fd fd(::mkostemp(tmpl.data(), O_CLOEXEC));
  if (fd.get() < 0) return WriteFailed(path, "creating a temporary file", errno);
  tmp.assign(tmpl.data());

  auto fail = [&](const std::string& step, int err) {
    ::unlink(tmp.c_str());
    return Status(WriteFailed(path, step, err));
  };
  struct stat existing;
  mode_t mode = ::lstat(path.c_str(), &existing) == 0 ? (existing.st_mode & 07777) : 0644;
  if (::fchmod(fd.get(), mode) != 0) return fail("setting permissions", errno);
  if (!WriteAll(fd.get(), bytes)) return fail("writing", errno);
  if (flush == Flush::kToDisk && ::fsync(fd.get()) != 0) return fail("flushing to disk", errno);
  if (fd.Close() != 0) return fail("closing", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("renaming into place", errno);
  if (flush == Flush::kNone) return Status::Ok();

  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0) return WriteFailed(path, "opening the directory to flush it", errno);
  // Some file systems cannot flush a directory (EINVAL); the rename is then as durable as they
  // allow.
  if (::fsync(dir_fd.get()) != 0 && errno != EINVAL) {
    return WriteFailed(path, "flushing the directory", errno);
  }
  return Status::Ok();
}

namespace {

// Opens `path` for reading without blocking (opening a FIFO otherwise waits for a writer that may
// never come) and refuses anything but a regular file: a device, FIFO or socket has no size to
// check against, and /dev/zero never ends. `st` receives the file's status.
Result<int> OpenRegularFile(const std::string& path, struct stat& st) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) {
      return UserError("file-not-found", "", "no such file: '" + path + "'",
                       "check the path; relative paths are relative to the working directory");
    }
    return UserError("read-failed", "", "could not open '" + path + "': " + ErrnoText(err));
  }
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return UserError("read-failed", "", "could not stat '" + path + "': " + ErrnoText(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return UserError("not-a-regular-file", "",
                     "'" + path + "' is " + KindOf(st.st_mode) + ", not a regular file",
                     "name a regular file");
  }
  return fd;
}

}  // namespace

Result<FileHead> ReadFileHead(const std::string& path, uint64_t n) {
  struct stat st;
  SCELLIS_ASSIGN_OR_RETURN(int opened, OpenRegularFile(path, st));
  Fd fd(opened);
  FileHead head;
  head.size = static_cast<uint64_t>(st.st_size);
  head.bytes.resize(static_cast<size_t>(std::min(n, head.size)));
  size_t got = 0;
  while (got < head.bytes.size()) {
    ssize_t r = ::read(fd.get(), head.bytes.data() + got, head.bytes.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return UserError("read-failed", "", "could not read '" + path + "': " + ErrnoText(errno));
    }
    if (r == 0) break;  // the file shrank since fstat; the whole read will notice
    got += static_cast<size_t>(r);
  }
  head.bytes.resize(got);
  return head;
}

Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes) {
  struct stat st;
  SCELLIS_ASSIGN_OR_RETURN(int opened, OpenRegularFile(path, st));
  Fd fd(opened);
  auto too_large = [&] {
    return UserError("file-too-large", "",
                     "'" + path + "' holds more than " + std::to_string(max_bytes) +
                         " bytes, the most accepted here");
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return too_large();

  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return UserError("read-failed", "", "could not read '" + path + "': " + ErrnoText(errno));
    }
    if (n == 0) break;
    if (static_cast<uint64_t>(n) > max_bytes - out.size()) return too_large();
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace scellis
