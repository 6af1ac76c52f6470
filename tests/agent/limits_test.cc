// The agent cannot be killed or starved by its clients: each limit refuses with a reason, and
// the agent goes on serving the jobs that keep to them; exhausted descriptors pass.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_process.h"
#include "connect_error.h"
#include "process/handshake_room.h"
#include "process_facts.h"
#include "raw_peer.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"
#include "rig/wire/codec.h"

namespace rig::test {
namespace {

TEST(AgentLimits, AConnectionPastTheLimitIsRefusedWithTheReasonAndTheAgentGoesOn) {
  AgentProcess agent({"--max-connections", "3"});
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawClient>(agent.endpoint()));
  for (auto& c : held) c->hello();  // three jobs: the limit
  RawClient fourth(agent.endpoint());
  EXPECT_NE(fourth.failure_text().find("limit of 3 connections"), std::string::npos);
  held.clear();
  EXPECT_EQ(connects_within(agent.endpoint()), "");
}

// A silent connection from `source` (a loopback address: 127.0.0.0/8 is all this machine's) to
// the agent on 127.0.0.1:`port`; closed at scope exit.
struct SilentPeer {
  SilentPeer(const char* source, const std::string& endpoint) {
    const auto port = static_cast<std::uint16_t>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
    fd = connect_from(source, "127.0.0.1", port);
    EXPECT_GE(fd, 0) << source;
  }
  ~SilentPeer() { ::close(fd); }
  // Whether the agent shed it: its end of the stream comes within 10 s (the agent says nothing
  // to a connection in its handshake otherwise).
  bool shed() const {
    pollfd p{fd, POLLIN, 0};
    char c;
    return ::poll(&p, 1, 10000) == 1 && ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
  }
  // Whether it is still open and unanswered, now.
  bool held() const {
    char c;
    return ::recv(fd, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
  }
  int fd = -1;
};

TEST(AgentLimits, StrangersHoldingEveryHandshakePlaceLockNoJobOutTheOldestIsShed) {
  AgentProcess agent({"--max-handshakes", "2"});
  std::vector<std::unique_ptr<SilentPeer>> strangers;
  for (int i = 0; i < 20; ++i) strangers.push_back(std::make_unique<SilentPeer>("127.0.0.1", agent.endpoint()));
  // The agent accepts in the order of connecting: the job comes after all of them, and gets in.
  auto job = remote::Job::create();
  remote::Link* link = nullptr;
  EXPECT_NO_THROW(link = &job->connect(agent.endpoint()));
  ASSERT_NE(link, nullptr);
  for (int i = 0; i < 19; ++i) EXPECT_TRUE(strangers[i]->shed()) << "stranger " << i;
  EXPECT_TRUE(strangers[19]->held()) << "the newest stranger lost its place to the job, not to an older one";
  const nlohmann::json totals = nlohmann::json::parse(link->agent_status())["totals"];
  EXPECT_EQ(totals["handshakes_shed"], 19) << totals;
}

// Threads of `pid` but io_uring's workers (iou-wrk-*), which the kernel starts and ends at will.
std::size_t own_threads(pid_t pid) {
  std::istringstream names(held_by(pid).thread_names);
  std::size_t n = 0;
  for (std::string name; names >> name;) n += name.starts_with("iou-wrk") ? 0 : 1;
  return n;
}

TEST(AgentLimits, ConnectionsInTheirHandshakeHoldNoThreadOfTheirOwn) {
  AgentProcess agent({"--max-handshakes", "64", "--max-handshakes-per-source", "64"});
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());  // its session's thread is counted before
  const std::size_t before = own_threads(agent.pid());
  // 20 silent, and 10 that sent their hello, read the challenge and withhold their proof.
  std::vector<std::unique_ptr<SilentPeer>> silent;
  for (int i = 0; i < 20; ++i) silent.push_back(std::make_unique<SilentPeer>("127.0.0.1", agent.endpoint()));
  std::vector<std::unique_ptr<RawClient>> proving;
  for (int i = 0; i < 10; ++i) {
    proving.push_back(std::make_unique<RawClient>(agent.endpoint()));
    send_msg(proving.back()->fd(), wire::MsgType::kHello, wire::Hello{wire::kMagic, wire::kVersion, 0, 0, 0});
    RawFrame challenge;
    ASSERT_TRUE(read_frame(proving.back()->fd(), challenge)) << "no challenge for hello " << i;
  }
  EXPECT_GE(within(std::chrono::seconds(10),
                   [&] { return nlohmann::json::parse(link.agent_status())["handshakes"] == 30; }).count(), 0)
      << "the agent never held the 30 connections in their handshake";
  EXPECT_EQ(own_threads(agent.pid()), before) << held_by(agent.pid()).thread_names;
}

sockaddr_storage v6(const char* text, std::uint16_t port) {
  sockaddr_storage s{};
  auto& in6 = reinterpret_cast<sockaddr_in6&>(s);
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(port);
  EXPECT_EQ(::inet_pton(AF_INET6, text, &in6.sin6_addr), 1) << text;
  return s;
}

TEST(AgentLimits, AHandshakesSourceIsAnIpv6Slash64AndEachIpv4AddressOnItsOwn) {
  using agent::handshake_source;
  // One /64, any port: one source; the last bit of the 64th apart: another.
  EXPECT_EQ(handshake_source(v6("2001:db8:1:2:aaaa::1", 1)), handshake_source(v6("2001:db8:1:2:ffff::9", 2)));
  EXPECT_NE(handshake_source(v6("2001:db8:1:2::1", 1)), handshake_source(v6("2001:db8:1:3::1", 1)));
  // v4-mapped: each IPv4 address its own, though they share the mapping's /64.
  EXPECT_NE(handshake_source(v6("::ffff:10.0.0.1", 1)), handshake_source(v6("::ffff:10.0.0.2", 1)));
  EXPECT_EQ(handshake_source(v6("::ffff:10.0.0.1", 1)), handshake_source(v6("::ffff:10.0.0.1", 2)));
}

TEST(AgentLimits, AFloodFromOneSourceShedsItsOwnConnectionsAndOtherSourcesKeepTheirs) {
  // Past its share a source sheds its own oldest, though the places are not all taken; and
  // with all taken, the source that holds the most loses its oldest.
  for (const auto& [places, share] : {std::pair{"4", "2"}, std::pair{"3", "8"}}) {
    AgentProcess agent({"--max-handshakes", places, "--max-handshakes-per-source", share});
    SilentPeer first("127.0.0.2", agent.endpoint()), second("127.0.0.2", agent.endpoint());
    std::vector<std::unique_ptr<SilentPeer>> flood;
    for (int i = 0; i < 10; ++i) flood.push_back(std::make_unique<SilentPeer>("127.0.0.3", agent.endpoint()));
    // The eighth is shed once the agent took the tenth: then the flood has passed. (With 3
    // places and a share of 8, the room filled while 127.0.0.2 held the most: `first` went then.)
    EXPECT_TRUE(flood[7]->shed()) << places << " places";
    // Sharing 3 places: the second of the flood found them all taken, 127.0.0.2 holding the
    // most (2 to 1), so its oldest went, not one of the flood's own.
    if (std::string(share) == "8") EXPECT_TRUE(first.shed()) << "the newcomer's own source lost a place";
    else EXPECT_TRUE(first.held()) << places << " places, " << share << " a source";
    EXPECT_TRUE(second.held()) << places << " places, " << share << " a source";
    EXPECT_NO_THROW(remote::Job::create()->connect(agent.endpoint())) << places << " places";
  }
}

TEST(AgentLimits, AJobPastTheJobLimitIsRefusedAndTheNextOneIsServedOnceAJobEnds) {
  AgentProcess agent({"--max-jobs", "1"});
  auto first = remote::Job::create();
  first->connect(agent.endpoint());
  try {
    remote::Job::create()->connect(agent.endpoint());
    FAIL() << "a second job was served past --max-jobs 1";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("limit of 1 jobs"), std::string::npos) << e.what();
  }
  first->close();
  first.reset();
  EXPECT_EQ(connects_within(agent.endpoint()), "");
}

TEST(AgentLimits, AnAllocPastTheObjectLimitIsNoneUntilAnObjectIsReleased) {
  AgentProcess agent({"--max-objects", "2"});
  RawClient c(agent.endpoint());
  c.hello();
  EXPECT_EQ(alloc(c, 1, 64), wire::AnswerStatus::kOk);
  EXPECT_EQ(alloc(c, 2, 64), wire::AnswerStatus::kOk);
  EXPECT_EQ(alloc(c, 3, 64), wire::AnswerStatus::kRefused);
  ASSERT_TRUE(send_msg(c.fd(), wire::MsgType::kRelease,
                       wire::Release{1, static_cast<std::uint16_t>(wire::ReleaseKind::kObject), 0, 0}));
  EXPECT_EQ(alloc(c, 3, 64), wire::AnswerStatus::kOk);
}

TEST(AgentLimits, BytesThatMustWaitInStagingPastTheJobsLimitFailOnlyThatJobWithTheReason) {
  AgentProcess agent({"--max-staged-bytes", "1048576"});
  RawClient c(agent.endpoint());
  c.hello();
  ASSERT_EQ(alloc(c, 5, 4 << 20), wire::AnswerStatus::kOk);
  // Value 1 waits for device 2's value 1, which never comes: value 2's bytes must wait too.
  send_handover(c, 1, 1, {}, {wire::Wait{2, 0, 1}});
  send_handover(c, 1, 2, {copy_part(client_side(), object(5), 2 << 20)});
  EXPECT_NE(c.failure_text().find("would pass the job's limit of 1048576 staged bytes"), std::string::npos);
  EXPECT_EQ(connects_within(agent.endpoint()), "");
}

TEST(AgentLimits, AHandoverPastTheRoomsSixtyFourMiBIsAProtocolViolation) {
  AgentProcess agent;
  RawClient c(agent.endpoint());
  c.hello();
  ASSERT_EQ(alloc(c, 5, 65 << 20), wire::AnswerStatus::kOk);
  ASSERT_EQ(alloc(c, 6, 65 << 20), wire::AnswerStatus::kOk);
  // 65 MiB queued behind a wait that never comes: a client's room admits nothing more.
  send_handover(c, 1, 1, {copy_part(object(5), object(6), 65 << 20)}, {wire::Wait{2, 0, 1}});
  send_handover(c, 1, 2, {});
  EXPECT_NE(c.failure_text().find("68157440 bytes of its earlier work are not done"), std::string::npos);
}

TEST(AgentLimits, ExhaustedDescriptorsPassAndTheAgentServesAgainOnceTheyAreBack) {
  // 40 descriptors: a few dozen idle connections use them all, and accept sees EMFILE.
  AgentProcess agent({"--max-connections", "200", "--max-handshakes", "200", "--max-handshakes-per-source", "200"}, false,
                     {"prlimit", "--nofile=40"});
  std::vector<std::unique_ptr<RawClient>> flood;
  for (int i = 0; i < 60; ++i) flood.push_back(std::make_unique<RawClient>(agent.endpoint()));
  // Once it holds all 40 with connections still queued, its next accept meets EMFILE (held_by
  // throws if that ended the agent).
  EXPECT_GE(within(std::chrono::seconds(10), [&] { return held_by(agent.pid()).fds >= 40; }).count(), 0)
      << "the agent never held all 40 of its descriptors";
  EXPECT_TRUE(agent.alive());
  flood.clear();
  EXPECT_EQ(connects_within(agent.endpoint()), "");
  EXPECT_TRUE(agent.alive());
}

// The second lowest descriptor number process `pid` does not hold: with its limit there, it
// can open exactly one more.
int second_free_fd(pid_t pid) {
  std::set<int> held;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    held.insert(std::stoi(e.path().filename().string()));
  }
  int free_seen = 0;
  for (int fd = 0;; ++fd) {
    if (held.count(fd) == 0 && ++free_seen == 2) return fd;
  }
}

TEST(AgentLimits, AJobWhoseWakeFindsNoDescriptorIsRefusedSayingWhyAndTheAgentServesOn) {
  // Devices that complete in the background give each job a wake (an eventfd), made once the
  // job's connection is taken: with room for that connection and none past it, the job is
  // refused before its welcome, with the reason, and the agent serves the next one.
  AgentProcess agent(AgentEnv{{"RIG_SOCKET_BACKEND=plain"}}, {"--sim-completion", "woken"});
  rlimit old{};
  ASSERT_EQ(::prlimit(agent.pid(), RLIMIT_NOFILE, nullptr, &old), 0);
  const rlimit one_more{static_cast<rlim_t>(second_free_fd(agent.pid())), old.rlim_max};  // the connection's
  ASSERT_EQ(::prlimit(agent.pid(), RLIMIT_NOFILE, &one_more, nullptr), 0);
  const std::string why = connect_error(agent.endpoint());
  ASSERT_EQ(::prlimit(agent.pid(), RLIMIT_NOFILE, &old, nullptr), 0);
  EXPECT_EQ(why, "agent " + agent.endpoint() + " refused the job: eventfd for the job's wake: Too many open files");
  EXPECT_EQ(connects_within(agent.endpoint()), "");
  EXPECT_TRUE(agent.alive());
}

}  // namespace
}  // namespace rig::test
