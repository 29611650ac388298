#pragma once
// Runs the joule binary as a user would, for CLI tests.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

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

}  // namespace joule::testing
