// ScopedEnv: an environment variable set for one scope, what was there restored after (tests).
#pragma once

#include <stdlib.h>

#include <string>

namespace moetune::testing {

class ScopedEnv {
 public:
  ScopedEnv(char const* name, char const* value) : name_(name) {
    char const* old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    had_ ? (void)setenv(name_.c_str(), old_.c_str(), 1) : (void)unsetenv(name_.c_str());
  }
  ScopedEnv(ScopedEnv const&) = delete;
  ScopedEnv& operator=(ScopedEnv const&) = delete;

 private:
  std::string name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace moetune::testing
