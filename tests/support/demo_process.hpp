#pragma once
// The demo (or any program) as a child process with extra environment
// variables; its stdout is read line by line through a pipe.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace glassbox::testing {

class DemoProcess {
 public:
  DemoProcess(const std::string& path, const std::vector<std::string>& args,
              const std::vector<std::string>& extra_env = {}) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<std::string> argv_s{path};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s = extra_env;
    for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
    auto argv = pointers(argv_s), envp = pointers(env_s);
    int rc = ::posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) throw std::runtime_error("posix_spawn failed: " + std::to_string(rc));
    out_ = ::fdopen(fds[0], "r");
  }
  ~DemoProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_) std::fclose(out_);
  }
  /// The next line with its newline; empty at end of output.
  std::string read_line() {
    char buf[1024];
    return std::fgets(buf, sizeof buf, out_) ? std::string(buf) : std::string();
  }
  void signal(int sig) { ::kill(pid_, sig); }
  std::uint64_t pid() const { return static_cast<std::uint64_t>(pid_); }
  /// The exit status; -1 when it did not exit normally within `timeout`.
  int wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  static std::vector<char*> pointers(std::vector<std::string>& v) {
    std::vector<char*> p;
    for (auto& s : v) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
  }
  pid_t pid_ = -1;
  std::FILE* out_ = nullptr;
};

}  // namespace glassbox::testing
