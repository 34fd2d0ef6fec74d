// Runs the real `scellis` binary from a test: the binary built beside the test executable, with
// stdout and stderr captured and the way it ended (exit code or signal) reported separately, so a
// crash is never mistaken for a refusal.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace scellis::testing {

struct CliRun {
  bool exited = false;  // false: killed by a signal (a crash)
  int exit_code = -1;
  int signal = 0;
  std::string out;
  std::string err;
};

// The `scellis` binary next to the running test binary (both are built into the same directory).
inline std::filesystem::path ScellisBinary() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "scellis";
}

inline std::string ReadWholeFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh, empty directory under the system temp dir; removed by the caller when it likes.
inline std::filesystem::path MakeTempDir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      (prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Runs `program args...`; output goes to files (not pipes) so a chatty child never blocks.
// Unless the test chose a store (SCELLIS_STORE), the child gets a fresh one of its own, removed
// with its output: a test's runs never leave records in the user's store.
inline CliRun RunProgram(const std::string& binary, const std::vector<std::string>& args) {
  std::filesystem::path dir = MakeTempDir("scellis-cli");
  std::string out_path = (dir / "stdout").string(), err_path = (dir / "stderr").string();
  std::vector<std::string> argv_strings = {binary};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.push_back(*e);
  const char* chosen_store = std::getenv("SCELLIS_STORE");
  if (!chosen_store || !*chosen_store)
    env_strings.push_back("SCELLIS_STORE=" + (dir / "store").string());
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  CliRun r;
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) _exit(126);
    dup2(o, 1);
    dup2(e, 2);
    execve(binary.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid) {
    r.exited = WIFEXITED(status);
    r.exit_code = r.exited ? WEXITSTATUS(status) : -1;
    r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  r.out = ReadWholeFile(out_path);
  r.err = ReadWholeFile(err_path);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return r;
}

inline CliRun RunScellis(const std::vector<std::string>& args) {
  return RunProgram(ScellisBinary().string(), args);
}

}  // namespace scellis::testing
