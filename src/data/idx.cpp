#include "data/idx.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>

#include "base/atomic_file.h"

namespace scellis::data {
namespace {

std::string Hex(uint8_t b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 15];
}

Diagnostic Truncated(const std::string& what) {
  return UserError("idx-truncated", "", what, "the file is cut short; download it again");
}

Diagnostic TooLarge(const std::string& what, uint64_t max_bytes) {
  return UserError("idx-too-large", "",
                   what + ", more than the limit of " + std::to_string(max_bytes) + " bytes");
}

// Ends an inflate stream on every path out of Gunzip.
class Inflater {
 public:
  Inflater() { ok_ = inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK; }  // 16: gzip wrapper only
  ~Inflater() {
    if (ok_) inflateEnd(&zs_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  bool ok() const { return ok_; }
  z_stream* stream() { return &zs_; }

 private:
  z_stream zs_{};
  bool ok_ = false;
};

// Called as the decompressed content grows: the content's whole length once its header tells it,
// 0 while that is not known yet.
using LengthOf = std::function<Result<uint64_t>(std::string_view)>;

// The largest IDX header: the magic number and 255 dimensions.
constexpr uint64_t kMaxIdxHeaderBytes = 4 + 4 * 255;

// Decompresses `in`, stopping as soon as the content exceeds max_bytes or the length its header
// declares, so a small hostile file cannot make it inflate gigabytes first.
Result<std::string> Gunzip(std::string_view in, uint64_t max_bytes, const LengthOf& length_of) {
  Inflater inflater;
  if (!inflater.ok()) return InternalError("idx", "zlib could not start an inflate stream");
  z_stream* zs = inflater.stream();
  std::string out;
  // The gzip trailer holds the size modulo 2^32: a hint for the allocation, trusted only up to
  // what deflate can reach (about 1032:1), so a small hostile file cannot reserve gigabytes.
  if (in.size() >= 18) {
    const auto* t = reinterpret_cast<const unsigned char*>(in.data() + in.size() - 4);
    uint64_t hint = t[0] | (t[1] << 8) | (t[2] << 16) | (uint64_t{t[3]} << 24);
    if (hint <= max_bytes && hint / 1032 <= in.size()) out.reserve(hint);
  }
  const auto* next = reinterpret_cast<const unsigned char*>(in.data());
  size_t left = in.size();
  constexpr size_t kMaxChunk = size_t{1} << 30;  // avail_in is 32 bits wide
  unsigned char buf[1 << 16];
  uint64_t expected = 0;
  for (;;) {
    if (zs->avail_in == 0 && left > 0) {
      size_t chunk = std::min(left, kMaxChunk);
      zs->next_in = const_cast<unsigned char*>(next);
      zs->avail_in = static_cast<uInt>(chunk);
      next += chunk;
      left -= chunk;
    }
    zs->next_out = buf;
    zs->avail_out = sizeof buf;
    int rc = inflate(zs, Z_NO_FLUSH);
    size_t produced = sizeof buf - zs->avail_out;
    if (produced > max_bytes - out.size()) {
      return TooLarge(
          "the gzip stream decompresses to more than " + std::to_string(out.size()) + " bytes",
          max_bytes);
    }
    out.append(reinterpret_cast<const char*>(buf), produced);
    if (expected == 0) {
      SCELLIS_ASSIGN_OR_RETURN(expected, length_of(out));
    }
    if (expected != 0 && out.size() > expected) {
      return UserError("idx-trailing-bytes", "",
                       "the gzip stream decompresses to more than the " + std::to_string(expected) +
                           " bytes of header and data the dimensions call for",
                       "the dimensions in the header do not match the data");
    }
    if (rc == Z_STREAM_END) {
      size_t remaining = zs->avail_in + left;
      if (remaining == 0) break;
      // Only another gzip member may follow (as `cat a.gz b.gz` makes).
      const unsigned char* rest = zs->avail_in > 0 ? zs->next_in : next;
      size_t here = zs->avail_in > 0 ? zs->avail_in : left;
      if (here < 2 || rest[0] != 0x1f || rest[1] != 0x8b) {
        return UserError("idx-bad-gzip", "",
                         std::to_string(remaining) + " bytes that are not gzip follow the stream");
      }
      if (inflateReset(zs) != Z_OK) return InternalError("idx", "zlib could not reset a stream");
      continue;
    }
    if (rc == Z_OK) continue;
    // Input is refilled before every call, so no progress means no input left.
    if (rc == Z_BUF_ERROR) {
      return Truncated("the gzip stream ends early, after " + std::to_string(out.size()) +
                       " decompressed bytes");
    }
    if (rc == Z_MEM_ERROR) return InternalError("idx", "zlib ran out of memory");
    return UserError("idx-bad-gzip", "",
                     std::string("the gzip stream is corrupt: ") + (zs->msg ? zs->msg : "error"),
                     "the file is damaged; download it again");
  }
  return out;
}

uint32_t Be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

uint64_t Be64(const unsigned char* p) {
  return (uint64_t{Be32(p)} << 32) | Be32(p + 4);
}

// The float nearest to d, saturating to +-infinity where the conversion would be undefined.
float DoubleToFloat(double d) {
  constexpr double kMax = std::numeric_limits<float>::max();
  constexpr double kOverflow = 0x1.ffffffp127;  // the largest float plus half its ulp
  if (d > kMax || d < -kMax) {
    bool inf = d >= kOverflow || d <= -kOverflow;
    float big = inf ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::max();
    return d < 0 ? -big : big;
  }
  return static_cast<float>(d);
}

int ElementSize(IdxType t) {
  switch (t) {
    case IdxType::kU8:
    case IdxType::kI8:
      return 1;
    case IdxType::kI16:
      return 2;
    case IdxType::kI32:
    case IdxType::kF32:
      return 4;
    case IdxType::kF64:
      return 8;
  }
  return 0;
}

// What an IDX header declares: enough to check the file's length before reading its body.
struct IdxHeader {
  IdxType type = IdxType::kU8;
  std::vector<int64_t> dims;
  uint64_t header_bytes = 0;
  uint64_t count = 0;       // elements
  uint64_t data_bytes = 0;  // count times the element size
  uint64_t total_bytes() const { return header_bytes + data_bytes; }
};

// Parses the header at the start of `head` (the whole content, or at least its header) and checks
// what it declares against the cap, before any product can overflow.
Result<IdxHeader> ParseIdxHeader(std::string_view head, uint64_t max_bytes) {
  const auto* b = reinterpret_cast<const unsigned char*>(head.data());
  const uint64_t size = head.size();
  if (size < 4) {
    return Truncated("the file holds " + std::to_string(size) +
                     " bytes, fewer than the 4 of an IDX magic number");
  }
  if (b[0] != 0 || b[1] != 0) {
    return UserError("idx-bad-magic", "",
                     "the file starts with " + Hex(b[0]) + " " + Hex(b[1]) +
                         ", not the 0x00 0x00 of an IDX magic number",
                     "this does not look like an IDX (MNIST-style) file");
  }
  IdxHeader h;
  h.type = static_cast<IdxType>(b[2]);
  int elem = ElementSize(h.type);
  if (elem == 0) {
    return UserError("idx-bad-type", "", "type code " + Hex(b[2]) + " is not an IDX type",
                     "IDX types are 0x08 u8, 0x09 i8, 0x0b i16, 0x0c i32, 0x0d f32, 0x0e f64");
  }
  int ndims = b[3];
  h.header_bytes = 4 + 4 * uint64_t(ndims);
  if (size < h.header_bytes) {
    return Truncated("the header declares " + std::to_string(ndims) + " dimensions (" +
                     std::to_string(h.header_bytes) + " bytes) but the file holds " +
                     std::to_string(size) + " bytes");
  }
  bool any_zero = false;
  for (int i = 0; i < ndims; ++i) {
    uint32_t d = Be32(b + 4 + 4 * i);
    h.dims.push_back(d);
    any_zero = any_zero || d == 0;
  }
  h.count = any_zero ? 0 : 1;
  const uint64_t max_count = max_bytes / static_cast<uint64_t>(elem);
  for (size_t i = 0; i < h.dims.size() && !any_zero; ++i) {
    uint64_t d = static_cast<uint64_t>(h.dims[i]);
    if (h.count > max_count / d) {
      std::string shape;
      for (int64_t e : h.dims) {
        if (!shape.empty()) shape += 'x';
        shape += std::to_string(e);
      }
      return TooLarge("dimensions " + shape + " call for more data", max_bytes);
    }
    h.count *= d;
  }
  h.data_bytes = h.count * static_cast<uint64_t>(elem);
  if (h.data_bytes > max_bytes - h.header_bytes) {
    return TooLarge("header and data take " + std::to_string(h.total_bytes()) + " bytes",
                    max_bytes);
  }
  return h;
}

// The content's length against what the header declares.
Status CheckIdxLength(const IdxHeader& h, uint64_t size) {
  const uint64_t data = size - h.header_bytes;
  if (data < h.data_bytes) {
    return Truncated("the dimensions call for " + std::to_string(h.data_bytes) +
                     " bytes of data but the file holds " + std::to_string(data));
  }
  if (data > h.data_bytes) {
    return UserError(
        "idx-trailing-bytes", "",
        std::to_string(data - h.data_bytes) + " bytes follow the data the dimensions call for",
        "the dimensions in the header do not match the data");
  }
  return Status::Ok();
}

// `count` elements of `type` at `p` (big-endian) as floats: exact for u8, i8, i16 and f32; i32 and
// f64 round to nearest. The one conversion of every reader, whole or by rows.
void ConvertElements(IdxType type, const unsigned char* p, uint64_t count, float* v) {
  switch (type) {
    case IdxType::kU8:
      for (uint64_t i = 0; i < count; ++i) v[i] = p[i];
      break;
    case IdxType::kI8:
      for (uint64_t i = 0; i < count; ++i) v[i] = static_cast<int8_t>(p[i]);
      break;
    case IdxType::kI16:
      for (uint64_t i = 0; i < count; ++i) {
        v[i] = static_cast<int16_t>((p[2 * i] << 8) | p[2 * i + 1]);
      }
      break;
    case IdxType::kI32:
      for (uint64_t i = 0; i < count; ++i) {
        v[i] = static_cast<float>(static_cast<int32_t>(Be32(p + 4 * i)));
      }
      break;
    case IdxType::kF32:
      for (uint64_t i = 0; i < count; ++i) v[i] = std::bit_cast<float>(Be32(p + 4 * i));
      break;
    case IdxType::kF64:
      for (uint64_t i = 0; i < count; ++i) {
        v[i] = DoubleToFloat(std::bit_cast<double>(Be64(p + 8 * i)));
      }
      break;
  }
}

Result<IdxArray> ParseIdx(std::string_view file, uint64_t max_bytes) {
  if (file.size() > max_bytes) {
    return TooLarge("the IDX content holds " + std::to_string(file.size()) + " bytes", max_bytes);
  }
  SCELLIS_ASSIGN_OR_RETURN(IdxHeader h, ParseIdxHeader(file, max_bytes));
  SCELLIS_TRY(CheckIdxLength(h, file.size()));
  const auto* b = reinterpret_cast<const unsigned char*>(file.data());
  const IdxType type = h.type;
  const uint64_t count = h.count;
  const uint64_t header = h.header_bytes;
  IdxArray out;
  out.type = type;
  out.dims = std::move(h.dims);
  out.values.resize(count);
  ConvertElements(type, b + header, count, out.values.data());
  return out;
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// A gzipped IDX file inflated, its length bounded by the header it starts with.
Result<std::string> GunzipIdx(std::string_view file, uint64_t max_bytes) {
  auto length_of = [max_bytes](std::string_view head) -> Result<uint64_t> {
    if (head.size() < kMaxIdxHeaderBytes) return uint64_t{0};
    SCELLIS_ASSIGN_OR_RETURN(IdxHeader h, ParseIdxHeader(head, max_bytes));
    return h.total_bytes();
  };
  return Gunzip(file, max_bytes, length_of);
}

}  // namespace

Result<IdxArray> DecodeIdx(std::string_view file, uint64_t max_bytes) {
  if (IsGzip(file)) {
    SCELLIS_ASSIGN_OR_RETURN(std::string raw, GunzipIdx(file, max_bytes));
    return ParseIdx(raw, max_bytes);
  }
  return ParseIdx(file, max_bytes);
}

namespace {

// A plain IDX file's header checked against the file's size, before its body is read.
Status CheckIdxFileHead(const std::string& path, uint64_t max_bytes) {
  SCELLIS_ASSIGN_OR_RETURN(FileHead head, ReadFileHead(path, kMaxIdxHeaderBytes));
  if (head.size > max_bytes) {
    return UserError("file-too-large", "",
                     "the file holds " + std::to_string(head.size) + " bytes, more than the " +
                         std::to_string(max_bytes) + " accepted here");
  }
  const std::string& b = head.bytes;
  if (b.size() >= 2 && static_cast<unsigned char>(b[0]) == 0x1f &&
      static_cast<unsigned char>(b[1]) == 0x8b) {
    return Status::Ok();  // gzipped: the header is checked as the stream inflates
  }
  SCELLIS_ASSIGN_OR_RETURN(IdxHeader h, ParseIdxHeader(b, max_bytes));
  return CheckIdxLength(h, head.size);
}

}  // namespace

Result<IdxArray> ReadIdx(const std::string& path, uint64_t max_bytes) {
  Result<IdxArray> r = [&]() -> Result<IdxArray> {
    SCELLIS_TRY(CheckIdxFileHead(path, max_bytes));
    SCELLIS_ASSIGN_OR_RETURN(std::string file, ReadFile(path, max_bytes));
    return DecodeIdx(file, max_bytes);
  }();
  if (r.ok()) return r;
  std::vector<Diagnostic> errors = r.errors();
  for (Diagnostic& d : errors) d.message = "'" + path + "': " + d.message;
  return Status(std::move(errors));
}

Result<std::string> InflateIdx(const std::string& path, uint64_t max_bytes) {
  Result<std::string> r = [&]() -> Result<std::string> {
    SCELLIS_TRY(CheckIdxFileHead(path, max_bytes));
    SCELLIS_ASSIGN_OR_RETURN(std::string file, ReadFile(path, max_bytes));
    std::string raw;
    if (IsGzip(file)) {
      SCELLIS_ASSIGN_OR_RETURN(raw, GunzipIdx(file, max_bytes));
    } else {
      raw = std::move(file);
    }
    SCELLIS_ASSIGN_OR_RETURN(IdxHeader h, ParseIdxHeader(raw, max_bytes));
    SCELLIS_TRY(CheckIdxLength(h, raw.size()));
    return raw;
  }();
  if (r.ok()) return r;
  std::vector<Diagnostic> errors = r.errors();
  for (Diagnostic& d : errors) d.message = "'" + path + "': " + d.message;
  return Status(std::move(errors));
}

Result<bool> IsGzipFile(const std::string& path) {
  SCELLIS_ASSIGN_OR_RETURN(FileHead head, ReadFileHead(path, 2));
  return IsGzip(head.bytes);
}

Result<IdxRows> IdxRows::Open(const std::string& path, uint64_t max_bytes) {
  auto fail = [&](Status s) {
    std::vector<Diagnostic> errors = s.errors();
    for (Diagnostic& d : errors) d.message = "'" + path + "': " + d.message;
    return Status(std::move(errors));
  };
  Result<FileHead> head = ReadFileHead(path, kMaxIdxHeaderBytes);
  if (!head.ok()) return fail(Status(head.errors()));
  const std::string& b = head->bytes;
  if (b.size() >= 2 && static_cast<unsigned char>(b[0]) == 0x1f &&
      static_cast<unsigned char>(b[1]) == 0x8b) {
    return fail(UserError("idx-gzipped", "", "a gzipped IDX file cannot be read at offsets",
                          "inflate it first (the trainer keeps an inflated copy in the store)"));
  }
  Result<IdxHeader> h = ParseIdxHeader(b, max_bytes);
  if (!h.ok()) return fail(Status(h.errors()));
  if (Status s = CheckIdxLength(*h, head->size); !s.ok()) return fail(s);
  if (h->dims.empty())
    return fail(UserError("idx-no-rows", "", "the file holds a scalar, no rows"));
  IdxRows r;
  r.type_ = h->type;
  r.dims_ = h->dims;
  r.header_bytes_ = static_cast<int64_t>(h->header_bytes);
  r.element_bytes_ = ElementSize(h->type);
  r.row_elements_ = 1;
  for (size_t i = 1; i < h->dims.size(); ++i) r.row_elements_ *= h->dims[i];
  r.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r.fd_ < 0)
    return fail(UserError("read-failed", "", std::string("cannot open: ") + std::strerror(errno)));
  r.path_ = path;
  return r;
}

IdxRows::IdxRows(IdxRows&& o) noexcept {
  *this = std::move(o);
}

IdxRows& IdxRows::operator=(IdxRows&& o) noexcept {
  if (this == &o) return *this;
  if (fd_ >= 0) ::close(fd_);
  type_ = o.type_;
  dims_ = std::move(o.dims_);
  header_bytes_ = o.header_bytes_;
  element_bytes_ = o.element_bytes_;
  row_elements_ = o.row_elements_;
  path_ = std::move(o.path_);
  fd_ = o.fd_;
  o.fd_ = -1;
  return *this;
}

IdxRows::~IdxRows() {
  if (fd_ >= 0) ::close(fd_);
}

Status IdxRows::Read(int64_t first, int64_t count, float* out) const {
  if (first < 0 || count < 0 || first + count > rows())
    return InternalError("data.IdxRows", "rows beyond the file's " + std::to_string(rows()));
  const int64_t bytes = count * row_elements_ * element_bytes_;
  buffer_.resize(static_cast<size_t>(bytes));
  int64_t done = 0;
  const int64_t at = header_bytes_ + first * row_elements_ * element_bytes_;
  while (done < bytes) {
    const ssize_t n = ::pread(fd_, buffer_.data() + done, static_cast<size_t>(bytes - done),
                              static_cast<off_t>(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return UserError(
          "read-failed", "",
          "'" + path_ + "': " + (n < 0 ? std::string(std::strerror(errno)) : "the file shrank"));
    }
    done += n;
  }
  ConvertElements(type_, buffer_.data(), static_cast<uint64_t>(count * row_elements_), out);
  return Status::Ok();
}

std::optional<std::string> FindFashionMnistDir() {
  auto complete = [](const std::string& dir) {
    for (const char* name : {kFashionMnistTrainImages, kFashionMnistTrainLabels,
                             kFashionMnistTestImages, kFashionMnistTestLabels}) {
      if (!IsRegularFile(dir + "/" + name)) return false;
    }
    return true;
  };
  if (const char* env = std::getenv("SCELLIS_FASHION_MNIST_DIR"); env != nullptr && *env) {
    if (complete(env)) return std::string(env);
    return std::nullopt;
  }
  const std::string debian = "/usr/share/datasets/fashion-mnist";
  if (complete(debian)) return debian;
  return std::nullopt;
}

}  // namespace scellis::data
