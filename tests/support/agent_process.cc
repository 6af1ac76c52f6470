#include "agent_process.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string_view>
#include <thread>

#include "rig/harness/agent_child.h"

extern char** environ;

namespace rig::test {

// RIG_AGENT: a rig-agent elsewhere than the build's (scripts/gpu-check runs a bundle of binaries).
std::string agent_path() {
  const char* bundled = std::getenv("RIG_AGENT");
  return bundled != nullptr && *bundled != '\0' ? bundled : RIG_AGENT_PATH;
}

namespace {

// Made before main (no thread runs yet, so setenv races with no getenv).
struct TestSecretFile {
  TestSecretFile() { ::setenv("RIG_SECRET_FILE", file.path().c_str(), 1); }
  engine::PrivateSecretFile file = *engine::PrivateSecretFile::make();  // or stops, saying why
};
const TestSecretFile g_secret_file;

// The environment without the secret's variables (an open agent's).
// This process's environment for an agent: without the secret if `open`, with `vars` over
// what it has (their strings stay in `vars`).
std::vector<char*> agent_environment(bool open, std::vector<std::string>& vars) {
  auto named = [](std::string_view entry, std::string_view var) {
    const std::size_t eq = var.find('=');
    return entry.substr(0, entry.find('=')) == var.substr(0, eq);
  };
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v(*e);
    if (open && (v.rfind("RIG_SECRET_FILE=", 0) == 0 || v.rfind("RIG_SECRET=", 0) == 0)) continue;
    if (std::any_of(vars.begin(), vars.end(), [&](const std::string& s) { return named(v, s); })) continue;
    env.push_back(*e);
  }
  for (std::string& s : vars) env.push_back(s.data());
  env.push_back(nullptr);
  return env;
}

// RIG_TEST_DEVICE_COUNT=N: the agent opens at most N simulated devices besides its host, as a
// host with N GPUs gives the suite on CUDA (RIG_TEST_DEVICES=cuda); an isolated device past N
// is dropped. Tests that need more devices skip, saying so (fixture.h: RIG_NEED_DEVICES).
void limit_devices(std::vector<std::string>& argv) {
  const char* limit = std::getenv("RIG_TEST_DEVICE_COUNT");
  if (limit == nullptr || *limit == '\0') return;
  const unsigned long n = std::strtoul(limit, nullptr, 10);
  // An agent told no count opens its default (2): it gets the cap as its count.
  if (std::find(argv.begin(), argv.end(), "--devices") == argv.end()) {
    argv.insert(argv.end(), {"--devices", std::to_string(n)});
  }
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] != "--devices" && argv[i] != "--isolated") continue;
    const unsigned long v = std::strtoul(argv[i + 1].c_str(), nullptr, 10);
    if (argv[i] == "--devices" && v > n) argv[i + 1] = std::to_string(n);
    if (argv[i] == "--isolated" && v > n) argv[i + 1] = std::to_string(0);
  }
}

// The agent's command line: the build's rig-agent (or RIG_AGENT), loopback unless `args` names
// --listen, the RIG_TEST_* settings, `args`, all behind `wrapper`.
std::vector<std::string> agent_command(const std::vector<std::string>& args, const std::vector<std::string>& wrapper) {
  std::vector<std::string> argv_s = {agent_path(), "--log", "warn"};
  // Loopback unless the test names its own address (an agent in a network namespace).
  if (std::find(args.begin(), args.end(), "--listen") == args.end()) {
    argv_s.insert(argv_s.end(), {"--listen", "127.0.0.1:0"});
  }
  // RIG_TEST_AGENT_ARGS: options every test's agent gets (the suite run again against another
  // configuration of the agent's devices, such as --sim-completion later).
  // RIG_TEST_DEVICES=cuda: the agent's devices are the machine's GPUs (the proxy suite on a GPU
  // host, scripts/gpu-check); tests that name simulated devices (--devices, --isolated) then
  // get the GPUs the machine has.
  if (const char* kind = std::getenv("RIG_TEST_DEVICES"); kind != nullptr && *kind != '\0') {
    argv_s.insert(argv_s.end(), {"--device-kind", kind});
  }
  if (const char* extra = std::getenv("RIG_TEST_AGENT_ARGS")) {
    std::istringstream words(extra);
    for (std::string w; words >> w;) argv_s.push_back(w);
  }
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  limit_devices(argv_s);
  argv_s.insert(argv_s.begin(), wrapper.begin(), wrapper.end());
  return argv_s;
}

}  // namespace

bool agent_devices_are_gpus() {
  const char* kind = std::getenv("RIG_TEST_DEVICES");
  return kind != nullptr && std::string(kind) == "cuda";
}

engine::Secret test_secret() { return *engine::read_secret_file(g_secret_file.file.path()); }

AgentProcess::AgentProcess(std::vector<std::string> args, bool open, std::vector<std::string> wrapper, AgentEnv vars) {
  const bool own = open || !vars.vars.empty();
  std::vector<char*> env = own ? agent_environment(open, vars.vars) : std::vector<char*>{};
  // A generous bound: agents start in milliseconds, also under the sanitizers and wrappers.
  harness::AgentChild child = harness::spawn_agent(agent_command(args, wrapper), own ? env.data() : nullptr, 60000);
  pid_ = child.pid;
  endpoint_ = std::move(child.endpoint);
}

AgentProcess::~AgentProcess() {
  if (pid_ > 0) signal(SIGKILL);
}

bool AgentProcess::alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

int AgentProcess::wait_exit(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (pid_ > 0) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

void AgentProcess::signal(int sig) {
  if (pid_ <= 0) return;
  ::kill(pid_, sig);
  if (sig == SIGKILL || sig == SIGTERM) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
}

}  // namespace rig::test
