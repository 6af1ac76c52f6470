// What connecting a new job to an agent throws: the tests of authentication and secrets.
#pragma once

#include <exception>
#include <string>

#include "rig/remote/job.h"

namespace rig::test {

// What connecting with `options` throws, or "".
inline std::string connect_error(const std::string& endpoint, const remote::LinkOptions& options) {
  auto job = remote::Job::create();
  try {
    job->connect(endpoint, options);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// What connecting with the secret in `secret_file` ("": the test process's) throws, or "".
inline std::string connect_error(const std::string& endpoint, const std::string& secret_file = "") {
  remote::LinkOptions options;
  options.secret_file = secret_file;
  return connect_error(endpoint, options);
}

}  // namespace rig::test
