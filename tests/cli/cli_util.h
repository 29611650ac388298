#pragma once
// Runs the joule binary as a user would, for CLI tests.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace joule::testing {

struct CliResult {
  int code;
  std::string out;  // stdout and stderr together
};

inline CliResult run_joule(const std::string& args) {
  std::string cmd = std::string(JOULE_BINARY_DIR) + "/joule " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int st = pclose(p);
  return {WEXITSTATUS(st), out};
}

// A fresh temporary directory per test process, named after `tag`.
inline std::filesystem::path scratch_dir(const std::string& tag) {
  auto p = std::filesystem::temp_directory_path() / ("joule_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

// Starts `joule ARGS...` (stdout to /dev/null) and kills it with SIGKILL after `delay_ms`: the
// crash-safety tests. Returns -1 when it was killed, else its exit code (it finished first).
inline int run_joule_killed_after(const std::vector<std::string>& args, int delay_ms) {
  const std::string bin = std::string(JOULE_BINARY_DIR) + "/joule";
  const pid_t pid = fork();
  if (pid < 0) return -2;
  if (pid == 0) {
    if (!std::freopen("/dev/null", "w", stdout)) _exit(126);
    std::vector<char*> argv{const_cast<char*>(bin.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFSIGNALED(st) ? -1 : WEXITSTATUS(st);
}

// Starts `joule ARGS...` `times` times, each killed after a random delay in [min_ms, max_ms]
// (seeded): the crash-safety tests' resumed runs. Returns how many died mid-run; `finished` gets
// the exit codes of the runs that ended before their kill.
inline int run_joule_killed_repeatedly(const std::vector<std::string>& args, int times, unsigned seed, int min_ms,
                                       int max_ms, std::vector<int>* finished) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(min_ms, max_ms);
  int killed = 0;
  for (int i = 0; i < times; ++i) {
    const int code = run_joule_killed_after(args, delay_ms(rng));
    if (code == -1) ++killed;
    else finished->push_back(code);
  }
  return killed;
}

}  // namespace joule::testing
