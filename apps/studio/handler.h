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
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/browser_jobs.h"
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
  // The browser tab's conformance jobs in progress.
  api::BrowserJobs& browser_jobs() { return browser_jobs_; }

 private:
  Engine(EngineOptions o, store::Store s) : options_(std::move(o)), store_(std::move(s)) {}
  EngineOptions options_;
  store::Store store_;
  std::string backend_;
  std::optional<std::string> fallback_reason_;
  std::mutex worker_;
  api::BrowserJobs browser_jobs_;
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
