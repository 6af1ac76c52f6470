// The agent's threads and memory exhausted by real limits (RLIMIT_NPROC for an agent run as an
// unprivileged user; RLIMIT_AS): each job past them is refused or answered None with a reason,
// and the agent goes on serving the jobs it has and the next ones.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent_process.h"
#include "process_facts.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;

constexpr unsigned kNobody = 65534;

// The test secret in a file that only `uid` can read (an agent that runs as that user proves it).
class SecretFor {
 public:
  explicit SecretFor(unsigned uid) {
    char name[] = "/tmp/rig-secret-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) throw std::runtime_error("mkstemp");
    path_ = name;
    const engine::Secret s = test_secret();
    const bool ok = ::write(fd, s.bytes.data(), s.bytes.size()) == static_cast<ssize_t>(s.bytes.size()) && ::fchmod(fd, 0600) == 0 &&
                    ::fchown(fd, uid, uid) == 0;
    ::close(fd);
    if (!ok) throw std::runtime_error("cannot hand the secret to uid " + std::to_string(uid));
  }
  ~SecretFor() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#else
  return false;
#endif
}

TEST(Exhaustion, NoThreadForAConnectionRefusesItWithTheReasonAndTheAgentServesOn) {
  if (::geteuid() != 0) GTEST_SKIP() << "skipped: running the agent as another user needs root";
  if (std::system("command -v setpriv >/dev/null && command -v prlimit >/dev/null") != 0) {
    GTEST_SKIP() << "skipped: setpriv and prlimit (util-linux) are not installed";
  }
  SecretFor secret(kNobody);
  // Threads the agent keeps once a job has come and gone (a sanitizer's own threads, started
  // with the first connection's, included): the fewest seen in the second after a job closed,
  // on an agent of the same build.
  std::uint64_t idle_threads = UINT64_MAX;
  {
    AgentProcess probe;
    remote::Job::create()->connect(probe.endpoint()).job().close();
    within(std::chrono::milliseconds(1000), [&] {
      idle_threads = std::min(idle_threads, held_by(probe.pid()).threads);
      return false;
    });
  }
  // Room for the idle agent and one connection thread: root ignores RLIMIT_NPROC, so the agent
  // runs as nobody (who runs nothing else here).
  const std::string nproc = std::to_string(idle_threads + 1);
  AgentProcess agent({"--secret-file", secret.path()}, false,
                     {"prlimit", "--nproc=" + nproc, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  auto first = remote::Job::create();
  std::vector<std::byte> back(4096);
  Driven dev(first->connect(agent.endpoint()), 1);
  try {
    remote::Job::create()->connect(agent.endpoint());
    FAIL() << "a second connection got a thread past RLIMIT_NPROC " << nproc;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("could not start a thread"), std::string::npos) << e.what();
  }
  // The job that has its thread is served on.
  const auto region = dev->alloc(edge::Memory::kDevice, 4096);
  ASSERT_TRUE(region);
  std::vector<std::byte> bytes(4096, std::byte{1});
  Work w;
  w.to_device(bytes.data(), *region, 0, 4096).to_host(*region, 0, back.data(), 4096);
  dev.wait(dev.run(w));
  EXPECT_EQ(back, bytes);
  EXPECT_FALSE(first->failed()) << first->fault_text();
  first->close();
  EXPECT_EQ(connects_within(agent.endpoint()), "") << "no thread came back for the next job";
}

TEST(Exhaustion, AnAllocPastTheAgentsMemoryIsNoneAndTheAgentServesOn) {
  if (sanitized()) GTEST_SKIP() << "skipped under sanitizers: their shadow memory needs more address space than the limit";
  // 1 GiB of address space, devices that promise 8 GiB and an agent's host memory limit past
  // any machine's: the allocator, not the budget nor --max-host-bytes, refuses.
  AgentProcess agent({"--device-budget", std::to_string(8ull << 30), "--max-host-bytes", "1TiB"}, false,
                     {"prlimit", "--as=" + std::to_string(1ull << 30)});
  auto job = remote::Job::create();
  std::vector<std::byte> back(16u << 20);
  Driven dev(job->connect(agent.endpoint()), 1);
  EXPECT_FALSE(dev->alloc(edge::Memory::kDevice, 4ull << 30)) << "an alloc past the agent's memory got a region";
  const auto region = dev->alloc(edge::Memory::kDevice, 16u << 20);
  ASSERT_TRUE(region) << "the agent refused a small alloc after a failed large one";
  std::vector<std::byte> bytes(16u << 20, std::byte{9});
  Work w;
  w.to_device(bytes.data(), *region, 0, bytes.size()).to_host(*region, 0, back.data(), back.size());
  dev.wait(dev.run(w));
  EXPECT_EQ(back, bytes);
  EXPECT_FALSE(job->failed()) << job->fault_text();
  EXPECT_TRUE(agent.alive());
}

}  // namespace
}  // namespace rig::test
