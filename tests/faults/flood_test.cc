// A flood of strangers from many hosts (48 addresses of this side of the namespace's link, each a
// source of its own to the agent), silent, slow (a hello a byte at a time) and proving with a
// wrong secret, reopening each connection the agent sheds or refuses: a job with the secret and
// the two stripes that join it still get in, within a bound no stranger's handshake lengthens.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "in_namespace.h"
#include "raw_peer.h"
#include "rig/remote/job.h"
#include "rig/wire/codec.h"

namespace rig::test {
namespace {

// A stranger's connection from `source` to the agent at `address`:`port`, reopened whenever
// the agent ended it.
class Stranger {
 public:
  enum class Kind { kSilent, kSlow, kWrongProof };
  Stranger(std::string source, std::string address, std::uint16_t port, Kind kind)
      : source_(std::move(source)), address_(std::move(address)), port_(port), kind_(kind) {}
  ~Stranger() { close(); }
  // One step of its flood; the times it (re)connected so far.
  int step() {
    if (fd_ < 0 || ended()) open();
    if (kind_ == Kind::kSlow && sent_ < hello_.size()) {
      sent_ += ::send(fd_, hello_.data() + sent_, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1 ? 1 : 0;
    }
    return opened_;
  }

 private:
  bool ended() const {
    // The agent says nothing to a stranger in its handshake but a challenge (a slow one's, once
    // its hello is whole; a wrong prover's was read by open()) and its refusal: any byte, or the
    // end, means this one is done.
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void open() {
    close();
    fd_ = connect_from(source_, address_, port_);
    if (fd_ < 0) return;
    ++opened_;
    const auto hello = wire::frame(wire::MsgType::kHello, wire::Hello{wire::kMagic, wire::kVersion, 0, 0, 0});
    hello_.assign(reinterpret_cast<const char*>(&hello), sizeof hello);
    sent_ = 0;
    if (kind_ != Kind::kWrongProof) return;
    // Its hello, the challenge (within a second: the agent answers at once), a proof of zeros.
    timeval second{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &second, sizeof second);
    RawFrame challenge;
    if (!send_msg(fd_, wire::MsgType::kHello, wire::Hello{wire::kMagic, wire::kVersion, 0, 0, 0}) ||
        !read_frame(fd_, challenge) || !send_msg(fd_, wire::MsgType::kProof, wire::Proof{})) {
      close();
    }
  }

  std::string source_, address_;
  std::uint16_t port_;
  Kind kind_;
  int fd_ = -1;
  int opened_ = 0;
  std::string hello_;
  std::size_t sent_ = 0;
};

class Flood : public InNamespace {};

TEST_F(Flood, FromManySourcesSilentSlowAndWrongProvingAJobAndItsStripesGetIn) {
  start_agent({"--max-jobs", "4"});
  const std::string endpoint = agent_->endpoint();
  const auto port = static_cast<std::uint16_t>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
  std::vector<std::unique_ptr<Stranger>> strangers;
  for (const std::string& source : net_->add_outside_sources(48)) {
    for (const auto kind : {Stranger::Kind::kSilent, Stranger::Kind::kSilent, Stranger::Kind::kSlow,
                            Stranger::Kind::kWrongProof}) {
      strangers.push_back(std::make_unique<Stranger>(source, net_->inside_address(), port, kind));
    }
  }
  std::atomic<bool> flooding{true};  // relaxed: a flag the flood's thread polls; orders nothing
  std::atomic<int> rounds{0};        // relaxed likewise: a count for the test's message
  std::thread flood([&] {
    while (flooding.load(std::memory_order_relaxed)) {
      for (auto& s : strangers) s->step();
      rounds.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  while (rounds.load(std::memory_order_relaxed) < 3) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // The flood holds every place now, and reopens what the agent sheds.
  auto o = options();
  o.stripes = 2;
  o.stripe_min_bytes = 64 * 1024;
  const auto t0 = std::chrono::steady_clock::now();
  auto job = remote::Job::create();
  std::string why;
  std::uint32_t stripes = 0;
  try {
    stripes = job->connect(endpoint, o).stripes();
  } catch (const std::exception& e) {
    why = e.what();
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  flooding.store(false, std::memory_order_relaxed);
  flood.join();
  int opened = 0;
  for (auto& s : strangers) opened += s->step();
  EXPECT_EQ(why, "") << "the job was locked out by " << opened << " strangers' connections";
  EXPECT_EQ(stripes, 2u) << "a stripe's join was locked out";
  // No stranger's handshake holds the job's: its own round trips, and the agent's one poll.
  EXPECT_LT(took, kJobBound) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  EXPECT_GT(opened, static_cast<int>(strangers.size())) << "the agent shed none: no flood";
  std::printf("[ flood    ] %zu strangers opened %d connections in %d rounds; the job and its stripes took %lld ms\n",
              strangers.size(), opened, rounds.load(std::memory_order_relaxed),
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
}

}  // namespace
}  // namespace rig::test
