#include "store/store.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
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

// Every "sha256:<hex>" string anywhere in `j` (the ids an object refers to).
void CollectIds(const Json& j, std::vector<std::string>& ids) {
  if (j.is_string()) {
    const std::string& v = j.get_ref<const std::string&>();
    if (!HexOf(v).empty()) ids.push_back(v);
  } else if (j.is_structured()) {
    for (const Json& e : j) CollectIds(e, ids);
  }
}

// The files of one section of the store ("objects" or "blobs"): hex name -> path. Files that
// are not named like stored content (temporaries of an interrupted write) are passed over.
std::map<std::string, fs::path> Section(const fs::path& root, const std::string& name,
                                        const std::string& suffix) {
  std::map<std::string, fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root / name, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string file = it->path().filename().string();
    if (file.size() <= suffix.size() || file.substr(file.size() - suffix.size()) != suffix)
      continue;
    std::string hex = file.substr(0, file.size() - suffix.size());
    if (IsHex64(hex)) files.emplace(hex, it->path());
  }
  return files;
}

struct IndexEntry {
  fs::path path;
  std::string hex;
};
std::vector<IndexEntry> IndexEntries(const fs::path& root) {
  std::vector<IndexEntry> entries;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root / "index", ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string file = it->path().filename().string();
    if (it->is_regular_file(ec) && IsHex64(file)) entries.push_back({it->path(), file});
  }
  return entries;
}

Diagnostic Corrupt(const fs::path& path, const std::string& id, const std::string& what) {
  return UserError("store-object-corrupt", "",
                   "the stored " + what + " " + path.string() + " does not match its name " + id,
                   "delete the file; whatever it recorded must be produced again");
}

// Writes a file whose name is its content's (an object, a blob, an index entry). Each write first
// sweeps stale temporaries of its target, which would take the temporary of another writer of the
// same file, failing its rename: the threads of a process (a run on a worker thread and one on the
// caller's, the Studio's requests) take turns, and one that finds the file written meanwhile is
// done. Another process's write may still take ours: it is tried again, and done when the file is
// in place (the same bytes, by its name).
Status WriteNamedFile(const std::string& path, std::string_view bytes, Flush flush) {
  static std::mutex turns;
  std::lock_guard<std::mutex> turn(turns);
  Status s = Status::Ok();
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::error_code ec;
    if (fs::exists(path, ec)) return Status::Ok();
    s = WriteFileAtomic(path, bytes, flush);
    if (s.ok()) return s;
  }
  return s;
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
    SCELLIS_TRY(WriteNamedFile(path, bytes, flush_));
  }
  return kIdPrefix + hex;
}

bool Store::IsId(const std::string& id) {
  return !HexOf(id).empty();
}

std::string Store::BlobFile(const std::string& id) const {
  const std::string hex = HexOf(id);
  return hex.empty() ? "" : BlobPath(hex);
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
    Status s = WriteNamedFile(path, text + "\n", flush_);
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
  return WriteNamedFile(entry.string(), "", flush_);
}

Status Store::Replace(const std::string& kind, const std::string& profile, const std::string& key,
                      const std::string& id) const {
  SCELLIS_TRY(Index(kind, profile, key, id));
  const std::string keep = HexOf(id);
  std::error_code ec;
  for (fs::directory_iterator it(IndexDir(kind, profile, key), ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code rm;
    if (IsHex64(name) && name != keep) fs::remove(it->path(), rm);
  }
  return Status::Ok();
}

bool Store::DiscardIfCorrupt(const std::string& id) const {
  const std::string hex = HexOf(id);
  if (hex.empty()) return false;
  std::error_code ec;
  std::string path = ObjectPath(hex);
  bool sound;
  if (fs::exists(path, ec)) {
    sound = Get(id).ok();
  } else {
    path = BlobPath(hex);
    if (!fs::exists(path, ec)) return false;
    auto bytes = ReadFile(path, uint64_t{1} << 34);
    sound = bytes.ok() && Sha256Hex(bytes.value()) == hex;
  }
  return !sound && fs::remove(path, ec);
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

std::vector<std::string> Store::Keys(const std::string& kind, const std::string& profile) const {
  std::vector<std::string> keys;
  if (!IsName(kind)) return keys;
  std::error_code ec;
  fs::path dir = fs::path(root_) / "index" / kind / Sha256Hex(profile).substr(0, 32);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (IsName(name)) keys.push_back(name);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<Diagnostic> Store::Verify() const {
  std::vector<Diagnostic> problems;
  const fs::path root(root_);
  auto objects = Section(root, "objects", ".json");
  for (const auto& [hex, path] : objects) {
    auto got = Get(kIdPrefix + hex);
    if (!got.ok()) problems.push_back(Corrupt(path, kIdPrefix + hex, "object"));
  }
  for (const auto& [hex, path] : Section(root, "blobs", "")) {
    auto bytes = ReadFile(path.string(), uint64_t{1} << 34);
    if (!bytes.ok() || Sha256Hex(bytes.value()) != hex)
      problems.push_back(Corrupt(path, kIdPrefix + hex, "blob"));
  }
  for (const IndexEntry& e : IndexEntries(root)) {
    if (objects.count(e.hex)) continue;
    problems.push_back(UserError("store-index-dangling", "",
                                 "the index entry " + e.path.string() + " names " + kIdPrefix +
                                     e.hex + ", which the store no longer holds",
                                 "scellis store gc removes it"));
  }
  return problems;
}

Result<Store::GcResult> Store::Gc(const std::function<bool(const Json&)>& is_root,
                                  bool dry_run) const {
  GcResult result;
  const fs::path root(root_);
  auto objects = Section(root, "objects", ".json");
  auto blobs = Section(root, "blobs", "");
  std::set<std::string> keep;  // hex names
  std::deque<std::string> todo;
  auto reach = [&](const std::string& hex) {
    if (keep.insert(hex).second) todo.push_back(hex);
  };
  std::vector<IndexEntry> dangling;
  for (const IndexEntry& e : IndexEntries(root)) {
    if (objects.count(e.hex))
      reach(e.hex);
    else
      dangling.push_back(e);
  }
  std::set<std::string> corrupt;
  for (const auto& [hex, path] : objects) {
    auto j = Get(kIdPrefix + hex);
    if (!j.ok()) {
      corrupt.insert(hex);  // not ours to judge here: Verify reports it
      continue;
    }
    if (is_root && is_root(j.value())) reach(hex);
  }
  while (!todo.empty()) {
    std::string hex = todo.front();
    todo.pop_front();
    if (!objects.count(hex) || corrupt.count(hex)) continue;  // a blob, or unreadable
    auto j = Get(kIdPrefix + hex);
    if (!j.ok()) continue;
    std::vector<std::string> ids;
    CollectIds(j.value(), ids);
    for (const std::string& id : ids) reach(HexOf(id));
  }
  auto sweep = [&](const std::map<std::string, fs::path>& files) -> Status {
    for (const auto& [hex, path] : files) {
      if (keep.count(hex) || corrupt.count(hex)) {
        ++result.kept;
        continue;
      }
      std::error_code ec;
      result.removed_bytes += static_cast<int64_t>(fs::file_size(path, ec));
      result.removed.push_back(kIdPrefix + hex);
      if (!dry_run && !fs::remove(path, ec) && ec) {
        return UserError("store-unwritable", "",
                         "cannot remove " + path.string() + ": " + ec.message());
      }
    }
    return Status::Ok();
  };
  // Blobs a corrupt object might have named are kept: it cannot be read to tell.
  if (!corrupt.empty()) {
    for (const auto& [hex, path] : blobs) keep.insert(hex);
  }
  SCELLIS_TRY(sweep(objects));
  SCELLIS_TRY(sweep(blobs));
  result.dangling_entries = static_cast<int64_t>(dangling.size());
  if (!dry_run) {
    for (const IndexEntry& e : dangling) {
      std::error_code ec;
      fs::remove(e.path, ec);
    }
  }
  return result;
}

}  // namespace scellis::store
