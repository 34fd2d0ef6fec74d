// A small content-addressed store for the artifacts that make runs trustworthy and reproducible
// (receipts now; documents, plans and run records later).
//
// Layout under the root ($SCELLIS_STORE, else $HOME/.local/share/scellis/store):
//   objects/<h0h1>/<hex>.json               one JSON object, named by the SHA-256 of its canonical
//                                           form (see CanonicalJson); its id is "sha256:<hex>"
//   blobs/<h0h1>/<hex>                      bytes (weights, tensors), named by their SHA-256
//   index/<kind>/<profile hash>/<key>/<hex> one empty file per indexed object, so lookups by
//                                           (kind, device profile, key) list one directory
// Every file is written atomically, and an index entry only after its object, so a reader never
// sees a half-written object or an entry without one. Adding never rewrites an existing file, so
// concurrent writers cannot lose each other's entries. Objects are checked against their name
// when read: a corrupted object is an error, never trusted.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/json_util.h"
#include "base/result.h"

namespace scellis::store {

class Store {
 public:
  // The store at `root`, or at the default location when `root` is empty. Nothing is created
  // until something is written.
  static Result<Store> Open(const std::string& root = "");
  // $SCELLIS_STORE, else $HOME/.local/share/scellis/store; "" when neither is set.
  static std::string DefaultRoot();

  const std::string& root() const { return root_; }
  // This store, writing without flushing to disk (base/atomic_file.h, Flush::kNone): for caches,
  // whose every value is checked against its name when read, so a value a crash tore is refused
  // and made again. Records, receipts and documents are always written with flushes.
  Store WithoutFlush() const {
    Store s = *this;
    s.flush_ = Flush::kNone;
    return s;
  }
  // Whether `id` has the form of an object or blob id: "sha256:" and 64 lowercase hex digits.
  static bool IsId(const std::string& id);

  // Stores `object` (idempotent) and returns its id, "sha256:<hex>".
  Result<std::string> Put(const Json& object) const;
  // The object with this id; `store-object-missing` or `store-object-corrupt` otherwise.
  Result<Json> Get(const std::string& id) const;
  bool Contains(const std::string& id) const;
  // Stores bytes (idempotent) and returns their id, "sha256:<hex>"; GetBlob checks them against
  // it (`store-object-missing`, `store-object-corrupt`).
  Result<std::string> PutBlob(std::string_view bytes) const;
  Result<std::string> GetBlob(const std::string& id) const;
  // The file that holds (or would hold) blob `id`, for a reader that reads it at offsets rather
  // than whole; such a reader checks the file against the id itself. "" for a malformed id.
  std::string BlobFile(const std::string& id) const;

  // Files object `id` under (kind, profile, key). `kind` and `key` are short names (letters,
  // digits, '_', '-', '.'); the profile may be any string (it is hashed for the path).
  Status Index(const std::string& kind, const std::string& profile, const std::string& key,
               const std::string& id) const;
  // Files `id` under (kind, profile, key) as Index does, then removes the other entries of that
  // key: for caches, whose key names one current value. Concurrent writers may leave two entries
  // for a moment; a reader takes any sound one.
  Status Replace(const std::string& kind, const std::string& profile, const std::string& key,
                 const std::string& id) const;
  // Ids filed under (kind, profile, key), sorted; empty when there are none (or no store yet).
  std::vector<std::string> Lookup(const std::string& kind, const std::string& profile,
                                  const std::string& key) const;
  // The keys that hold entries under (kind, profile), sorted; empty when there are none.
  std::vector<std::string> Keys(const std::string& kind, const std::string& profile) const;

  // Re-hashes every object and blob and checks every index entry: one `store-object-corrupt`
  // diagnostic per file whose content does not match its name, one `store-index-dangling` per
  // index entry whose object is gone. Empty when the store is sound (or does not exist yet).
  std::vector<Diagnostic> Verify() const;

  // Removes the object or blob `id` if its file no longer matches its name (checked again here,
  // so a sound file is never removed), so that the value can be stored again under it. True when
  // a corrupt file was removed.
  bool DiscardIfCorrupt(const std::string& id) const;

  // Removes what nothing refers to. The roots are every indexed object (run records, receipts)
  // and every object `is_root` accepts (records written by front ends that do not index them);
  // whatever a kept object names ("sha256:<hex>" anywhere in its JSON) is kept too, transitively.
  // Corrupt files are left for Verify to report; index entries whose object is gone are removed.
  // With `dry_run` nothing is removed: the result says what would be.
  struct GcResult {
    std::vector<std::string> removed;  // ids of the objects and blobs removed (or to be)
    int64_t removed_bytes = 0;
    int64_t kept = 0;              // objects and blobs kept
    int64_t dangling_entries = 0;  // index entries removed (or to be)
  };
  Result<GcResult> Gc(const std::function<bool(const Json&)>& is_root, bool dry_run) const;

 private:
  explicit Store(std::string root) : root_(std::move(root)) {}
  std::string ObjectPath(const std::string& hex) const;
  std::string BlobPath(const std::string& hex) const;
  std::string IndexDir(const std::string& kind, const std::string& profile,
                       const std::string& key) const;

  std::string root_;
  Flush flush_ = Flush::kToDisk;
};

}  // namespace scellis::store
