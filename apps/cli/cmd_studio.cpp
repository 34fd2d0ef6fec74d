// `scellis studio`: serves the Studio (apps/studio) until interrupted. The server runs on its own
// threads; this one waits for SIGINT or SIGTERM and stops it cleanly.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <iostream>
#include <thread>

#include "common.h"
#include "handler.h"
#include "serve.h"

extern char** environ;

namespace scellis::cli {
namespace {

// Opens `url` in the desktop's browser; false when that could not be done.
bool OpenInBrowser(const std::string& url) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string program = "xdg-open";
  std::string arg = url;
  char* argv[] = {program.data(), arg.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "xdg-open", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return false;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int StudioCommand(const StudioFlags& f) {
  studio::EngineOptions options;
  options.store_root = f.store;
  options.select = {.requested = f.backend, .allow_software_adapter = f.allow_software_adapter};
  options.web_dir = f.web_dir.empty() ? studio::DefaultWebDir() : f.web_dir;
  if (f.max_request_bytes) options.max_request_bytes = static_cast<size_t>(*f.max_request_bytes);
  auto engine = studio::Engine::Open(options);
  if (!engine.ok()) return Report(engine.errors(), "", false);
  if ((*engine)->backend() == "cpu")
    std::cerr << runtime::CpuBanner((*engine)->fallback_reason().value_or(
        "requested with --backend=cpu"));

  // The signals are waited for on this thread only; the server's threads inherit the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  studio::Server server(**engine, {.host = f.host, .port = f.port});
  auto port = server.Bind();
  if (!port.ok()) return Report(port.errors(), "", false);
  const std::string host = f.host.find(':') != std::string::npos ? "[" + f.host + "]" : f.host;
  const std::string url = "http://" + host + ":" + std::to_string(port.value());
  std::cout << "studio: serving on " << url << " (backend: " << (*engine)->backend()
            << ", store: " << (*engine)->store().root() << ")" << std::endl;
  std::thread serving([&] { server.Run(); });
  if (f.open && !OpenInBrowser(url))
    std::cerr << "studio: could not open a browser (xdg-open failed); open " << url
              << " yourself\n";
  int signal = 0;
  sigwait(&signals, &signal);
  std::cout << "studio: stopping" << std::endl;
  server.Stop();
  serving.join();
  return 0;
}

}  // namespace scellis::cli
