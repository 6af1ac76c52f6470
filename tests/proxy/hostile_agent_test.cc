// A hostile or broken agent: every bad report fails the job with a clear reason, writes nothing
// into this process's memory, and wakes every blocked call (DESIGN invariants 2, 7, 8).
#include <gtest/gtest.h>

#include <linux/sockios.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <new>
#include <thread>
#include <vector>

#include "agent_process.h"
#include "link_core.h"
#include "test_connect.h"
#include "raw_peer.h"
#include "process_facts.h"
#include "thread_hold.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"
#include "rig/remote/proxy.h"
#include "test_hook.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;
using remote::Job;

// Waits until the job has failed and returns its root cause ("" if it never fails).
// Sets the promise on every path out of a test, so that a fake agent's thread waiting on it ends.
struct ReleaseAtEnd {
  std::promise<void>& p;
  bool released = false;
  void now() { released = true, p.set_value(); }
  ~ReleaseAtEnd() {
    if (!released) p.set_value();
  }
};
using HookInstalled = remote::test_hook::Scoped;  // a test hook of the link for a scope

std::string root_cause(Job& job) {
  for (int i = 0; i < 5000 && !job.failed(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return job.failed() ? job.fault_text() : std::string();
}




TEST(HostileAgent, UnknownFrameTypeFailsTheJob) {
  FakeAgent agent(1, [](int fd) {
    const wire::FrameHeader h{0, 99, 0};
    write_all(fd, &h, sizeof h);
    drain(fd);
  });
  auto job = Job::create();
  job->connect(agent.endpoint());
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("protocol violation by the agent"), std::string::npos) << why;
  EXPECT_NE(why.find("unknown type"), std::string::npos) << why;
  job->close();
}

// A message of a known type that only a client sends (a release) fails the job, naming it.
TEST(HostileAgent, AMessageOnlyAClientSendsFailsTheJob) {
  FakeAgent agent(1, [](int fd) {
    send_msg(fd, wire::MsgType::kRelease,
             wire::Release{1, static_cast<std::uint16_t>(wire::ReleaseKind::kObject), 0, 0});
    drain(fd);
  });
  auto job = Job::create();
  job->connect(agent.endpoint());
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("protocol violation by the agent: unexpected release message"), std::string::npos) << why;
  job->close();
}

TEST(HostileAgent, StripedBytesOnALinkWithoutStripesFailTheJob) {
  FakeAgent agent(1, [](int fd) {
    send_msg(fd, wire::MsgType::kStriped, wire::Striped{1, 0, 1, 0, 4096, 4096});
    drain(fd);
  });
  auto job = Job::create();
  job->connect(agent.endpoint());
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("protocol violation by the agent: striped bytes on a link without stripes"),
            std::string::npos) << why;
  job->close();
}

// A failure message that does not decode is the agent's violation, not its reason: the job's
// root cause says so and quotes no text of the agent's.
TEST(HostileAgent, AFailureThatDoesNotDecodeIsAViolationNotTheAgentsReason) {
  FakeAgent agent(1, [](int fd) {
    send_msg(fd, wire::MsgType::kFailure, wire::Failure{wire::kNoDevice, 5});  // 5 text bytes, none sent
    drain(fd);
  });
  auto job = Job::create();
  job->connect(agent.endpoint());
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("protocol violation by the agent: failure: length does not match its text"), std::string::npos)
      << why;
  EXPECT_EQ(why.find("the agent failed the job"), std::string::npos) << why;
  job->close();
}

TEST(HostileAgent, BytesForADeviceNeverRegisteredFailTheJob) {
  FakeAgent agent(2, [](int fd) {
    std::byte payload[16]{};
    send_msg(fd, wire::MsgType::kBytes, wire::Bytes{2, 0, 1, 0, 16, 0}, payload);
    drain(fd);
  });
  auto job = Job::create();
  job->connect(agent.endpoint());
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("never registered"), std::string::npos) << why;
  job->close();
}

// One value against a scripted agent that answers the alloc, reads the handover, then sends
// what `reports(fd, value)` sends. The value copies 64 bytes into `here` when it is not empty,
// and between objects otherwise. Returns the job's root cause, the word, and the value.
struct Outcome {
  std::string why;
  std::uint64_t word = 0;
  std::uint64_t value = 0;
};
Outcome one_value_against(const std::function<void(int, std::uint64_t)>& reports, std::span<std::byte> here) {
  FakeAgent agent(1, [&](int fd) {
    answer_next_request(fd);
    reports(fd, read_handover(fd));
    drain(fd);
  });
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  auto region = dev->alloc(edge::Memory::kDevice, 64);
  if (!region) return {"alloc failed", 0, 0};
  Work w;
  if (here.empty()) {
    w.between(*region, 0, *region, 0, 64);
  } else {
    w.to_host(*region, 0, here.data(), 64);
  }
  Outcome out;
  out.value = dev.run(w);
  out.why = root_cause(*job);
  out.word = dev->signaled();
  job->close();
  return out;
}

// An agent that answers the alloc, then reads nothing until the test ends (its scope).
struct AgentThatStopsReading {
  AgentThatStopsReading()
      : fake(1, [released = release.get_future().share()](int fd) {
          answer_next_request(fd);
          released.wait();
          drain(fd);
        }) {}
  std::string endpoint() const { return fake.endpoint(); }
  std::promise<void> release;  // first made, last gone
  FakeAgent fake;
  ReleaseAtEnd at_end{release};  // lets the fake agent's script end before it is joined
};

TEST(HostileAgent, ASubmitBlockedOnAnAgentThatStoppedReadingReturnsOnceTheJobCloses) {
  // The agent answers the alloc, then reads nothing until the test ends: the client's send of
  // 64 MiB fills the socket buffers (about 10 MB on loopback) and blocks in the kernel.
  AgentThatStopsReading agent;
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  auto region = dev->alloc(edge::Memory::kDevice, 64u << 20);
  ASSERT_TRUE(region.has_value());
  std::vector<std::byte> up(64u << 20, std::byte{1});
  Work w;
  w.to_device(up.data(), *region, 0, up.size());
  auto submitted = std::async(std::launch::async, [&] { return dev.submit(w); });
  EXPECT_EQ(submitted.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the submit finished although the agent read nothing";
  job->close();  // shuts the connection down: the blocked send returns
  ASSERT_EQ(submitted.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "submit still blocked after the job's close";
  const Driven::Submitted s = submitted.get();
  EXPECT_EQ(s.rc, RIG_FAILED);
  EXPECT_NE(s.why.find("closed"), std::string::npos) << s.why;
}

TEST(HostileAgent, ASmallSubmitBlockedOnAnAgentThatStoppedReadingFailsOnceTheJobCloses) {
  // Sends of less than 64 KiB go by sendmsg(2) on io_uring's backend too (UringSocket::
  // kRingSendMinBytes): copies of 48 KiB, one after another, fill the socket until one blocks.
  // The job's close cuts that send short: it must fail that submit, not take what went for the
  // whole message (the failure would then come only with the next submit).
  constexpr std::size_t kPiece = 48u << 10;
  AgentThatStopsReading agent;
  auto job = Job::create();
  Driven dev(job->connect(agent.endpoint()), 1);
  auto region = dev->alloc(edge::Memory::kDevice, 64u << 20);
  ASSERT_TRUE(region.has_value());
  std::vector<std::byte> up(kPiece, std::byte{1});
  std::atomic<std::uint64_t> committed{0};  // release by the submitter; acquire by the test
  auto failed_at = std::async(std::launch::async, [&] {
    for (std::uint64_t i = 0;; ++i) {
      Work w;
      w.to_device(up.data(), *region, (i * kPiece) % ((64u << 20) - kPiece), kPiece);
      if (!dev.submit(w).ok()) return i;
      committed.store(i + 1, std::memory_order_release);
    }
  });
  // Blocked: no submit returned for a second (the socket holds about 10 MB: a few hundred).
  for (std::uint64_t seen = ~0ull; seen != committed.load(std::memory_order_acquire);) {
    seen = committed.load(std::memory_order_acquire);
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  const std::uint64_t blocked = committed.load(std::memory_order_acquire);
  job->close();
  ASSERT_EQ(failed_at.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(failed_at.get(), blocked) << "the submit blocked at the close did not fail";
}

// An agent that fails a job says why, then resets the connection: a send of the client then fails
// with EPIPE or ECONNRESET while the failure lies unread in its socket. The order is forced: the
// link's receiving thread is held in a signal handler until the send has failed (the link's
// test hook kSendFailed), so the broken send comes first. `call` makes the send (on a 64 MiB device object);
// with `mid_call` the agent resets once `call`'s bytes arrive, else before `call` runs. Returns
// `call`'s result and the job's root cause (SEMANTICS "The agent's reason over a broken send").
std::atomic<bool> g_send_failed{false};  // release in the hook; acquire by the test
void note_send_failed(remote::test_hook::Point p, std::uint32_t) {
  if (p == remote::test_hook::Point::kSendFailed) g_send_failed.store(true, std::memory_order_release);
}
// The same, then throws as an allocation that failed there would.
void throw_at_send_failed(remote::test_hook::Point p, std::uint32_t device) {
  note_send_failed(p, device);
  if (p == remote::test_hook::Point::kSendFailed) throw std::bad_alloc();
}

struct BrokenSend {
  std::string reason = "device 1 caught fire";
  std::string root_cause;
  std::string returned;  // what `call` returned
};
BrokenSend the_root_cause_over_a_broken_send(bool mid_call,
                                             const std::function<std::string(Driven&, const remote::Region&)>& call,
                                             remote::test_hook::Fn hook = &note_send_failed) {
  BrokenSend out;
  std::promise<void> go;
  std::shared_future<void> gone = go.get_future().share();
  FakeAgent agent(1, [reason = out.reason, gone, mid_call](int fd) {
    answer_next_request(fd);
    gone.wait();
    for (int i = 0, queued = 0; mid_call && i < 10'000 && queued == 0; ++i) {  // `call`'s bytes arriving
      if (::ioctl(fd, FIONREAD, &queued) != 0) return;
      if (queued == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    send_msg(fd, wire::MsgType::kFailure, wire::Failure{1, static_cast<std::uint32_t>(reason.size())},
             std::as_bytes(std::span(reason)));
    // Once the client's kernel acknowledged the failure (it then lies in the client's socket),
    // reset the connection: connect(AF_UNSPEC) disconnects a TCP socket with a reset and leaves
    // the fd to FakeAgent.
    for (int i = 0, unacked = 1; i < 10'000 && unacked > 0; ++i) {
      if (::ioctl(fd, SIOCOUTQ, &unacked) != 0) return;
      if (unacked > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    sockaddr none{};
    none.sa_family = AF_UNSPEC;
    ::connect(fd, &none, sizeof none);
  });
  ReleaseAtEnd go_at_end{go};
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  auto region = dev->alloc(edge::Memory::kDevice, 64u << 20);
  EXPECT_TRUE(region.has_value());
  if (!region) return out;

  ThreadHold receiver("rig-recv");  // the job's one receiving thread, held until let go
  EXPECT_TRUE(receiver.held()) << receiver.error();
  if (!receiver.held()) return out;
  g_send_failed.store(false, std::memory_order_relaxed);
  const HookInstalled installed(hook);  // release: the store above comes first

  std::future<std::string> called;
  if (mid_call) {
    called = std::async(std::launch::async, [&] { return call(dev, *region); });
    go_at_end.now();
    agent.join();
  } else {
    go_at_end.now();
    agent.join();
    called = std::async(std::launch::async, [&] { return call(dev, *region); });
  }
  // The send fails at the reset. Without the wait for the agent's reason, `call` fails the job
  // with "send failed" at once; with it, it waits for the receiving thread, let go only now.
  EXPECT_GE(within(std::chrono::seconds(10), [] { return g_send_failed.load(std::memory_order_acquire); }).count(), 0)
      << "no send failed";
  if (hook == &throw_at_send_failed) {
    // The hook's throw fails the job on its way out of `call`, after the flag above: let the
    // receiving thread go only then, or the agent's failure it reads could still come first.
    EXPECT_GE(within(std::chrono::seconds(10), [&] { return job->failed(); }).count(), 0) << "the throw failed no job";
  }
  receiver.let_go();
  EXPECT_EQ(called.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  out.returned = called.get();
  out.root_cause = root_cause(*job);
  job->close();
  return out;
}

// A submit of a copy of 64 MiB from here into `region`: its why, or "committed" (submit reads
// the bytes before it returns).
std::string submit_64_mib_into(Driven& dev, const remote::Region& region) {
  const std::vector<std::byte> up(64u << 20, std::byte{1});
  Work w;
  w.to_device(up.data(), region, 0, up.size());
  const Driven::Submitted s = dev.submit(w);
  return s.rc == RIG_FAILED ? s.why : std::string("committed");
}

TEST(HostileAgent, AFailureTheAgentSentBeforeResettingIsTheRootCauseNotTheBrokenSendOfASubmit) {
  const BrokenSend b = the_root_cause_over_a_broken_send(true, submit_64_mib_into);
  EXPECT_NE(b.root_cause.find(b.reason), std::string::npos) << b.root_cause;
  EXPECT_EQ(b.returned, b.root_cause);  // RIG_FAILED with the root cause
}

TEST(HostileAgent, AFailureTheAgentSentBeforeResettingIsTheRootCauseNotTheBrokenSendOfAFree) {
  const BrokenSend b = the_root_cause_over_a_broken_send(false, [](Driven& dev, const remote::Region& region) {
    dev->free(region);
    return std::string();
  });
  EXPECT_NE(b.root_cause.find(b.reason), std::string::npos) << b.root_cause;
}

// A submit whose send fails by an exception (no memory for the reason), once its handover is
// recorded, fails the job with that reason at once, rather than leave the records standing for
// bytes and a report that never come; submit returns RIG_FAILED with it. The receiving thread is
// held meanwhile, so the agent's own failure cannot come first.
TEST(HostileAgent, ASubmitThatThrowsOnceItsHandoverIsRecordedFailsTheJobWithWhy) {
  const BrokenSend b = the_root_cause_over_a_broken_send(true, submit_64_mib_into, &throw_at_send_failed);
  EXPECT_NE(b.root_cause.find("a hand-over was recorded and not sent: std::bad_alloc"), std::string::npos)
      << b.root_cause;
  EXPECT_EQ(b.returned, b.root_cause);
}

TEST(HostileAgent, BytesPastThePendingCopyWriteNothing) {
  std::vector<std::byte> buf(256, std::byte{0xaa});
  const Outcome o = one_value_against(
      [](int fd, std::uint64_t v) {
        std::vector<std::byte> payload(128, std::byte{0x11});
        send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v, 0, 128, 0}, payload);
      },
      buf);
  EXPECT_NE(o.why.find("do not match the pending copy"), std::string::npos) << o.why;
  for (std::byte b : buf) ASSERT_EQ(b, std::byte{0xaa});
  EXPECT_EQ(o.word, 0u);
}

// Bytes must continue their copy exactly where what landed ends: one byte ahead of it (a gap)
// or one byte behind it (an overlap) fails the job, and only the first frame's bytes are written.
TEST(HostileAgent, BytesThatDoNotContinueWhereTheCopyLandedWriteNothingMore) {
  for (const std::uint64_t next : {std::uint64_t{17}, std::uint64_t{15}}) {
    std::vector<std::byte> buf(64, std::byte{0xaa});
    const Outcome o = one_value_against(
        [next](int fd, std::uint64_t v) {
          send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v, 0, 16, 0}, std::vector<std::byte>(16, std::byte{0x33}));
          send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v, next, 16, 0}, std::vector<std::byte>(16, std::byte{0x44}));
        },
        buf);
    EXPECT_NE(o.why.find("offset " + std::to_string(next) + ", length 16) do not match the pending copy"),
              std::string::npos) << o.why;
    for (std::size_t i = 0; i < buf.size(); ++i) {
      ASSERT_EQ(buf[i], i < 16 ? std::byte{0x33} : std::byte{0xaa}) << "byte " << i << ", next offset " << next;
    }
    EXPECT_EQ(o.word, 0u);
  }
}

// A later bytes message may carry at most what is left of its copy: one byte more fails the job
// and writes nothing of it, not even inside the copy (the byte past the copy keeps its value).
TEST(HostileAgent, BytesOneByteLongerThanWhatIsLeftOfTheCopyWriteNothingMore) {
  std::vector<std::byte> buf(80, std::byte{0xaa});  // the copy is buf[0, 64)
  const Outcome o = one_value_against(
      [](int fd, std::uint64_t v) {
        send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v, 0, 16, 0}, std::vector<std::byte>(16, std::byte{0x33}));
        send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v, 16, 49, 0}, std::vector<std::byte>(49, std::byte{0x44}));
      },
      std::span<std::byte>(buf.data(), 64));
  EXPECT_NE(o.why.find("offset 16, length 49) do not match the pending copy"), std::string::npos) << o.why;
  for (std::size_t i = 0; i < buf.size(); ++i) {
    ASSERT_EQ(buf[i], i < 16 ? std::byte{0x33} : std::byte{0xaa}) << "byte " << i;
  }
  EXPECT_EQ(o.word, 0u);
}

TEST(HostileAgent, BytesOfAnotherValueWriteNothing) {
  std::vector<std::byte> buf(64, std::byte{0xaa});
  const Outcome o = one_value_against(
      [](int fd, std::uint64_t v) {
        std::vector<std::byte> payload(64, std::byte{0x22});
        send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v + 1, 0, 64, 0}, payload);
      },
      buf);
  EXPECT_NE(o.why.find("do not match the pending copy"), std::string::npos) << o.why;
  for (std::byte b : buf) ASSERT_EQ(b, std::byte{0xaa});
}

TEST(HostileAgent, DoneAboveTheLastSubmittedValueFailsTheJob) {
  const Outcome o = one_value_against(
      [](int fd, std::uint64_t v) { send_msg(fd, wire::MsgType::kDone, wire::Done{1, 0, v + 5}); }, {});
  EXPECT_NE(o.why.find("above the last value submitted"), std::string::npos) << o.why;
  EXPECT_LT(o.word, o.value);
}

TEST(HostileAgent, DoneBeforeItsCopyLandedFailsTheJob) {
  std::vector<std::byte> buf(64);
  const Outcome o = one_value_against(
      [](int fd, std::uint64_t v) { send_msg(fd, wire::MsgType::kDone, wire::Done{1, 0, v}); }, buf);
  EXPECT_NE(o.why.find("while copy part 0"), std::string::npos) << o.why;
  EXPECT_EQ(o.word, 0u);
}

TEST(HostileAgent, AnswerToNoRequestFailsTheJob) {
  FakeAgent agent(1, [](int fd) {
    send_msg(fd, wire::MsgType::kAnswer, wire::Answer{12345, 0, 0, 0, 0});
    drain(fd);
  });
  auto job = Job::create();
  job->connect(agent.endpoint());
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("to no pending request"), std::string::npos) << why;
  job->close();
}

// An answer to an id that shares its slot with a pending request (id + the slots' count) is an
// answer to no request: it fails the job, and the pending call raises Fault with that reason,
// since the slot the receiving thread looked into is given back to the call's withdrawal.
TEST(HostileAgent, AnAnswerToAnIdSharingAPendingRequestsSlotFailsTheJobAndWakesTheCall) {
  FakeAgent agent(1, [](int fd) {
    const std::uint64_t id = read_request(fd);
    send_msg(fd, wire::MsgType::kAnswer, wire::Answer{id + remote::LinkCore::kRequestSlots, 0, 0, 0, 0});
    drain(fd);
  });
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  auto alloc = std::async(std::launch::async, [&] {
    try {
      dev->alloc(edge::Memory::kDevice, 64);
      return std::string("returned");
    } catch (const edge::Fault& f) {
      return std::string(f.what());
    }
  });
  ASSERT_EQ(alloc.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "the alloc never returned";
  const std::string why = alloc.get();
  EXPECT_NE(why.find("to no pending request"), std::string::npos) << why;
  EXPECT_EQ(why, job->fault_text());
  job->close();
}

TEST(HostileAgent, HangingUpWakesABlockedAllocWithFault) {
  FakeAgent agent(1, [](int fd) {
    RawFrame f;
    read_frame(fd, f);  // the alloc request: never answered
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::shutdown(fd, SHUT_RDWR);
  });
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  try {
    dev->alloc(edge::Memory::kDevice, 64);
    FAIL() << "alloc returned although the agent hung up";
  } catch (const edge::Fault& f) {
    EXPECT_NE(std::string(f.what()).find("the agent closed the connection"), std::string::npos) << f.what();
  }
}

TEST(HostileAgent, TheCloseWakesABlockedAllocWithTheJobIsClosed) {
  FakeAgent agent(1, [](int fd) { drain(fd); });  // never answers
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    job->close();
  });
  try {
    dev->alloc(edge::Memory::kDevice, 64);
    FAIL() << "alloc returned although nobody answered";
  } catch (const edge::Fault& f) {
    EXPECT_STREQ(f.what(), "the job is closed");
  }
  closer.join();
}

TEST(HostileAgent, AgentFailureBecomesTheRootCauseOfEveryCall) {
  FakeAgent agent(1, [](int fd) {
    answer_next_request(fd);
    const std::string text = "device 1 caught fire";
    send_msg(fd, wire::MsgType::kFailure, wire::Failure{1, static_cast<std::uint32_t>(text.size())},
             std::as_bytes(std::span(text)));
    drain(fd);
  });
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  auto region = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(region);
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("device 1 caught fire"), std::string::npos) << why;
  EXPECT_THROW(dev->sleep(dev->signaled(), 10), edge::Fault);
  EXPECT_THROW(dev->alloc(edge::Memory::kDevice, 64), edge::Fault);
  Work w;
  w.between(*region, 0, *region, 0, 64);
  const auto s = dev.submit(w);
  EXPECT_EQ(s.rc, RIG_FAILED);
  EXPECT_EQ(s.why, why);
  // stop writes the last value given to submit, also one whose submit failed.
  dev.stop();
  EXPECT_EQ(dev->signaled(), s.value);
}

// Answers every request with kRefused, and never reports anything.
void refuse_everything(int fd) {
  RawFrame f;
  while (read_frame(fd, f)) {
    if (f.header.type != static_cast<std::uint16_t>(wire::MsgType::kRequest)) continue;
    wire::RequestView r;
    std::string why;
    if (!wire::passed(wire::decode(f.bytes(), r), why)) return;
    const auto kind = static_cast<wire::RequestKind>(r.fixed.kind);
    if (kind == wire::RequestKind::kAlloc || kind == wire::RequestKind::kImage) {
      send_msg(fd, wire::MsgType::kAnswer, wire::Answer{r.fixed.id, 0, 0, 0, 0});  // these succeed
    } else {
      const std::string text = "refused by policy";
      send_msg(fd, wire::MsgType::kAnswer,
               wire::Answer{r.fixed.id, static_cast<std::uint16_t>(wire::AnswerStatus::kRefused), 0,
                            static_cast<std::uint32_t>(text.size()), 0},
               std::as_bytes(std::span(text)));
    }
  }
}

TEST(HostileAgent, AnAgentThatRefusesMapPeerAndEntryGivesNoneAndAbsent) {
  FakeAgent agent(2, refuse_everything);
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven a(link, 1), b(link, 2), host(link, 0);
  auto rb = b->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(rb);
  EXPECT_FALSE(a->map_peer(b.proxy(), *rb));
  const std::byte binary[8] = {};
  auto img = host->image(binary);
  ASSERT_TRUE((std::holds_alternative<edge::Loaded<remote::Region, remote::Image>>(img)));
  EXPECT_TRUE(std::holds_alternative<edge::Absent>(
      host->entry(std::get<edge::Loaded<remote::Region, remote::Image>>(img).image, "f")));
  EXPECT_FALSE(job->failed());
  job->close();
}

TEST(HostileAgent, ABlockedCallHoldsNothingOtherCallsNeed) {
  std::promise<void> release;
  auto release_f = release.get_future();
  std::atomic<int> requests{0};
  FakeAgent agent(2, [&](int fd) {
    RawFrame f;
    std::vector<std::uint64_t> pending;
    while (read_frame(fd, f)) {
      if (f.header.type != static_cast<std::uint16_t>(wire::MsgType::kRequest)) continue;
      wire::RequestView r;
      std::string why;
      if (!wire::passed(wire::decode(f.bytes(), r), why)) return;
      if (requests.fetch_add(1) == 0) {
        pending.push_back(r.fixed.id);  // the first request is answered only at the end
        continue;
      }
      send_msg(fd, wire::MsgType::kAnswer, wire::Answer{r.fixed.id, 0, 0, 0, 0});
      if (requests.load() == 3) {
        release_f.wait();
        send_msg(fd, wire::MsgType::kAnswer, wire::Answer{pending[0], 0, 0, 0, 0});
      }
    }
  });
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven a(link, 1), b(link, 2);
  std::atomic<bool> blocked_returned{false};
  // Joined also when a call below raises (a call that hung is failed by the silence bound).
  std::jthread blocked([&] {
    try {
      EXPECT_TRUE(a->alloc(edge::Memory::kDevice, 64));  // waits for the agent
    } catch (const edge::Fault& f) {
      ADD_FAILURE() << "the blocked alloc raised: " << f.what();
    }
    blocked_returned.store(true, std::memory_order_release);
  });
  {
    ReleaseAtEnd release_at_end{release};  // the agent answers the blocked alloc at the end
    while (requests.load() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Meanwhile every other kind of call goes through.
    auto r1 = b->alloc(edge::Memory::kDevice, 64);
    auto r2 = a->alloc(edge::Memory::kDevice, 64);  // the same proxy, another thread
    ASSERT_TRUE(r1 && r2);
    Work w;
    w.between(*r1, 0, *r1, 0, 64);
    EXPECT_TRUE(b.submit(w).ok());
    b->sleep(b->signaled(), 5);
    EXPECT_EQ(a->signaled(), 0u);
    a->free(*r2);
    EXPECT_FALSE(blocked_returned.load(std::memory_order_acquire));
  }
  blocked.join();
  EXPECT_TRUE(blocked_returned.load(std::memory_order_acquire));
  job->close();
}

// Throws in the receiving thread as an allocation that failed there would (its copy's bytes
// have all landed).
void throw_once_a_copy_landed(remote::test_hook::Point p, std::uint32_t) {
  if (p == remote::test_hook::Point::kReceiverPoppedCopy) throw std::bad_alloc();
}

// No exception crosses the receiving thread's edge: one there fails the job with its text (the
// process goes on), and every call then raises Fault with it.
TEST(HostileAgent, AnExceptionInTheReceivingThreadFailsTheJobWithItsText) {
  AgentProcess agent;
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  auto region = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(region);
  std::vector<std::byte> here(64, std::byte{0xaa});
  Work w;
  w.to_host(*region, 0, here.data(), 64);
  const HookInstalled installed(&throw_once_a_copy_landed);
  ASSERT_EQ(dev.submit(w).rc, RIG_COMMITTED);
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("the receiving thread stopped: std::bad_alloc"), std::string::npos) << why;
  EXPECT_THROW(dev->alloc(edge::Memory::kDevice, 64), edge::Fault);
  job->close();
}

TEST(HostileAgent, AHungAgentIsFoundWithinTheSilenceBound) {
  AgentProcess agent;
  auto job = Job::create();
  remote::LinkOptions options;
  options.keepalive_ms = 50;
  options.silence_ms = 400;
  remote::Link& link = job->connect(agent.endpoint(), options);
  Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  // An agent that answers keepalives stays: idle while it echoes 20 pings of one every 50 ms,
  // twice the silence bound and more (the echoes counted, not the time slept).
  const std::uint64_t echoed = link.counters().messages_received;
  EXPECT_GE(within(std::chrono::seconds(60), [&] { return link.counters().messages_received >= echoed + 20; }).count(), 0)
      << "the agent echoed " << link.counters().messages_received - echoed << " pings";
  EXPECT_FALSE(job->failed()) << job->fault_text();
  agent.signal(SIGSTOP);  // hung: its kernel still acknowledges, it answers nothing
  const auto t0 = std::chrono::steady_clock::now();
  // Bounded: an agent that runs again (someone sent it SIGCONT) fails the test, not hangs it.
  bool faulted = false;
  try {
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) dev->sleep(dev->signaled(), 100);
  } catch (const edge::Fault& f) {
    faulted = true;
    EXPECT_NE(std::string(f.what()).find("the agent sent nothing for"), std::string::npos) << f.what();
  }
  EXPECT_TRUE(faulted) << "no Fault within 20 s of the SIGSTOP (was the agent continued?)";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  agent.signal(SIGCONT);
}

// Link options that find a silent agent within 300 ms (pinging it after 100).
remote::LinkOptions silent_after_300_ms() {
  remote::LinkOptions options;
  options.keepalive_ms = 100;
  options.silence_ms = 300;
  return options;
}

// An agent silent inside a frame's body: the header of a ping, then nothing. The reason is the
// silence, as between frames, not "connection lost: Connection timed out".
TEST(HostileAgent, AnAgentThatStopsInsideAFramesBodyFailsTheJobForItsSilence) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  FakeAgent agent(1, [released](int fd) {
    const auto f = wire::frame(wire::MsgType::kPing, wire::Ping{7});
    write_all(fd, &f, sizeof(wire::FrameHeader));  // the header alone: its body never comes
    released.wait();
    drain(fd);
  });
  ReleaseAtEnd release_at_end{release};
  auto job = Job::create();
  job->connect(agent.endpoint(), silent_after_300_ms());
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("the agent sent nothing for "), std::string::npos) << why;
  EXPECT_EQ(why.find("connection lost"), std::string::npos) << why;
}

TEST(HostileAgent, AnAgentThatStopsInsideABytesPayloadFailsTheJobWithinTheSilenceBound) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  FakeAgent agent(1, [released](int fd) {
    answer_next_request(fd);
    const std::uint64_t v = read_handover(fd);
    // The header promises 64 bytes; 32 come, then nothing (the connection stays open).
    const auto f = wire::frame(wire::MsgType::kBytes, wire::Bytes{1, 0, v, 0, 64, 0}, 64);
    const std::vector<std::byte> half(32, std::byte{0x33});
    write_all(fd, &f, sizeof f);
    write_all(fd, half.data(), half.size());
    released.wait();
    drain(fd);
  });
  ReleaseAtEnd release_at_end{release};
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint(), silent_after_300_ms());
  std::vector<std::byte> here(64, std::byte{0xaa});
  Driven dev(link, 1);
  auto region = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(region);
  Work w;
  w.to_host(*region, 0, here.data(), 64);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(dev.submit(w).rc, RIG_COMMITTED);
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("the agent sent nothing for 300 ms inside a bytes payload"), std::string::npos) << why;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(dev->signaled(), 0u);
}

TEST(Keepalive, PingsUnderShortWritesLeaveOnlyWholeFramesOnTheStream) {
  AgentProcess agent;
  auto job = Job::create();
  remote::LinkOptions options;
  options.keepalive_ms = 20;
  options.silence_ms = 5000;
  // Every send takes at most 3 bytes: a ping is 16.
  remote::Link& link = remote::connect_with_faults(*job, agent.endpoint(), options, engine::Faults{.max_send_chunk = 3});
  std::vector<std::byte> down(64);
  Driven dev(link, 1);
  auto region = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(region);
  // Idle: the agent answers nothing unasked, so the link pings it every 20 ms. A ping cut short
  // would leave the agent a garbled frame, and it would fail the job: wait for 20 echoes.
  const std::uint64_t echoed = link.counters().messages_received;
  EXPECT_GE(within(std::chrono::seconds(60), [&] {
              return job->failed() || link.counters().messages_received >= echoed + 20;
            }).count(), 0);
  ASSERT_FALSE(job->failed()) << job->fault_text();
  std::vector<std::byte> up(64, std::byte{5});
  Work w;
  w.to_device(up.data(), *region, 0, 64).to_host(*region, 0, down.data(), 64);
  dev.wait(dev.run(w));
  EXPECT_EQ(up, down);
  // The agent echoed the pings: they reached it whole.
  EXPECT_GT(link.counters().messages_received, 10u);
}

TEST(HostileAgent, MalformedWelcomeIsRefusedAtConnect) {
  FakeAgent agent(
      1,
      [](int fd) {
        send_msg(fd, wire::MsgType::kWelcome, wire::Welcome{wire::kMagic, wire::kVersion, 0, 0, 0});
        drain(fd);
      },
      /*welcome=*/false);
  auto job = Job::create();
  try {
    job->connect(agent.endpoint());
    FAIL() << "connect took a welcome with no accounts";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("account count"), std::string::npos) << e.what();
  }
}

TEST(HostileAgent, AnAgentWhoseWelcomeDoesNotProveTheSecretIsRefusedAtConnect) {
  // It saw the job's proof (so it relayed or guessed the challenge) but cannot make its own:
  // an impostor, or a reflection of the job's own proof.
  FakeAgent agent(
      1,
      [](int fd) {
        const auto accounts = fake_accounts(1);
        wire::Welcome w{wire::kMagic, wire::kVersion, 1, 0, static_cast<std::uint32_t>(accounts.size())};
        w.mac[0] = 1;
        send_msg(fd, wire::MsgType::kWelcome, w, std::as_bytes(std::span(accounts)));
        drain(fd);
      },
      /*welcome=*/false);
  auto job = Job::create();
  try {
    job->connect(agent.endpoint());
    FAIL() << "connect took a welcome that proves no secret";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("authentication failed (the agent's proof"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rig::test
