// The client process killed in the middle of a job: the agent frees everything the job held
// (its thread, its descriptors, its memory, its place among --max-jobs) and serves the next job.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <vector>

#include "agent_process.h"
#include "in_namespace.h"
#include "process_facts.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;
using std::chrono::milliseconds;

constexpr std::size_t kHeldBytes = 64u << 20;
constexpr milliseconds kFreeBound{InNamespace::kAgentSilenceMs + InNamespace::kSlackMs};

// A client in a process of its own (forked before this process starts any thread): runs `job`
// against `endpoint`, then writes a byte to `ready` and waits to be killed.
class ClientProcess {
 public:
  ClientProcess(const std::string& endpoint, std::function<void(remote::Link&, int ready)> job) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::close(p[0]);
      try {
        auto j = remote::Job::create();
        job(j->connect(endpoint, InNamespace::options()), p[1]);
        for (;;) ::pause();
      } catch (...) {
        ::_exit(3);
      }
    }
    ::close(p[1]);
    ready_ = p[0];
  }
  ~ClientProcess() {
    kill();
    ::close(ready_);
  }
  // Whether the client said it got as far as it should (false: it failed or died first).
  bool ready() {
    char c = 0;
    return ::read(ready_, &c, 1) == 1;
  }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int ready_ = -1;
};

// What the agent holds again once the client is gone: as many threads and descriptors as before
// the job, and (where freed memory leaves the process: not under AddressSanitizer's quarantine)
// less than 16 MiB more resident memory.
bool back_to(pid_t agent, const ProcessHolds& before) {
  const ProcessHolds now = held_by(agent);
#if defined(__SANITIZE_ADDRESS__)
  const bool memory = true;
#else
  const bool memory = now.resident_bytes < before.resident_bytes + (16u << 20);
#endif
  return now.threads == before.threads && now.fds == before.fds && memory;
}

// A job that fills kHeldBytes of a device with bytes from here (resident in the agent), then
// holds it.
void fill_and_hold(remote::Link& link, int ready) {
  Driven dev(link, 1);
  const auto region = dev->alloc(edge::Memory::kDevice, kHeldBytes);
  if (!region) ::_exit(4);
  std::vector<std::byte> from(kHeldBytes, std::byte{0x77});
  Work w;
  w.to_device(from.data(), *region, 0, kHeldBytes);
  dev.wait(dev.run(w));
  if (::write(ready, "r", 1) != 1) ::_exit(5);
  for (;;) ::pause();
}

TEST(ClientFault, AClientKilledWhileHoldingMemoryLeavesTheAgentHoldingNothingOfIt) {
  AgentProcess agent({"--max-jobs", "1", "--device-budget", std::to_string(256u << 20)});
  const ProcessHolds before = held_by(agent.pid());
  ClientProcess client(agent.endpoint(), fill_and_hold);
  ASSERT_TRUE(client.ready());
  EXPECT_GT(held_by(agent.pid()).resident_bytes, before.resident_bytes + kHeldBytes / 2);
  client.kill();
  const milliseconds took = within(kFreeBound, [&] { return back_to(agent.pid(), before); });
  const ProcessHolds after = held_by(agent.pid());
  EXPECT_GE(took.count(), 0) << "the agent still holds threads " << after.threads << " (before " << before.threads
                             << "), fds " << after.fds << " (" << before.fds << "), resident " << after.resident_bytes
                             << " (" << before.resident_bytes << ")";
  EXPECT_EQ(connects_within(agent.endpoint()), "");
}

class ClientFaultMidTransfer : public InNamespace {};

TEST_F(ClientFaultMidTransfer, AClientKilledInsideAHandoversBytesLeavesTheAgentHoldingNothingOfIt) {
  start_agent();
  const ProcessHolds before = held_by(agent_->pid());
  net_->slow(200);  // 64 MiB take about 3 s: the kill comes mid-payload
  ClientProcess client(agent_->endpoint(), [](remote::Link& link, int ready) {
    Driven dev(link, 1);
    const auto region = dev->alloc(edge::Memory::kDevice, kHeldBytes);
    if (!region) ::_exit(4);
    std::vector<std::byte> from(kHeldBytes, std::byte{0x77});
    if (::write(ready, "r", 1) != 1) ::_exit(5);
    Work w;
    w.to_device(from.data(), *region, 0, kHeldBytes);
    dev.run(w);
  });
  ASSERT_TRUE(client.ready());
  const std::uint64_t base = net_->bytes_out();
  ASSERT_GE(within(milliseconds(20000), [&] { return net_->bytes_out() > base + (2u << 20); }).count(), 0);
  client.kill();
  const milliseconds took = within(kFreeBound, [&] { return back_to(agent_->pid(), before); });
  EXPECT_GE(took.count(), 0) << "the agent did not free the killed client's job within " << kFreeBound.count() << " ms";
  net_->mend();
  EXPECT_EQ(connects_within(agent_->endpoint()), "");
}

}  // namespace
}  // namespace rig::test
