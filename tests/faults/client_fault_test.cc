// The client process killed in the middle of a job: the agent frees everything the job held
// (its thread, its descriptors, its memory, its place among --max-jobs) and serves the next job.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "agent_process.h"
#include "in_namespace.h"
#include "process_facts.h"
#include "run_and_wait.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;
using std::chrono::milliseconds;

constexpr std::size_t kHeldBytes = 64u << 20;
constexpr milliseconds kFreeBound{InNamespace::kAgentSilenceMs + InNamespace::kSlackMs};

// A client in a process of its own, forked before this process starts any thread (a
// sanitizer refuses threads in a child forked from a threaded parent): once go() is called it
// runs `job` against `endpoint`, which writes a byte to `ready` when it got as far as it should,
// and then waits to be killed.
class ClientProcess {
 public:
  ClientProcess(const std::string& endpoint, std::function<void(remote::Link&, int ready)> job) {
    int ready[2], go[2];
    if (::pipe(ready) != 0 || ::pipe(go) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(go[1]);
      char c = 0;
      if (::read(go[0], &c, 1) != 1) ::_exit(2);
      try {
        auto j = remote::Job::create();
        job(j->connect(endpoint, InNamespace::options()), ready[1]);
        for (;;) ::pause();
      } catch (...) {
        ::_exit(3);
      }
    }
    ::close(ready[1]);
    ::close(go[0]);
    ready_ = ready[0];
    go_ = go[1];
  }
  ~ClientProcess() {
    kill();
    ::close(ready_);
    ::close(go_);
  }
  // Lets the client run; true once it said it got as far as it should (false: it failed or
  // died first).
  bool go_and_wait_ready() {
    char c = 'g';
    if (::write(go_, &c, 1) != 1) return false;
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
  int ready_ = -1, go_ = -1;
};

// What the agent holds again once the client is gone: as many threads and descriptors as before
// the job, and (where freed memory leaves the process: not under a sanitizer, whose quarantine or
// shadow memory stays resident) less than 16 MiB more resident memory.
bool back_to(pid_t agent, const ProcessHolds& before) {
  const ProcessHolds now = held_by(agent);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
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

// A job of this process's on the same agent, which must not notice another client's death.
class Bystander {
 public:
  explicit Bystander(const std::string& endpoint)
      : job_(remote::Job::create()), dev_(job_->connect(endpoint), 2), region_(dev_->alloc(edge::Memory::kDevice, 4096)) {}
  // A round trip through the agent: "" when its bytes came back exactly.
  std::string round_trip() {
    if (!region_) return "no region";
    std::vector<std::byte> bytes(4096, std::byte{0x42}), back(4096);
    Work w;
    w.to_device(bytes.data(), *region_, 0, 4096).to_host(*region_, 0, back.data(), 4096);
    run_and_wait(dev_, w);
    if (job_->failed()) return job_->fault_text();
    return back == bytes ? "" : "the bytes came back changed";
  }

 private:
  std::shared_ptr<remote::Job> job_;
  Driven dev_;
  std::optional<remote::Region> region_;
};

TEST(ClientFault, AClientKilledWhileHoldingMemoryLeavesTheAgentHoldingNothingOfItAndOtherJobsServed) {
  // Two jobs at most: the bystander's, and the killed client's until the agent frees it.
  AgentProcess agent({"--max-jobs", "2", "--device-budget", std::to_string(256u << 20)});
  ClientProcess client(agent.endpoint(), fill_and_hold);
  Bystander bystander(agent.endpoint());
  ASSERT_EQ(bystander.round_trip(), "");
  const ProcessHolds before = held_by(agent.pid());
  ASSERT_TRUE(client.go_and_wait_ready());
  EXPECT_GT(held_by(agent.pid()).resident_bytes, before.resident_bytes + kHeldBytes / 2);
  client.kill();
  const milliseconds took = within(kFreeBound, [&] { return back_to(agent.pid(), before); });
  const ProcessHolds after = held_by(agent.pid());
  EXPECT_GE(took.count(), 0) << "the agent still holds threads " << after.threads << " [" << after.thread_names
                             << "] (before " << before.threads << " [" << before.thread_names << "]), fds "
                             << after.fds << " (" << before.fds << "), resident " << after.resident_bytes << " ("
                             << before.resident_bytes << ")";
  EXPECT_EQ(bystander.round_trip(), "") << "another client's death reached this job";
  EXPECT_EQ(connects_within(agent.endpoint()), "");
}

class ClientFaultMidTransfer : public InNamespace {};

TEST_F(ClientFaultMidTransfer, AClientKilledInsideAHandoversBytesLeavesTheAgentHoldingNothingOfIt) {
  start_agent();
  // A job that comes and goes first: what the agent starts once for its first connection is then
  // in `before`. `before` is read once the agent let go of that job, not after a fixed wait, which
  // a loaded machine can outlast (`before` then counts that job's thread and descriptors, or its
  // stripes', and the agent, back to fewer, never equals it): its descriptors and threads are
  // back to what the idle agent held. No allowance for ThreadSanitizer's background thread: it
  // starts with the agent's first thread, the one that takes signals, before the agent listens,
  // so `idle` holds it (an allowance let the closed job's thread pass for it, and fail the test).
  const ProcessHolds idle = held_by(agent_->pid());
  remote::Job::create()->connect(agent_->endpoint(), options()).job().close();
  ASSERT_GE(within(kFreeBound, [&] {
              const ProcessHolds now = held_by(agent_->pid());
              return now.fds <= idle.fds && now.threads <= idle.threads;
            }).count(),
            0)
      << "the agent did not let go of a job its client closed";
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
  ASSERT_TRUE(client.go_and_wait_ready());
  const std::uint64_t base = net_->bytes_out();
  ASSERT_GE(within(milliseconds(20000), [&] { return net_->bytes_out() > base + (2u << 20); }).count(), 0);
  client.kill();
  const milliseconds took = within(kFreeBound, [&] { return back_to(agent_->pid(), before); });
  const ProcessHolds after = held_by(agent_->pid());
  EXPECT_GE(took.count(), 0) << "the agent did not free the killed client's job within " << kFreeBound.count()
                             << " ms: threads " << after.threads << " [" << after.thread_names << "] (before "
                             << before.threads << " [" << before.thread_names << "]), fds " << after.fds << " ("
                             << before.fds << ")";
  net_->mend();
  EXPECT_EQ(connects_within(agent_->endpoint()), "");
}

}  // namespace
}  // namespace rig::test
