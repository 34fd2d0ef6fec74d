#include "store/store.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "base/atomic_file.h"
#include "base/sha256.h"

namespace scellis::store {
namespace fs = std::filesystem;

namespace {

constexpr const char* kIdPrefix = "sha256:";
// Objects are small JSON records; anything larger is not one of ours.
constexpr uint64_t kMaxObjectBytes = uint64_t{64} << 20;

bool IsHex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool IsName(const std::string& s) {
  return !s.empty() && s.size() <= 128 && s != "." && s != ".." &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
         });
}

// The hex part of "sha256:<hex>", or "" when `id` is not an object id.
std::string HexOf(const std::string& id) {
  if (id.rfind(kIdPrefix, 0) != 0) return "";
  std::string hex = id.substr(std::char_traits<char>::length(kIdPrefix));
  return IsHex64(hex) ? hex : "";
}

Status MakeDirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return UserError("store-unwritable", "",
                     "cannot create the store directory " + dir.string() + ": " + ec.message(),
                     "point SCELLIS_STORE at a writable directory");
  }
  return Status::Ok();
}

}  // namespace

std::string Store::DefaultRoot() {
  if (const char* s = std::getenv("SCELLIS_STORE"); s && *s) return s;
  if (const char* h = std::getenv("HOME"); h && *h)
    return (fs::path(h) / ".local" / "share" / "scellis" / "store").string();
  return "";
}

Result<Store> Store::Open(const std::string& root) {
  std::string r = root.empty() ? DefaultRoot() : root;
  if (r.empty()) {
    return UserError("store-unavailable", "",
                     "no store location: neither SCELLIS_STORE nor HOME is set",
                     "set SCELLIS_STORE to a directory for receipts and other artifacts");
  }
  return Store(std::move(r));
}

std::string Store::ObjectPath(const std::string& hex) const {
  return (fs::path(root_) / "objects" / hex.substr(0, 2) / (hex + ".json")).string();
}

std::string Store::IndexDir(const std::string& kind, const std::string& profile,
                            const std::string& key) const {
  // 32 hex digits of the profile's hash keep the path short and free of odd characters.
  return (fs::path(root_) / "index" / kind / Sha256Hex(profile).substr(0, 32) / key).string();
}

std::string Store::BlobPath(const std::string& hex) const {
  return (fs::path(root_) / "blobs" / hex.substr(0, 2) / hex).string();
}

Result<std::string> Store::PutBlob(std::string_view bytes) const {
  std::string hex = Sha256Hex(bytes);
  std::string path = BlobPath(hex);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    SCELLIS_TRY(MakeDirs(fs::path(path).parent_path()));
    SCELLIS_TRY(WriteFileAtomic(path, bytes));
  }
  return kIdPrefix + hex;
}

Result<std::string> Store::GetBlob(const std::string& id) const {
  std::string hex = HexOf(id);
  if (hex.empty()) {
    return UserError("bad-object-id", "", "\"" + id + "\" is not an object id",
                     "ids look like sha256:<64 hex digits>");
  }
  std::string path = BlobPath(hex);
  std::error_code ec;
  if (!fs::exists(path, ec))
    return UserError("store-object-missing", "", "the store at " + root_ + " has no blob " + id);
  SCELLIS_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path, uint64_t{1} << 34));
  if (Sha256Hex(bytes) != hex) {
    return UserError("store-object-corrupt", "",
                     "the stored blob " + path + " does not match its name " + id,
                     "delete the file; whatever it recorded must be produced again");
  }
  return bytes;
}

Result<std::string> Store::Put(const Json& object) const {
  std::string text = CanonicalJson(object);
  std::string hex = Sha256Hex(text);
  std::string path = ObjectPath(hex);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    SCELLIS_TRY(MakeDirs(fs::path(path).parent_path()));
    Status s = WriteFileAtomic(path, text + "\n");
    if (!s.ok()) return s;
  }
  return kIdPrefix + hex;
}

bool Store::Contains(const std::string& id) const {
  std::string hex = HexOf(id);
  std::error_code ec;
  return !hex.empty() && fs::exists(ObjectPath(hex), ec);
}

Result<Json> Store::Get(const std::string& id) const {
  std::string hex = HexOf(id);
  if (hex.empty()) {
    return UserError("bad-object-id", "", "\"" + id + "\" is not an object id",
                     "ids look like sha256:<64 hex digits>");
  }
  std::string path = ObjectPath(hex);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return UserError("store-object-missing", "", "the store at " + root_ + " has no object " + id);
  }
  auto text = ReadFile(path, kMaxObjectBytes);
  if (!text.ok()) return text.status();
  auto j = ParseUntrustedJson(text.value());
  if (!j.ok() || Sha256Hex(CanonicalJson(j.value())) != hex) {
    return UserError("store-object-corrupt", "",
                     "the stored object " + path + " does not match its name " + id,
                     "delete the file; whatever it recorded must be produced again");
  }
  return j;
}

Status Store::Index(const std::string& kind, const std::string& profile, const std::string& key,
                    const std::string& id) const {
  std::string hex = HexOf(id);
  if (!IsName(kind) || !IsName(key) || hex.empty()) {
    return InternalError("store.Index", "bad index entry (" + kind + ", " + key + ", " + id + ")");
  }
  if (!Contains(id))
    return InternalError("store.Index", "indexing " + id + ", which is not stored");
  fs::path dir = IndexDir(kind, profile, key);
  fs::path entry = dir / hex;
  std::error_code ec;
  if (fs::exists(entry, ec)) return Status::Ok();
  SCELLIS_TRY(MakeDirs(dir));
  return WriteFileAtomic(entry.string(), "");
}

std::vector<std::string> Store::Lookup(const std::string& kind, const std::string& profile,
                                       const std::string& key) const {
  std::vector<std::string> ids;
  if (!IsName(kind) || !IsName(key)) return ids;
  std::error_code ec;
  for (fs::directory_iterator it(IndexDir(kind, profile, key), ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (IsHex64(name)) ids.push_back(kIdPrefix + name);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace scellis::store
