// A hostile or broken client against a real rig-agent: each bad frame gets a failure message
// with a clear reason, the job ends, and the agent serves the next job (DESIGN invariant 8).
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "agent_process.h"
#include "process_facts.h"
#include "raw_peer.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"

namespace rig::test {
namespace {

class BadClient : public ::testing::Test {
 protected:
  // The agent must still serve a well-behaved job.
  void TearDown() override {
    ASSERT_TRUE(agent_.alive());
    auto job = remote::Job::create();
    remote::Link& link = job->connect(agent_.endpoint());
    std::vector<std::byte> down(4096);
    harness::Driven dev(link, 1);
    auto region = dev->alloc(edge::Memory::kDevice, 4096);
    ASSERT_TRUE(region);
    std::vector<std::byte> up(4096, std::byte{7});
    harness::Work w;
    w.to_device(up.data(), *region, 0, 4096).to_host(*region, 0, down.data(), 4096);
    dev.wait(dev.run(w));
    EXPECT_EQ(up, down);
  }

  // Allocates object 5 and hands over a copy of 1 MiB from the client into it, announcing its
  // bytes as striped (kStriped), whatever the job was granted.
  static void send_striped_copy(RawClient& c) {
    alloc(c, 5, 1u << 20);
    send_handover(c, 1, 1, {copy_part(client_side(), object(5), 1u << 20)});
    send_msg(c.fd(), wire::MsgType::kStriped, wire::Striped{1, 0, 1, 0, 1u << 20, 1u << 19});
  }
  AgentProcess agent_;
};

TEST_F(BadClient, GarbageInsteadOfHelloIsRefused) {
  RawClient c(agent_.endpoint());
  const char junk[] = "GET / HTTP/1.1\r\n\r\n";
  write_all(c.fd(), junk, sizeof junk);
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("hello"), std::string::npos) << why;
}

TEST_F(BadClient, AJoinWithAnUnknownTokenLearnsOnlyThatAuthenticationFailed) {
  RawClient c(agent_.endpoint());
  const wire::Join join{wire::kMagic, wire::kVersion, 0, 1, 0, 1024, 12345};
  send_msg(c.fd(), wire::MsgType::kJoin, join);
  RawFrame challenge;
  ASSERT_TRUE(read_frame(c.fd(), challenge));
  ASSERT_EQ(challenge.header.type, static_cast<std::uint16_t>(wire::MsgType::kChallenge));
  send_msg(c.fd(), wire::MsgType::kProof, wire::Proof{});
  EXPECT_EQ(c.failure_text(), "authentication failed");
}

TEST_F(BadClient, StripedBytesBeforeTheStripesJoinedFailTheJob) {
  RawClient c(agent_.endpoint());
  c.hello(wire::kFeatureStripes);
  ASSERT_NE(c.grant().token, 0u);
  send_striped_copy(c);
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("striped bytes before all of the job's stripes joined"), std::string::npos) << why;
}

TEST(AgentSilence, AClientThatStopsInsideAHandoversBytesLosesOnlyItsJobWithinTheBound) {
  AgentProcess agent({"--silence-ms", "300"});
  RawClient c(agent.endpoint());
  c.hello();
  ASSERT_EQ(alloc(c, 5, 4096), wire::AnswerStatus::kOk);
  send_handover(c, 1, 1, {copy_part(client_side(), object(5), 4096)});
  // The bytes message promises 4096 bytes; 100 come, then nothing.
  const auto f = wire::frame(wire::MsgType::kBytes, wire::Bytes{1, 0, 1, 0, 4096, 0}, 4096);
  const std::vector<std::byte> some(100, std::byte{1});
  ASSERT_TRUE(write_all(c.fd(), &f, sizeof f) && write_all(c.fd(), some.data(), some.size()));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("the client sent nothing for 300 ms inside a handover's bytes"), std::string::npos) << why;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(agent.alive());
}

TEST(AgentSilence, AnIdleJobWhoseClientPingsStaysAndASilentOneIsEnded) {
  AgentProcess agent({"--silence-ms", "400"});
  auto job = remote::Job::create();
  remote::LinkOptions options;
  options.keepalive_ms = 100;  // it pings an agent silent for 100 ms, which echoes
  remote::Link& link = job->connect(agent.endpoint(), options);
  // Idle, well past the bound: while the agent echoes 10 pings of one per 100 ms of its silence
  // (the echoes counted, not the time slept).
  const std::uint64_t echoed = link.counters().messages_received;
  EXPECT_GE(within(std::chrono::seconds(60), [&] {
              return job->failed() || link.counters().messages_received >= echoed + 10;
            }).count(), 0);
  EXPECT_FALSE(job->failed()) << job->fault_text();
  RawClient silent(agent.endpoint());
  silent.hello();  // then says nothing, and answers no ping (the agent sends none)
  const auto t0 = std::chrono::steady_clock::now();
  const std::string why = silent.failure_text();
  EXPECT_NE(why.find("the client sent nothing for 400 ms"), std::string::npos) << why;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(AgentJobs, AMalformedJoinIsNotCountedAsAJob) {
  AgentProcess agent({"--jobs", "1"});
  {
    RawClient c(agent.endpoint());
    wire::Join bad{0, wire::kVersion, 0, 1, 0, 1024, 77};  // bad magic: refused by the codec
    send_msg(c.fd(), wire::MsgType::kJoin, bad);
    EXPECT_NE(c.failure_text().find("join"), std::string::npos);
  }
  // The agent still serves its one job (it would have exited had the join counted).
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  EXPECT_EQ(link.accounts().front().id, 0u);
}

TEST_F(BadClient, StripedBytesInAJobGrantedNoStripesFailTheJob) {
  RawClient c(agent_.endpoint());
  c.hello();  // offers no striping: the agent grants none
  send_striped_copy(c);
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("striped bytes in a job that was granted no stripes"), std::string::npos) << why;
}

TEST_F(BadClient, WrongProtocolVersionIsRefused) {
  RawClient c(agent_.endpoint());
  send_msg(c.fd(), wire::MsgType::kHello, wire::Hello{wire::kMagic, 7, 0, 0, 0});
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("version 7"), std::string::npos) << why;
}

TEST_F(BadClient, OversizedFrameIsRefusedBeforeItsBodyIsRead) {
  RawClient c(agent_.endpoint());
  c.hello();
  const wire::FrameHeader h{0xffffff00u, static_cast<std::uint16_t>(wire::MsgType::kHandover), 0};
  write_all(c.fd(), &h, sizeof h);
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("longer than the maximum"), std::string::npos) << why;
}

TEST_F(BadClient, HandoverNamingNoObjectFailsTheJob) {
  RawClient c(agent_.endpoint());
  c.hello();
  send_handover(c, 1, 1, {copy_part(object(111), object(222), 64)});
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("object 111, which does not exist"), std::string::npos) << why;
}

TEST_F(BadClient, CopyPastTheObjectFailsTheJob) {
  RawClient c(agent_.endpoint());
  c.hello();
  alloc(c, 5, 64);
  send_handover(c, 1, 1, {copy_part(object(5), object(5, 32), 64)});
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("reaches byte 96 of object 5, which has 64"), std::string::npos) << why;
}

// A strided copy's extent is its last row's end, offset + (rows - 1) * pitch + row_bytes, not
// its packed size: 2 rows of 16 whose last ends exactly at the object's end run; 2 pitch bytes
// more (packed, they are still 32 of its 64) fail the job naming that byte.
TEST_F(BadClient, AStridedCopyWhoseLastRowEndsPastTheObjectFailsTheJob) {
  RawClient c(agent_.endpoint());
  c.hello();
  alloc(c, 5, 64);
  alloc(c, 6, 256);
  send_handover(c, 1, 1, {copy_part(object(6), object(5), 16, 2, 48)});  // ends at byte 64 of 64
  send_handover(c, 1, 2, {copy_part(object(6), object(5), 16, 2, 50)});  // ends at byte 66
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("reaches byte 66 of object 5, which has 64"), std::string::npos) << why;
}

TEST_F(BadClient, CopyWhoseRangeOverflowsIsRejected) {
  RawClient c(agent_.endpoint());
  c.hello();
  alloc(c, 5, 64);
  send_handover(c, 1, 1, {copy_part(object(5, ~0ull - 8), object(5), 64)});
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("overflows"), std::string::npos) << why;
}

TEST_F(BadClient, ValuesThatDoNotIncreaseFailTheJob) {
  RawClient c(agent_.endpoint());
  c.hello();
  alloc(c, 5, 64);
  send_handover(c, 1, 3, {copy_part(object(5), object(5), 64)});
  send_handover(c, 1, 3, {copy_part(object(5), object(5), 64)});
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("is not above the previous one"), std::string::npos) << why;
}

TEST_F(BadClient, BytesThatFollowNoHandoverFailTheJob) {
  RawClient c(agent_.endpoint());
  c.hello();
  std::byte payload[8]{};
  send_msg(c.fd(), wire::MsgType::kBytes, wire::Bytes{1, 0, 1, 0, 8, 0}, payload);
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("bytes that follow no handover"), std::string::npos) << why;
}

// A handover with one copy from the client into object 5 (64 bytes), then a kBytes message.
static std::string bytes_after_handover(RawClient& c, const wire::Bytes& b, std::uint32_t payload) {
  wire::Side client{};
  client.kind = static_cast<std::uint8_t>(wire::SideKind::kClient);
  wire::Part p{};
  p.kind = static_cast<std::uint16_t>(wire::PartKind::kCopy);
  p.copy.src = client;
  p.copy.dst.kind = static_cast<std::uint8_t>(wire::SideKind::kObject);
  p.copy.dst.handle = 5;
  p.copy.rows = 1;
  p.copy.row_bytes = 64;
  p.copy.src_pitch = 64;
  p.copy.dst_pitch = 64;
  const wire::Handover h{1, 0, 1, 1, 0};
  send_msg(c.fd(), wire::MsgType::kHandover, h, std::as_bytes(std::span(&p, 1)));
  std::vector<std::byte> data(payload, std::byte{0x66});
  send_msg(c.fd(), wire::MsgType::kBytes, b, data);
  return c.failure_text();
}

TEST_F(BadClient, BytesLongerThanTheirPartFailTheJobAndWriteNothingPastIt) {
  RawClient c(agent_.endpoint());
  c.hello();
  alloc(c, 5, 64);
  const std::string why = bytes_after_handover(c, wire::Bytes{1, 0, 1, 0, 4096, 0}, 4096);
  EXPECT_NE(why.find("do not continue part 0"), std::string::npos) << why;
}

TEST_F(BadClient, BytesOfAnotherPartOrValueFailTheJob) {
  {
    RawClient c(agent_.endpoint());
    c.hello();
    alloc(c, 5, 64);
    const std::string why = bytes_after_handover(c, wire::Bytes{1, 1, 1, 0, 64, 0}, 64);
    EXPECT_NE(why.find("do not continue part 0"), std::string::npos) << why;
  }
  {
    RawClient c(agent_.endpoint());
    c.hello();
    alloc(c, 5, 64);
    const std::string why = bytes_after_handover(c, wire::Bytes{1, 0, 2, 0, 64, 0}, 64);
    EXPECT_NE(why.find("do not continue part 0"), std::string::npos) << why;
  }
  {
    RawClient c(agent_.endpoint());
    c.hello();
    alloc(c, 5, 64);
    const std::string why = bytes_after_handover(c, wire::Bytes{1, 0, 1, 8, 56, 0}, 56);
    EXPECT_NE(why.find("do not continue part 0"), std::string::npos) << why;
  }
}

TEST_F(BadClient, AHandoverForADeviceTheAgentDidNotOpenFailsTheJob) {
  RawClient c(agent_.endpoint());
  c.hello();
  alloc(c, 5, 64);
  send_handover(c, 9, 1, {copy_part(object(5), object(5), 64)});
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("device 9, which this agent did not open"), std::string::npos) << why;
}

TEST_F(BadClient, AWordsPartNamingNoImageFailsTheJob) {
  RawClient c(agent_.endpoint());
  c.hello();
  wire::Part p{};
  p.kind = static_cast<std::uint16_t>(wire::PartKind::kWords);
  p.words.image = 42;
  p.words.function = 0;
  p.words.n_words = 0;
  send_handover(c, 0, 1, {p});
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("image 42, which does not exist"), std::string::npos) << why;
}

TEST_F(BadClient, AllocPastTheBudgetIsRefusedNotFatal) {
  RawClient c(agent_.endpoint());
  c.hello();
  wire::Request r{};
  r.id = 9;
  r.kind = static_cast<std::uint16_t>(wire::RequestKind::kAlloc);
  r.device = 1;
  r.object = 77;
  r.arg0 = 1ull << 40;
  ASSERT_TRUE(send_msg(c.fd(), wire::MsgType::kRequest, r));
  RawFrame f;
  ASSERT_TRUE(read_reply(c.fd(), f));
  wire::AnswerView a;
  std::string why;
  ASSERT_TRUE(wire::passed(wire::decode(f.bytes(), a), why)) << why;
  EXPECT_EQ(a.fixed.id, 9u);
  EXPECT_EQ(a.fixed.status, static_cast<std::uint16_t>(wire::AnswerStatus::kRefused));
  EXPECT_NE(std::string(a.text).find("no room"), std::string::npos);
}

// An id is the client's to name once: an alloc of one the job holds, or a release of one it does
// not hold (never had, or released already: the edge), is its violation and fails the job.
TEST_F(BadClient, AnAllocOfAnIdTheJobHoldsFailsTheJob) {
  RawClient c(agent_.endpoint());
  c.hello();
  ASSERT_EQ(alloc(c, 5, 64), wire::AnswerStatus::kOk);
  wire::Request r{};
  r.id = 2;
  r.kind = static_cast<std::uint16_t>(wire::RequestKind::kAlloc);
  r.device = 1;
  r.object = 5;
  r.arg0 = 64;
  ASSERT_TRUE(send_msg(c.fd(), wire::MsgType::kRequest, r));
  const std::string why = c.failure_text();
  // The client's violation, named so once (and only then: a device's fault is not one).
  EXPECT_NE(why.find("protocol violation: alloc of object 5, which exists"), std::string::npos) << why;
}

TEST_F(BadClient, AReleaseOfAnIdTheJobDoesNotHoldFailsTheJob) {
  for (const auto kind : {wire::ReleaseKind::kObject, wire::ReleaseKind::kImage}) {
    RawClient c(agent_.endpoint());
    c.hello();
    ASSERT_TRUE(send_msg(c.fd(), wire::MsgType::kRelease, wire::Release{77, static_cast<std::uint16_t>(kind), 0, 0}));
    const std::string why = c.failure_text();
    const std::string what = kind == wire::ReleaseKind::kObject ? "object" : "image";
    EXPECT_NE(why.find("protocol violation: release of " + what + " 77, which does not exist"), std::string::npos)
        << why;
  }
}

TEST_F(BadClient, AReleaseOfAnObjectReleasedAlreadyFailsTheJob) {
  RawClient c(agent_.endpoint());
  c.hello();
  ASSERT_EQ(alloc(c, 5, 64), wire::AnswerStatus::kOk);
  const wire::Release r{5, static_cast<std::uint16_t>(wire::ReleaseKind::kObject), 0, 0};
  ASSERT_TRUE(send_msg(c.fd(), wire::MsgType::kRelease, r));
  ASSERT_EQ(alloc(c, 6, 64), wire::AnswerStatus::kOk);  // the first release was taken: the job lives
  ASSERT_TRUE(send_msg(c.fd(), wire::MsgType::kRelease, r));
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("release of object 5, which does not exist"), std::string::npos) << why;
}

TEST_F(BadClient, PeerThatVanishesMidHandoverEndsOnlyItsJob) {
  {
    RawClient c(agent_.endpoint());
    c.hello();
    wire::Side client{};
    client.kind = static_cast<std::uint8_t>(wire::SideKind::kClient);
    alloc(c, 5, 1 << 20);
    send_handover(c, 1, 1, {copy_part(client, object(5), 1 << 20)});
    std::byte payload[100]{};
    send_msg(c.fd(), wire::MsgType::kBytes, wire::Bytes{1, 0, 1, 0, 1 << 20, 0}, {});
    write_all(c.fd(), payload, sizeof payload);  // then the client vanishes
  }
}

}  // namespace
}  // namespace rig::test
