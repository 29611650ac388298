#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "joule/core/error.h"

namespace joule::data::testing {

// Runs `f`, expecting joule::Error whose message contains every string in `needles`.
template <class F>
void expect_error(F f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error thrown; expected one mentioning " << (needles.empty() ? "" : needles[0]);
  } catch (const Error& e) {
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "'" << e.what() << "' lacks '" << n << "'";
  }
}

}  // namespace joule::data::testing
