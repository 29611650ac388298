#pragma once
// yaml-cpp throws its own exceptions (a key that is a list where a name was expected, a value that
// is not a number, ...). The readers of joule's YAML configs turn them into BadInput with this:
// "SOURCE: line L, column C: MESSAGE".
#include <string>

#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/node/node.h>
#include <yaml-cpp/node/parse.h>

#include "joule/core/error.h"

namespace joule {

[[noreturn]] inline void fail_yaml(const std::string& source, const YAML::Exception& e) {
  if (e.mark.is_null()) fail(source + ": " + e.msg);
  fail(source + ": line " + std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1) + ": " +
       e.msg);
}

// YAML text parsed; BadInput "SOURCE: not valid YAML: ..." on a syntax error.
inline YAML::Node load_yaml(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(source + ": not valid YAML: " + e.what());
  }
}

// Runs `read` (a reader's body over a parsed YAML document) with yaml-cpp's errors as BadInput.
template <class F>
auto read_yaml(const std::string& source, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const YAML::Exception& e) {
    fail_yaml(source, e);
  }
}

}  // namespace joule
