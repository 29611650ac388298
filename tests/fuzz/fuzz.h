#pragma once
// Shared by the fuzz targets (tests/fuzz/*_fuzz.cpp). Each target defines LLVMFuzzerTestOneInput;
// clang's libFuzzer drives it in the sanitizer build (`make fuzz`), and replay_main.cpp replays the
// kept inputs (seeds and regressions) through it in every build (`make test`).
//
// The contract a reader must keep on arbitrary bytes: return, or throw joule::Error of kind
// BadInput/Unsupported (the CLI's one line and exit 2). Anything else — an internal error, a
// foreign exception (std::out_of_range, nlohmann's type_error, std::bad_alloc), a crash, a
// sanitizer report, a hang — is a finding: printed, then abort(), so libFuzzer keeps the input.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>

#include <unistd.h>

#include "joule/core/error.h"

namespace joule::fuzz {

[[noreturn]] inline void finding(const char* what, const char* msg) {
  std::fprintf(stderr, "joule fuzz: %s: %s\n", what, msg);
  std::fflush(stderr);
  std::abort();
}

template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (!e.is_user_error()) finding("internal error on bad input", e.what());
    static const bool verbose = std::getenv("JOULE_FUZZ_VERBOSE") != nullptr;  // why inputs were refused
    if (verbose) std::fprintf(stderr, "  refused: %s\n", e.what());
  } catch (const std::exception& e) {
    finding(typeid(e).name(), e.what());
  }
}

// A scratch directory of this process (removed at exit), for readers that take a path.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("joule-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(std::filesystem::temp_directory_path() / ("joule-fuzz-" + std::to_string(::getpid())), ec);
    });
    return d;
  }();
  return dir;
}

inline std::string write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  const std::filesystem::path p = scratch() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                             static_cast<std::streamsize>(size));
  return p.string();
}

}  // namespace joule::fuzz

// Every target: tensors a fuzz input declares are refused above 256 MB (joule's own limit,
// JOULE_MEMORY_LIMIT), so that a small file claiming gigabytes is refused as on a small machine;
// a Loop stops after 10000 iterations (JOULE_LOOP_LIMIT), so that a model whose loop never ends
// is an error, not a hang.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("JOULE_MEMORY_LIMIT", "268435456", 0);
  ::setenv("JOULE_LOOP_LIMIT", "10000", 0);
  return 0;
}
