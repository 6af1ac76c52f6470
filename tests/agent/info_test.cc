// rig-info (like ucx_info): the release, io_uring and zero-copy, the memlock limit and the
// settings, as JSON; a bad RIG_* value is an error naming it. Runs the real rig-info.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "command.h"
#include "rig/wire/messages.h"
#include "rig/wire/version.h"

namespace rig::test {
namespace {

// Runs rig-info after `before` (a wrapper: env, prlimit), with its output and errors.
CommandRun run_info(const std::string& before) { return run_command(before + " " + RIG_INFO_PATH + " 2>&1"); }

TEST(RigInfo, PrintsTheReleaseIoUringZeroCopyTheMemlockLimitAndTheSettingsAsJson) {
  const CommandRun out = run_info("prlimit --memlock=65536:131072 env RIG_SEND_ZC_BYTES=4KiB");
  ASSERT_TRUE(out.exited(0)) << out.out;
  const nlohmann::json info = nlohmann::json::parse(out.out);
  EXPECT_EQ(info["version"], wire::software_version());
  EXPECT_EQ(info["protocol"], wire::kVersion);
  EXPECT_TRUE(info["io_uring"]["available"].is_boolean());
  EXPECT_TRUE(info["zero_copy"]["send_zc"].is_boolean());
  EXPECT_EQ(info["memlock"]["soft_bytes"], 65536);
  EXPECT_EQ(info["memlock"]["hard_bytes"], 131072);
  EXPECT_EQ(info["settings"]["RIG_SEND_ZC_BYTES"], "4KiB");
  EXPECT_EQ(info["settings"]["send_zc_bytes"], 4096);
  EXPECT_TRUE(info["settings"]["backend"].is_string());
}

TEST(RigInfo, ABadRigVariableIsAnErrorNamingIt) {
  CommandRun out = run_info("env RIG_SOCKET_BACKEND=fast");
  EXPECT_TRUE(out.exited(1)) << out.out;
  EXPECT_NE(out.out.find("rig-info: RIG_SOCKET_BACKEND=fast: RIG_SOCKET_BACKEND takes uring or plain"), std::string::npos)
      << out.out;
  out = run_info("env RIG_STRIPES=-3");
  EXPECT_TRUE(out.exited(1)) << out.out;
  EXPECT_NE(out.out.find("rig-info: RIG_STRIPES=-3: RIG_STRIPES takes a whole number from 0 to 16"), std::string::npos)
      << out.out;
}

}  // namespace
}  // namespace rig::test
