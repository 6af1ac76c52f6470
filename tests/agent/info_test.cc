// rig-info (like ucx_info): the release, the build's options, the GPUs, io_uring and zero-copy,
// the memlock limit, the settings and every RIG_* variable, as text or with --json as JSON; a
// bad RIG_* value is an error naming it. Runs the real rig-info.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "command.h"
#include "rig/engine/env_settings.h"
#include "rig/wire/messages.h"
#include "rig/wire/version.h"

namespace rig::test {
namespace {

// Runs rig-info after `before` (a wrapper: env, prlimit) with `args`, with its output and errors.
CommandRun run_info(const std::string& before, const std::string& args = "") {
  return run_command(before + " " + RIG_INFO_PATH + " " + args + " 2>&1");
}

// rig-info's JSON (--json) under `before`.
nlohmann::json info_json(const std::string& before) {
  const CommandRun out = run_info(before, "--json");
  EXPECT_TRUE(out.exited(0)) << out.out;
  return nlohmann::json::parse(out.out, nullptr, false);
}

TEST(RigInfo, PrintsTheReleaseIoUringZeroCopyTheMemlockLimitAndTheSettingsAsJson) {
  const CommandRun out = run_info("prlimit --memlock=65536:131072 env RIG_SEND_ZC_BYTES=4KiB", "--json");
  ASSERT_TRUE(out.exited(0)) << out.out;
  const nlohmann::json info = nlohmann::json::parse(out.out);
  EXPECT_EQ(info["version"], wire::software_version());
  EXPECT_EQ(info["protocol"], wire::kVersion);
  EXPECT_TRUE(info["io_uring"]["available"].is_boolean());
  EXPECT_TRUE(info["zero_copy"]["send_zc"].is_boolean());
  EXPECT_EQ(info["memlock"]["soft_bytes"], 65536);
  EXPECT_EQ(info["memlock"]["hard_bytes"], 131072);
  EXPECT_EQ(info["variables"]["RIG_SEND_ZC_BYTES"]["value"], "4KiB");
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

TEST(RigInfo, TextIsTheDefaultOneFactALineAndJsonSaysTheSame) {
  const CommandRun text = run_info("prlimit --memlock=65536:131072 env RIG_STRIPES=3");
  ASSERT_TRUE(text.exited(0)) << text.out;
  EXPECT_TRUE(nlohmann::json::parse(text.out, nullptr, false).is_discarded()) << text.out;
  EXPECT_NE(text.out.find("version: " + std::string(wire::software_version()) + "\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("memlock:\n  soft_bytes: 65536\n  hard_bytes: 131072\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  RIG_STRIPES:\n    value: 3\n    default: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  RIG_POLL_US:\n    value: unset\n"), std::string::npos) << text.out;
  EXPECT_FALSE(info_json("env RIG_STRIPES=3").is_discarded());
}

TEST(RigInfo, ListsEveryRigVariableWithItsValueOrUnsetAndItsDefault) {
  const nlohmann::json info = info_json("env -u RIG_SECRET_FILE -u RIG_SECRET RIG_STRIPES=3 RIG_SQPOLL=");
  std::size_t listed = 0;
  for (const engine::EnvVariable& v : engine::env_variables()) {
    ASSERT_TRUE(info["variables"].contains(v.name)) << v.name;
    EXPECT_EQ(info["variables"][v.name]["default"], v.fallback) << v.name;
    ++listed;
  }
  EXPECT_EQ(info["variables"].size(), listed);
  EXPECT_EQ(info["variables"]["RIG_STRIPES"]["value"], "3");
  EXPECT_TRUE(info["variables"]["RIG_SQPOLL"]["value"].is_null());  // empty: unset
  for (const char* name : {"RIG_SOCKET_BACKEND", "RIG_POLL_US", "RIG_SEND_ZC_BYTES", "RIG_SQPOLL", "RIG_STRIPES",
                           "RIG_STRIPE_WINDOW_BYTES", "RIG_SECRET_FILE", "RIG_SECRET"}) {
    EXPECT_TRUE(info["variables"].contains(name)) << name;
  }
}

TEST(RigInfo, NeverShowsTheSecretsBytesOnlyThatItIsSet) {
  const std::string secret = "rig-info-must-not-print-this-secret-0123456789";
  const CommandRun text = run_info("env RIG_SECRET=" + secret);
  ASSERT_TRUE(text.exited(0)) << text.out;
  EXPECT_EQ(text.out.find(secret), std::string::npos);
  EXPECT_NE(text.out.find("  RIG_SECRET:\n    value: (set)\n"), std::string::npos) << text.out;
  const CommandRun json = run_info("env RIG_SECRET=" + secret, "--json");
  EXPECT_EQ(json.out.find(secret), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(json.out)["variables"]["RIG_SECRET"]["value"], "(set)");
}

TEST(RigInfo, ShowsTheBuildsOptions) {
  const nlohmann::json build = info_json("env")["build"];
#if defined(RIG_TSAN)
  EXPECT_EQ(build["sanitizers"], "ThreadSanitizer");
#elif defined(RIG_ASAN)
  EXPECT_EQ(build["sanitizers"], "AddressSanitizer, UndefinedBehaviorSanitizer");
#else
  EXPECT_EQ(build["sanitizers"], "none");
#endif
#if defined(RIG_CUDA)
  EXPECT_EQ(build["cuda_backend"].get<std::string>().rfind("built (CUDA toolkit ", 0), 0u) << build;
#else
  EXPECT_EQ(build["cuda_backend"], "not built (no CUDA toolkit at configure time)");
#endif
  EXPECT_TRUE(build["compiler"].is_string());
  EXPECT_TRUE(build["build_type"].is_string());
}

// The GPUs, as the agent's discovery sees them: the emulated driver's two, or none with why.
TEST(RigInfo, ListsTheGpusItSeesOrSaysWhyNone) {
#if defined(RIG_CUDA) && defined(RIG_EMULATED_CUDA_DIR)
  const std::string emulated = std::string("env LD_LIBRARY_PATH=") + RIG_EMULATED_CUDA_DIR;
  const nlohmann::json two = info_json(emulated)["gpus"];
  EXPECT_EQ(two["count"], 2) << two;
  ASSERT_EQ(two["devices"].size(), 2u) << two;
  EXPECT_EQ(two["devices"][1]["name"], "Emulated GPU 1");
  EXPECT_EQ(two["devices"][1]["arch"], "sm_90");
  const nlohmann::json none = info_json(emulated + " RIG_EMULATED_CUDA_GPUS=0")["gpus"];
  EXPECT_EQ(none["count"], 0) << none;
  EXPECT_NE(none["why"].get<std::string>().find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << none;
#else
  const nlohmann::json none = info_json("env")["gpus"];
  EXPECT_EQ(none["count"], 0) << none;
  EXPECT_EQ(none["why"], "this build has no CUDA backend (no CUDA toolkit at configure time)");
#endif
}

}  // namespace
}  // namespace rig::test
