// rig-agent for operators: its version, options and RIG_* variables checked with a clear error,
// a config file, the effective settings logged at start, and a summary line at each job's end.
// Each against a real rig-agent process.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent_process.h"
#include "command.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"
#include "rig/wire/messages.h"
#include "rig/wire/version.h"

namespace rig::test {
namespace {

// Runs rig-agent with `args` (a shell fragment) under `env` (another), without the test's secret,
// stopped after 10 s at most; what it printed and how it ended.
CommandRun run_agent(const std::string& args, const std::string& env = "") {
  return run_command("timeout 10 env -u RIG_SECRET_FILE -u RIG_SECRET " + env + " " + agent_path() + " " + args +
                     " 2>&1");
}

// A file in TMPDIR with `text`, removed at scope exit.
struct TempFile {
  explicit TempFile(const std::string& text = "") {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir != nullptr && *dir != 0 ? dir : "/tmp") + "/rig-operator-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd >= 0) {
      if (!text.empty()) (void)!::write(fd, text.data(), text.size());
      ::close(fd);
    }
  }
  ~TempFile() { ::unlink(path.c_str()); }
  std::string read() const {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string path;
};

// An agent whose log (stderr) goes to a file, logging at info.
struct LoggedAgent {
  explicit LoggedAgent(std::vector<std::string> args = {})
      : agent(with_info(std::move(args)), false, {"sh", "-c", "exec \"$@\" 2>>" + log.path, "sh"}) {}
  static std::vector<std::string> with_info(std::vector<std::string> args) {
    args.insert(args.begin(), {"--log", "info"});
    return args;
  }
  // Waits up to 10 s for the log to hold `text`; the log then.
  std::string wait_for(const std::string& text) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::string now = log.read();
    while (now.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      now = log.read();
    }
    return now;
  }
  TempFile log;
  AgentProcess agent;
};

std::string port_of(const std::string& endpoint) { return endpoint.substr(endpoint.rfind(':') + 1); }

TEST(Operator, VersionPrintsTheSoftwaresAndTheProtocolsVersionsAndExitsZero) {
  const CommandRun r = run_agent("--version");
  EXPECT_TRUE(r.exited(0)) << r.status << r.out;
  EXPECT_NE(r.out.find(std::string("rig-agent ") + wire::software_version()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("protocol " + std::to_string(wire::kVersion)), std::string::npos) << r.out;
}

TEST(Operator, AnUnknownLogLevelIsAnErrorNamingTheOptionAndTheValue) {
  const CommandRun r = run_agent("--listen 127.0.0.1:0 --log loud");
  EXPECT_FALSE(r.exited(0)) << r.out;
  EXPECT_NE(r.out.find("--log"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loud"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;
}

TEST(Operator, ABadRigVariableIsAnErrorNamingTheVariableAndItsValue) {
  // Each of issue 40's, once accepted silently (the default applied), and the library's own.
  for (const char* bad : {"RIG_SEND_ZC_BYTES=lots: RIG_SEND_ZC_BYTES takes a byte count",
                          "RIG_SOCKET_BACKEND=fast: RIG_SOCKET_BACKEND takes uring or plain",
                          "RIG_POLL_US=abc: RIG_POLL_US takes a whole number of microseconds from 0 to 1000000",
                          "RIG_SQPOLL=maybe: RIG_SQPOLL takes 1, on, 0 or off",
                          "RIG_STRIPES=-3: RIG_STRIPES takes a whole number from 0 to 16",
                          "RIG_STRIPE_WINDOW_BYTES=1.5GiB: RIG_STRIPE_WINDOW_BYTES takes a byte count"}) {
    const std::string setting = std::string(bad).substr(0, std::string(bad).find(':'));
    const CommandRun r = run_agent("--listen 127.0.0.1:0", setting);
    EXPECT_TRUE(r.exited(1)) << setting << ": " << r.status << r.out;
    EXPECT_NE(r.out.find(std::string("rig-agent: ") + bad), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;
  }
}

TEST(Operator, GoodRigVariablesWithUnitsAreTaken) {
  // The variables are read before the options: --version answers only once they are taken.
  const CommandRun r = run_agent("--version", "RIG_SEND_ZC_BYTES=64KiB RIG_STRIPE_WINDOW_BYTES=1TiB RIG_POLL_US=1000000 "
                                              "RIG_SQPOLL=off RIG_STRIPES=16 RIG_SOCKET_BACKEND=plain RIG_STRIPES=");
  EXPECT_TRUE(r.exited(0)) << r.status << r.out;
}

TEST(Operator, SizeOptionsTakeUnitsOfPowersOf1024) {
  LoggedAgent a({"--device-budget", "1GiB", "--host-budget", "512MiB", "--max-staged-bytes", "1TiB",
                 "--send-zc-bytes", "64KiB"});
  const std::string log = a.log.read();
  EXPECT_NE(log.find("device_budget=1073741824 host_budget=536870912"), std::string::npos) << log;
  EXPECT_NE(log.find("max_staged_bytes=1099511627776"), std::string::npos) << log;
  EXPECT_NE(log.find("send_zc_bytes=65536"), std::string::npos) << log;
  LoggedAgent plain({"--device-budget", "4096", "--max-staged-bytes", "17592186044416", "--send-zc-bytes", "-1"});
  EXPECT_NE(plain.log.read().find("device_budget=4096"), std::string::npos) << "a plain number is bytes";
}

TEST(Operator, ASizeOptionThatIsNoByteSizeIsAnErrorSayingWhatIsAccepted) {
  for (const char* bad : {"1.5GiB", "1GB", "1G", "1k", "-1", "+1", "1 MiB", "17179869184GiB", "18446744073709551616",
                          "0x10"}) {
    const CommandRun r = run_agent(std::string("--listen 127.0.0.1:0 --device-budget '") + bad + "'");
    EXPECT_FALSE(r.exited(0)) << bad << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("--device-budget: '") + bad + "' is not a whole number of bytes below 2^64, "
                         "optionally with a unit: KiB, MiB, GiB or TiB"),
              std::string::npos)
        << r.out;
  }
  // Past an option's own range, at the exact bound and one past it.
  LoggedAgent at_bound({"--max-staged-bytes", "16TiB"});
  EXPECT_NE(at_bound.log.read().find("max_staged_bytes=17592186044416"), std::string::npos);
  CommandRun r = run_agent("--listen 127.0.0.1:0 --max-staged-bytes 17592186044417");
  EXPECT_NE(r.out.find("--max-staged-bytes: Value 17592186044417 not in range"), std::string::npos) << r.out;
  r = run_agent("--listen 127.0.0.1:0 --send-zc-bytes 1025GiB");
  EXPECT_NE(r.out.find("--send-zc-bytes: Value 1100585369600 not in range"), std::string::npos) << r.out;
}

TEST(Operator, AListenAddressThatDoesNotResolveIsAnErrorWithTheResolversText) {
  const CommandRun r = run_agent("--listen no-such-host.invalid:0");
  EXPECT_TRUE(r.exited(1)) << r.status << r.out;
  EXPECT_NE(r.out.find("cannot resolve 'no-such-host.invalid'"), std::string::npos) << r.out;
}

TEST(Operator, AConfigFileSetsOptionsAndTheCommandLineWinsOverIt) {
  TempFile config("devices = 5\nmax-stripes = 2\n");
  {
    AgentProcess agent({"--config", config.path});
    auto job = remote::Job::create();
    EXPECT_EQ(job->connect(agent.endpoint()).accounts().size(), 6u);  // the host and 5
    job->close();
  }
  AgentProcess agent({"--config", config.path, "--devices", "1"});
  auto job = remote::Job::create();
  EXPECT_EQ(job->connect(agent.endpoint()).accounts().size(), 2u);
  job->close();
}

TEST(Operator, AnUnknownKeyInAConfigFileIsAnErrorNamingIt) {
  TempFile config("devcies = 5\n");
  const CommandRun r = run_agent("--listen 127.0.0.1:0 --config " + config.path);
  EXPECT_FALSE(r.exited(0)) << r.out;
  EXPECT_NE(r.out.find("devcies"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;
}

TEST(Operator, AConfigFilesErrorNamesTheFileAndTheLine) {
  const std::string head = "# rig-agent\ndevices = 2\n\nlog = \"info\"   # a comment\n";  // lines 1 to 4
  const struct {
    const char* line;
    const char* error;
  } kBad[] = {{"devcies = 3", "unknown name 'devcies'"},
              {"devices = 99", "--devices: Value 99 not in range 0 to 63"},
              {"device-budget = 1GB", "--device-budget: '1GB' is not a whole number of bytes"},
              {"host-budget = 17179869184GiB", "--host-budget: '17179869184GiB' is not a whole number of bytes"},
              {"[agent]", "sections are not read"}};
  for (const auto& bad : kBad) {
    TempFile config(head + bad.line + "\nmax-stripes = 2\n");
    const CommandRun r = run_agent("--listen 127.0.0.1:0 --config " + config.path);
    EXPECT_FALSE(r.exited(0)) << r.out;
    EXPECT_NE(r.out.find(config.path + ":5: " + bad.error), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("INI"), std::string::npos) << r.out;
  }
  TempFile list("devices = 2\nsecret-file = [\"/nonexistent/a\",\n  \"/nonexistent/b\"]\ndevcies = 1\n");
  const CommandRun r = run_agent("--listen 127.0.0.1:0 --config " + list.path);
  EXPECT_NE(r.out.find(list.path + ":4: unknown name 'devcies'"), std::string::npos)
      << "a list over two lines counts both: " << r.out;
}

TEST(Operator, AConfigFileTakesSizesWithUnits) {
  TempFile config("device-budget = 1GiB\nhost-budget = \"512MiB\"\nmax-staged-bytes = 64MiB\n");
  LoggedAgent a({"--config", config.path});
  const std::string log = a.log.read();
  EXPECT_NE(log.find("device_budget=1073741824 host_budget=536870912"), std::string::npos) << log;
  EXPECT_NE(log.find("max_staged_bytes=67108864"), std::string::npos) << log;
}

TEST(Operator, TheEffectiveSettingsAreLoggedAtStart) {
  LoggedAgent a({"--devices", "3", "--silence-ms", "4321"});
  // Logged before the line that names the endpoint, which AgentProcess has read.
  const std::string log = a.log.read();
  EXPECT_NE(log.find("listen=127.0.0.1:" + port_of(a.agent.endpoint())), std::string::npos) << log;
  EXPECT_NE(log.find("devices=3"), std::string::npos) << log;
  EXPECT_NE(log.find("silence_ms=4321"), std::string::npos) << log;
  EXPECT_NE(log.find(std::string("rig-agent ") + wire::software_version()), std::string::npos) << log;
}

TEST(Operator, AJobsEndIsLoggedWithItsReasonDurationHandoversAndBytes) {
  LoggedAgent a;
  auto job = remote::Job::create();
  harness::Driven dev(job->connect(a.agent.endpoint()), 1);
  auto region = dev->alloc(edge::Memory::kDevice, 4096);
  ASSERT_TRUE(region.has_value());
  std::vector<std::byte> up(4096, std::byte{7});
  harness::Work w;
  w.copy(rig_copy{harness::host_side(up.data()), harness::region_side(*region, 0), 1, 4096, 4096, 4096});
  dev.wait(dev.run(w));
  job->close();
  const std::string log = a.wait_for("ended:");
  const auto at = log.find("ended:");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find("the client closed the job"), std::string::npos) << line;
  EXPECT_NE(line.find("handovers 1,"), std::string::npos) << line;
  EXPECT_NE(line.find("bytes in "), std::string::npos) << line;
  EXPECT_NE(line.find("bytes out "), std::string::npos) << line;
  EXPECT_NE(line.find(" s,"), std::string::npos) << line;
}

// The client's Close, read by the agent after its stop began (the session was busy with a copy
// when both came), ends the job as the client's word: logged "ended", not failed with "the agent
// is stopping". (Had the stop come first, both logs would be right; the copy makes it come
// first on any machine where signalling beats moving 128 MiB.)
TEST(Operator, AJobClosedByItsClientAsTheAgentStopsIsLoggedAsEndedNotFailed) {
  LoggedAgent a({"--drain-ms", "60000"});
  constexpr std::uint64_t kHalf = 128ull << 20;
  auto job = remote::Job::create();
  harness::Driven dev(job->connect(a.agent.endpoint()), 1);
  auto region = dev->alloc(edge::Memory::kDevice, 2 * kHalf);
  ASSERT_TRUE(region.has_value());
  harness::Work busy;
  busy.between(*region, 0, *region, kHalf, kHalf);
  dev.run(busy);
  job->close();
  ::kill(a.agent.pid(), SIGTERM);
  const int status = a.agent.wait_exit(30000);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::string log = a.log.read();
  EXPECT_NE(log.find("ended: the client closed the job"), std::string::npos) << log;
  EXPECT_EQ(log.find("failed:"), std::string::npos) << log;
}

}  // namespace
}  // namespace rig::test
