// A RIG_* variable with a value the library does not take fails every connect, naming it, before
// anything connects (docs/ENVIRONMENT.md): Job::connect throws std::invalid_argument, the C ABI
// answers RIG_INVALID_ARGUMENT with the text. ctest's proxy_tests_bad_environment runs these with
// RIG_STRIPES=-3 (read once per process); elsewhere they skip.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "rig/remote.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"

namespace rig::test {
namespace {

constexpr const char* kError = "RIG_STRIPES=-3: RIG_STRIPES takes a whole number from 0 to 16";
// Nothing listens there: a connect that got as far as the network would fail otherwise.
constexpr const char* kNowhere = "127.0.0.1:1";

bool environment_is_bad() {
  const char* v = std::getenv("RIG_STRIPES");
  return v != nullptr && std::string(v) == "-3";
}

TEST(BadEnvironment, JobConnectThrowsNamingTheVariableWhateverTheOptions) {
  if (!environment_is_bad()) GTEST_SKIP() << "run by ctest's proxy_tests_bad_environment (RIG_STRIPES=-3)";
  // Options that name every setting a variable could give: no variable is read for these, and
  // the rule is the same.
  remote::LinkOptions explicit_options;
  explicit_options.stripes = 2;
  explicit_options.backend = remote::Backend::kPlain;
  explicit_options.poll_us = 0;
  explicit_options.send_zc_bytes = 0;
  for (const remote::LinkOptions& options : {remote::LinkOptions{}, explicit_options}) {
    auto job = remote::Job::create();
    try {
      job->connect(kNowhere, options);
      ADD_FAILURE() << "connected";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind(kError, 0), 0u) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not the variable's error: " << e.what();
    }
  }
}

TEST(BadEnvironment, TheCAbiAnswersInvalidArgumentWithTheReason) {
  if (!environment_is_bad()) GTEST_SKIP() << "run by ctest's proxy_tests_bad_environment (RIG_STRIPES=-3)";
  rig_job* job = nullptr;
  ASSERT_EQ(rig_job_create(&job, nullptr), RIG_OK);
  char text[256] = {};
  rig_text why{text, sizeof text, 0};
  rig_link* link = nullptr;
  EXPECT_EQ(rig_job_connect(job, kNowhere, nullptr, &link, &why), RIG_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(text).rfind(kError, 0), 0u) << text;
  rig_job_release(job);
}

}  // namespace
}  // namespace rig::test
