#pragma once
#include <stdexcept>
#include <string>

namespace joule {

// Errors thrown inside the library. The CLI prints what() on one line and exits with
// 2 for bad input (the user can fix it) or 1 for an internal fault.
class Error : public std::runtime_error {
 public:
  enum class Kind { BadInput, Unsupported, Internal };
  Error(Kind kind, const std::string& msg) : std::runtime_error(msg), kind_(kind) {}
  Kind kind() const { return kind_; }
  bool is_user_error() const { return kind_ != Kind::Internal; }

 private:
  Kind kind_;
};

[[noreturn]] inline void fail(const std::string& msg) { throw Error(Error::Kind::BadInput, msg); }
[[noreturn]] inline void fail_unsupported(const std::string& msg) {
  throw Error(Error::Kind::Unsupported, msg);
}
[[noreturn]] inline void fail_internal(const std::string& msg) {
  throw Error(Error::Kind::Internal, msg);
}

// Checks a condition on user-supplied data; throws BadInput with the message otherwise.
#define JOULE_CHECK(cond, msg)                        \
  do {                                                \
    if (!(cond)) ::joule::fail(msg);                  \
  } while (0)

}  // namespace joule
