// Closes the job when an exception leaves the scope. Declare it after the proxies (harness::Driven)
// of the scope: it is destroyed first, so their stop finds the job closed and the word final at
// once, instead of waiting for values that a failed bench will never see done.
#pragma once

#include <exception>

#include "rig/remote/job.h"

namespace rig::bench {

class CloseOnError {
 public:
  explicit CloseOnError(remote::Job& job) : job_(job), uncaught_(std::uncaught_exceptions()) {}
  ~CloseOnError() {
    if (std::uncaught_exceptions() > uncaught_) job_.close();
  }
  CloseOnError(const CloseOnError&) = delete;
  CloseOnError& operator=(const CloseOnError&) = delete;

 private:
  remote::Job& job_;
  int uncaught_;
};

}  // namespace rig::bench
