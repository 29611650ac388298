#pragma once
#include <stdexcept>
#include <string>

namespace joule {

// Errors thrown inside the library. The CLI prints what() on one line and exits with
// 2 for bad input (the user can fix it), 1 for an internal fault, 130 when the user
// cancelled (Ctrl-C between runs); Python raises joule.BadInput / joule.Unsupported /
// joule.Error / KeyboardInterrupt.
class Error : public std::runtime_error {
 public:
  enum class Kind { BadInput, Unsupported, Internal, Cancelled };
  Error(Kind kind, const std::string& msg) : std::runtime_error(msg), kind_(kind) {}
  Kind kind() const { return kind_; }
  bool is_user_error() const { return kind_ == Kind::BadInput || kind_ == Kind::Unsupported; }

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
