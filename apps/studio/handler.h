// The Studio server's requests, as a plain function: (method, path, content type, body) in,
// (status, content type, body or a stream of ndjson lines) out, over an engine context. The HTTP
// adapter (serve.h) maps real requests onto it; the tests call it without a socket.
//
// Every endpoint parses the request, calls the engine's facade (pipeline::Compile, api::Run,
// train::Trainer, api::Conform, store::Store) and prints the engine's own JSON. docs/studio_api.md
// is the contract.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/conform.h"
#include "base/json_util.h"
#include "base/result.h"
#include "runtime/backends/select.h"
#include "store/store.h"

namespace scellis::studio {

inline constexpr size_t kDefaultMaxRequestBytes = size_t{16} << 20;

struct EngineOptions {
  std::string store_root;         // "" : the store's default root
  runtime::SelectOptions select;  // the backend runs and training use
  std::string web_dir;  // the built Studio (web/dist); missing: a page says how to build it
  size_t max_request_bytes = kDefaultMaxRequestBytes;
};

// Conformance of the browser tab in progress: the cases handed out for one op, and the outputs the
// tab has sent back so far, until it asks for the judgement. The server keeps only a few (the
// oldest is dropped), each for a bounded number of answer bytes.
struct TabConformJob {
  std::string tier, op;
  uint64_t seed = 0;
  api::BrowserAdapter adapter;        // as the tab described it
  std::vector<std::string> case_ids;  // in order; "" for a case that cannot run
  std::vector<int64_t> output_bytes;  // expected per case
  // Per case: the bytes of the first run and of the debug rerun, appended chunk by chunk in order.
  std::vector<std::vector<std::byte>> runs[2];
  std::vector<std::string> errors;  // per case: the tab's run failed
};
inline constexpr size_t kMaxTabConformJobs = 4;

// What every request shares: the store, the backend choice, and the one worker that device work
// (runs, training, conformance, the probe) takes in turn — the device is single-threaded.
// Compiling touches no device and is not serialised.
class Engine {
 public:
  // Opens the store (nothing is created until something is written) and asks the backend
  // selection once, for what the server reports about itself.
  static Result<std::unique_ptr<Engine>> Open(EngineOptions options);

  const EngineOptions& options() const { return options_; }
  const store::Store& store() const { return store_; }
  // The backend the selection chose at start, with why when `auto` fell back.
  const std::string& backend() const { return backend_; }
  const std::optional<std::string>& fallback_reason() const { return fallback_reason_; }
  std::mutex& worker() { return worker_; }
  // Browser conformance jobs by id, under their own lock.
  std::mutex& tab_jobs_lock() { return tab_jobs_lock_; }
  std::map<std::string, TabConformJob>& tab_jobs() { return tab_jobs_; }
  std::vector<std::string>& tab_job_order() { return tab_job_order_; }

 private:
  Engine(EngineOptions o, store::Store s) : options_(std::move(o)), store_(std::move(s)) {}
  EngineOptions options_;
  store::Store store_;
  std::string backend_;
  std::optional<std::string> fallback_reason_;
  std::mutex worker_;
  std::mutex tab_jobs_lock_;
  std::map<std::string, TabConformJob> tab_jobs_;
  std::vector<std::string> tab_job_order_;
};

struct Request {
  std::string method;        // "GET", "POST", ...
  std::string path;          // without the query; percent-decoded by the adapter
  std::string content_type;  // the header as sent ("" when absent)
  std::string body;
};

// Writes one ndjson line (without its newline); false when the client has gone.
using LineWriter = std::function<bool(const std::string& line)>;

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Set for streamed answers (application/x-ndjson): called once, on the connection's thread,
  // after the status line is sent; `body` is then empty.
  std::function<void(const LineWriter&)> stream;
};

Response Handle(Engine& engine, const Request& request);

// The built Studio's directory this build recorded at configure time (web/dist of its source
// tree), for when --web-dir is not given.
const char* DefaultWebDir();

// The error body of the contract: {"error": {"code", "message", "pointer", "help"},
// "diagnostics": [...]}; `document` resolves each diagnostic's node id.
Json ErrorBody(const std::vector<Diagnostic>& diagnostics, const Json* document = nullptr);

}  // namespace scellis::studio
