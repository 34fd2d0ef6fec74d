#include "serve.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace scellis::studio {

struct Server::Impl {
  Engine& engine;
  ServeOptions options;
  httplib::Server http;
  // Stop may come before Run has begun listening (a signal at start-up): these make it stick.
  std::atomic<bool> started{false}, stopped{false}, finished{false};
  Impl(Engine& e, ServeOptions o) : engine(e), options(std::move(o)) {}
};

namespace {

void Serve(Engine& engine, const httplib::Request& req, httplib::Response& res) {
  Request request{req.method, req.path, req.get_header_value("Content-Type"), req.body};
  Response out = Handle(engine, request);
  res.status = out.status;
  if (!out.stream) {
    res.set_content(out.body, out.content_type);
    return;
  }
  auto stream = std::make_shared<std::function<void(const LineWriter&)>>(std::move(out.stream));
  res.set_chunked_content_provider(
      out.content_type, [stream](size_t, httplib::DataSink& sink) {
        (*stream)([&sink](const std::string& line) {
          const std::string text = line + "\n";
          return sink.is_writable() && sink.write(text.data(), text.size());
        });
        sink.done();
        return true;
      });
}

}  // namespace

Server::Server(Engine& engine, ServeOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(options))) {
  httplib::Server& http = impl_->http;
  Engine& e = engine;
  // The cap is enforced twice: here before a body is read (httplib answers 413 from the
  // Content-Length, or once a chunked body passes it), and by Handle for any body it is given.
  http.set_payload_max_length(e.options().max_request_bytes);
  http.set_read_timeout(impl_->options.read_timeout_seconds, 0);
  http.set_write_timeout(impl_->options.write_timeout_seconds, 0);
  auto handler = [&e](const httplib::Request& req, httplib::Response& res) { Serve(e, req, res); };
  http.Get(".*", handler);
  http.Post(".*", handler);
  http.Put(".*", handler);
  http.Patch(".*", handler);
  http.Delete(".*", handler);
  http.Options(".*", handler);
  // Answers httplib gives itself (a body over the cap, a request it cannot parse) get the same
  // JSON error body as every other refusal.
  http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string code = res.status == 413 ? "request-too-large" : "bad-request";
    std::string message = res.status == 413 ? "the request body is over the server's cap"
                                            : "the request could not be read";
    res.set_content(ErrorBody({UserError(code, "", message)}).dump(), "application/json");
  });
}

Server::~Server() {
  Stop();
}

Result<int> Server::Bind() {
  httplib::Server& http = impl_->http;
  const ServeOptions& o = impl_->options;
  int port = o.port;
  if (port == 0) {
    port = http.bind_to_any_port(o.host);
    if (port > 0) return port;
  } else if (http.bind_to_port(o.host, port)) {
    return port;
  }
  return UserError("bind-failed", "",
                   "cannot listen on " + o.host + ":" + std::to_string(o.port),
                   "another program may hold the port: pick another with --port, or --port 0 "
                   "for any free one");
}

void Server::Run() {
  impl_->started = true;
  if (!impl_->stopped) impl_->http.listen_after_bind();
  impl_->finished = true;
}

bool Server::Running() const {
  return impl_->http.is_running();
}

void Server::Stop() {
  if (!impl_) return;
  impl_->stopped = true;
  if (!impl_->started) return;
  while (!impl_->http.is_running() && !impl_->finished)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->http.stop();
}

}  // namespace scellis::studio
