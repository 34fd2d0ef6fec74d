// The real server on a free port, hit over a socket: the adapter maps requests onto the handler,
// streams ndjson in chunks, caps bodies before reading them, and lets no path out.
#include "serve.h"

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/cli.h"

namespace scellis::studio {
namespace {

namespace fs = std::filesystem;

Json CenterColumns() {
  std::ifstream in(fs::path(SCELLIS_SOURCE_DIR) / "examples" / "center_columns.json");
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

TEST(StudioServer, ServesOverASocketOnAFreePort) {
  fs::path dir = testing::MakeTempDir("scellis-studio-serve");
  fs::create_directories(dir / "web");
  std::ofstream(dir / "web" / "index.html") << "<!doctype html><title>studio</title>";
  EngineOptions o;
  o.store_root = (dir / "store").string();
  o.select.requested = "cpu";
  o.web_dir = (dir / "web").string();
  o.max_request_bytes = 64 * 1024;
  auto engine = Engine::Open(o);
  ASSERT_TRUE(engine.ok());

  Server server(**engine, {.host = "127.0.0.1", .port = 0});
  auto port = server.Bind();
  ASSERT_TRUE(port.ok()) << port.errors().front().Format();
  ASSERT_GT(port.value(), 0);
  std::thread serving([&] { server.Run(); });
  for (int i = 0; i < 1000 && !server.Running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(server.Running());

  httplib::Client client("127.0.0.1", port.value());
  client.set_read_timeout(60, 0);
  auto version = client.Get("/api/version");
  ASSERT_TRUE(version);
  EXPECT_EQ(version->status, 200);
  EXPECT_EQ(Json::parse(version->body)["backend"], "cpu");

  auto index = client.Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");

  const std::string body = Json{{"document", CenterColumns()}}.dump();
  auto validate = client.Post("/api/validate", body, "application/json");
  ASSERT_TRUE(validate);
  EXPECT_EQ(validate->status, 200) << validate->body;

  // The run streams: one JSON object a line, the result last.
  auto run = client.Post("/api/run", body, "application/json");
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, 200);
  EXPECT_EQ(run->get_header_value("Content-Type"), "application/x-ndjson");
  EXPECT_EQ(run->get_header_value("Transfer-Encoding"), "chunked");
  std::stringstream lines(run->body);
  std::string line, last;
  int count = 0;
  while (std::getline(lines, line)) {
    last = line;
    ++count;
  }
  EXPECT_GE(count, 2);
  EXPECT_EQ(Json::parse(last)["event"], "result");

  // Hostile: over the cap (refused from its length), wrong type, traversal in an id and a path.
  auto big = client.Post("/api/validate", std::string(100 * 1024, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  auto text = client.Post("/api/validate", body, "text/plain");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 415);
  EXPECT_EQ(Json::parse(text->body)["error"]["code"], "unsupported-media-type");
  auto id = client.Get("/api/documents/..%2f..%2fetc%2fpasswd");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->status, 400);
  EXPECT_EQ(Json::parse(id->body)["error"]["code"], "bad-id");
  for (const char* p : {"/assets/../../etc/passwd", "/assets/..%2f..%2fetc%2fpasswd",
                        "/%2e%2e/%2e%2e/etc/passwd"}) {
    auto r = client.Get(p);
    ASSERT_TRUE(r) << p;
    EXPECT_TRUE(r->status == 400 || r->status == 404) << p << " " << r->status;
    EXPECT_EQ(r->body.find("root:"), std::string::npos) << p;
  }
  auto bad = client.Post("/api/validate", "{\"document\": ", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(Json::parse(bad->body)["error"]["code"], "bad-json");

  server.Stop();
  serving.join();
  fs::remove_all(dir);
}

// `scellis studio --port 0` as users start it: it prints the port it took, serves, and stops on
// SIGTERM with exit code 0.
TEST(StudioServer, TheCommandPrintsItsPortAndStopsOnSigterm) {
  fs::path dir = testing::MakeTempDir("scellis-studio-command");
  const std::string out_path = (dir / "stdout").string();
  std::vector<std::string> args = {testing::ScellisBinary().string(), "studio", "--port", "0",
                                   "--backend", "cpu", "--store", (dir / "store").string(),
                                   "--web-dir", (dir / "no-web").string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int null = open("/dev/null", O_WRONLY);
    dup2(out, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  std::string line;
  for (int i = 0; i < 2000 && line.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::ifstream in(out_path);
    std::getline(in, line);
  }
  const std::string prefix = "studio: serving on http://127.0.0.1:";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << line;
  const int port = std::stoi(line.substr(prefix.size()));
  EXPECT_GT(port, 0);
  EXPECT_NE(line.find("(backend: cpu, store: "), std::string::npos) << line;

  httplib::Client client("127.0.0.1", port);
  auto version = client.Get("/api/version");
  ASSERT_TRUE(version);
  EXPECT_EQ(version->status, 200);
  auto root = client.Get("/");
  ASSERT_TRUE(root);
  EXPECT_NE(root->body.find("not built"), std::string::npos);

  kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << "ended by a signal";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(testing::ReadWholeFile(out_path).find("studio: stopping"), std::string::npos);
  fs::remove_all(dir);
}

TEST(StudioServer, StopBeforeRunDoesNotHang) {
  fs::path dir = testing::MakeTempDir("scellis-studio-serve");
  EngineOptions o;
  o.store_root = (dir / "store").string();
  o.select.requested = "cpu";
  auto engine = Engine::Open(o);
  ASSERT_TRUE(engine.ok());
  Server server(**engine, {.host = "127.0.0.1", .port = 0});
  ASSERT_TRUE(server.Bind().ok());
  server.Stop();
  std::thread serving([&] { server.Run(); });
  serving.join();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace scellis::studio
