// The HTTP adapter: cpp-httplib serving Handle() (handler.h). Binds loopback by default, caps
// request bodies before reading them whole, times out slow clients, and streams ndjson answers
// with chunked transfer encoding, one line per event as it happens.
#pragma once

#include <memory>
#include <string>

#include "base/result.h"
#include "handler.h"

namespace scellis::studio {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8737;  // 0: any free port (Bind says which)
  int read_timeout_seconds = 30;
  int write_timeout_seconds = 60;
};

class Server {
 public:
  Server(Engine& engine, ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the socket; the port bound (the free one chosen for port 0), or `bind-failed`.
  Result<int> Bind();
  // Serves until Stop (from another thread or a signal handler's thread). Bind first.
  void Run();
  void Stop();
  // Whether Run is accepting connections (tests wait for it before their first request).
  bool Running() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace scellis::studio
