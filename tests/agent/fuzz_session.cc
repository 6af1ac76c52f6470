// libFuzzer target: a whole job's session with the agent, mutated. Each input is what a client
// sends after an authenticated handshake (frames, payloads, or anything else), played into a
// real Session of the agent over a real loopback TCP connection (plain backend, a 200 ms silence
// bound); the fuzzer's side drains what the agent answers, then ends its sending. The agent must
// neither crash nor read or write out of bounds (AddressSanitizer), nor hang: the session must end
// once the client's bytes are done. Seeds are recorded valid sessions (allocations, copies both
// ways and between objects, releases, pings, close), written by
//   RIG_FUZZ_WRITE_SEEDS=DIR fuzz_agent_session
// (scripts/fuzz does it) and then mutated.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <spdlog/spdlog.h>
#include <string>
#include <thread>
#include <vector>

#include "job/session.h"
#include "process/config.h"
#include "process/drain.h"
#include "process/gauges.h"
#include "process/heartbeat.h"
#include "rig/engine/tcp.h"
#include "rig/wire/auth.h"
#include "rig/wire/codec.h"
#include "wire_parts.h"

namespace {

using namespace rig;
using test::client_side;
using test::copy_part;
using test::object;

void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz_agent_session: %s\n", what);
    std::abort();
  }
}

// A byte stream of frames, built with the protocol's encoders.
struct Stream {
  std::vector<std::uint8_t> bytes;
  template <class M>
  Stream& msg(wire::MsgType type, const M& m, const void* tail = nullptr, std::size_t tail_bytes = 0) {
    const auto f = wire::frame(type, m, tail_bytes);
    const auto* p = reinterpret_cast<const std::uint8_t*>(&f);
    bytes.insert(bytes.end(), p, p + sizeof f);
    if (tail_bytes > 0) {
      const auto* t = static_cast<const std::uint8_t*>(tail);
      bytes.insert(bytes.end(), t, t + tail_bytes);
    }
    return *this;
  }
};

Stream& alloc(Stream& s, std::uint64_t id, std::uint32_t device, std::uint64_t bytes) {
  wire::Request r{};
  r.id = id;
  r.kind = static_cast<std::uint16_t>(wire::RequestKind::kAlloc);
  r.device = device;
  r.object = id;
  r.arg0 = bytes;
  return s.msg(wire::MsgType::kRequest, r);
}
Stream& handover(Stream& s, std::uint32_t device, std::uint64_t value, const std::vector<wire::Part>& parts,
                 const std::vector<wire::Wait>& waits = {}) {
  const wire::Handover h{device, static_cast<std::uint32_t>(waits.size()), value,
                         static_cast<std::uint32_t>(parts.size()), 0};
  std::vector<std::uint8_t> tail(waits.size() * sizeof(wire::Wait) + parts.size() * sizeof(wire::Part));
  if (!waits.empty()) std::memcpy(tail.data(), waits.data(), waits.size() * sizeof(wire::Wait));
  std::memcpy(tail.data() + waits.size() * sizeof(wire::Wait), parts.data(), parts.size() * sizeof(wire::Part));
  return s.msg(wire::MsgType::kHandover, h, tail.data(), tail.size());
}
Stream& bytes(Stream& s, std::uint32_t device, std::uint32_t part, std::uint64_t value, std::uint64_t n) {
  const std::vector<std::uint8_t> payload(n, 0xab);
  return s.msg(wire::MsgType::kBytes, wire::Bytes{device, part, value, 0, static_cast<std::uint32_t>(n), 0},
               payload.data(), payload.size());
}

// Recorded valid sessions: the seeds.
std::vector<Stream> seeds() {
  std::vector<Stream> out;
  {  // up to a device and back
    Stream s;
    alloc(s, 1, 1, 4096);
    handover(s, 1, 1, {copy_part(client_side(), object(1), 4096)});
    bytes(s, 1, 0, 1, 4096);
    handover(s, 1, 2, {copy_part(object(1), client_side(), 4096)});
    s.msg(wire::MsgType::kRelease, wire::Release{1, static_cast<std::uint16_t>(wire::ReleaseKind::kObject), 0, 0});
    s.msg(wire::MsgType::kClose, wire::Close{0});
    out.push_back(s);
  }
  {  // strided rows between two devices, a wait on the other device, pings, a status query
    Stream s;
    alloc(s, 1, 1, 8192);
    alloc(s, 2, 2, 8192);
    handover(s, 1, 1, {copy_part(client_side(), object(1), 256, 8, 1024)});
    bytes(s, 1, 0, 1, 256 * 8);
    s.msg(wire::MsgType::kPing, wire::Ping{7});
    s.msg(wire::MsgType::kStatusQuery, wire::StatusQuery{9, 0});
    handover(s, 2, 1, {copy_part(object(1), object(2), 256, 8, 1024)}, {wire::Wait{1, 0, 1}});
    handover(s, 2, 2, {copy_part(object(2), client_side(), 2048)});
    s.msg(wire::MsgType::kClose, wire::Close{0});
    out.push_back(s);
  }
  {  // the host's memory, several parts in one handover
    Stream s;
    alloc(s, 1, 0, 4096);
    handover(s, 0, 1, {copy_part(client_side(), object(1), 64), copy_part(client_side(), object(1, 64), 64),
                       copy_part(object(1), client_side(), 128)});
    bytes(s, 0, 0, 1, 64);
    bytes(s, 0, 1, 1, 64);
    out.push_back(s);
  }
  return out;
}

// The agent, once: its configuration, a secret, a listening socket.
struct Agent {
  Agent() {
    // RIG_FUZZ_LOG=1: the agent's log (to see how far an input gets).
    spdlog::set_level(std::getenv("RIG_FUZZ_LOG") != nullptr ? spdlog::level::debug : spdlog::level::off);
    config.backend = engine::Backend::kPlain;
    config.silence_ms = 200;
    config.devices = 2;
    config.device_budget = config.host_budget = 64u << 20;
    config.max_staged_bytes = 64u << 20;
    config.instruction_budget = 1u << 20;
    config.max_stripes = 0;
    secret.bytes.assign(32, 0x5c);
    secret.source = "the fuzzer";
    config.secrets = std::make_shared<const std::vector<engine::Secret>>(std::vector<engine::Secret>{secret});
    listen_fd = *engine::tcp_listen(engine::Endpoint{"127.0.0.1", 0}, port);
  }
  agent::AgentConfig config;
  agent::Drain drain;  // never begun: the fuzzer does not stop the agent
  agent::Heartbeat heartbeat;  // never started: the fuzzer's sessions are never busy for long
  engine::Secret secret;
  int listen_fd = -1;
  std::uint16_t port = 0;
};

bool read_exact(int fd, void* p, std::size_t n) { return engine::recv_within(fd, p, n, 5000) == 0; }
bool write_frame_bytes(int fd, const Stream& s) {
  const iovec iov{const_cast<std::uint8_t*>(s.bytes.data()), s.bytes.size()};
  return engine::send_within(fd, {&iov, 1}, 5000) == 0;
}

// The client's side of the handshake (wire/PROTOCOL.md 6.1).
bool handshake(int fd, const Agent& a) {
  wire::Transcript t;
  t.client = wire::fresh_nonce();
  // Offers the status query, so that its messages are reached too.
  t.offered = wire::kFeatureStatus;
  wire::Hello h{wire::kMagic, wire::kVersion, 0, wire::kFeatureStatus, 0};
  std::copy(t.client.begin(), t.client.end(), h.nonce);
  if (!write_frame_bytes(fd, Stream{}.msg(wire::MsgType::kHello, h))) return false;
  wire::Framed<wire::Challenge> c{};
  if (!read_exact(fd, &c, sizeof c)) return false;
  t.agent = wire::to_array(c.msg.nonce);
  t.name = wire::to_array(c.msg.name);
  wire::Proof p{};
  const wire::Mac mac = wire::client_proof(a.secret.bytes, t);
  std::copy(mac.begin(), mac.end(), p.mac);
  if (!write_frame_bytes(fd, Stream{}.msg(wire::MsgType::kProof, p))) return false;
  wire::Framed<wire::Welcome> w{};
  if (!read_exact(fd, &w, sizeof w)) return false;
  std::vector<std::uint8_t> accounts(w.header.length - sizeof(wire::Welcome));
  return accounts.empty() || read_exact(fd, accounts.data(), accounts.size());
}

// Writes `data` while draining what the agent answers, then ends the sending side and drains
// to the end of the stream.
void play(int fd, const std::uint8_t* data, std::size_t size) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::vector<std::uint8_t> sink(1 << 16);
  std::size_t sent = 0;
  bool open = true;
  // libFuzzer's timeout alarm (SIGALRM every -timeout/2+1 s) interrupts the wait: EINTR is not
  // a hang, only 10 s with neither reading nor answering is.
  using clock = std::chrono::steady_clock;
  clock::time_point quiet_since = clock::now();
  while (open) {
    pollfd p{fd, static_cast<short>(POLLIN | (sent < size ? POLLOUT : 0)), 0};
    const int left_ms = static_cast<int>(std::max<std::int64_t>(
        0, 10000 - std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - quiet_since).count()));
    const int ready = ::poll(&p, 1, left_ms);
    if (ready < 0 && errno == EINTR) continue;
    check(ready > 0, ready == 0 ? "the agent neither read nor answered for 10 s" : "poll failed");
    quiet_since = clock::now();
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = ::recv(fd, sink.data(), sink.size(), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) open = false;
    }
    if (open && sent < size && (p.revents & POLLOUT) != 0) {
      const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<std::size_t>(n);
      else if (n < 0 && errno != EAGAIN && errno != EINTR) sent = size;  // the agent went: drain
      if (sent == size) ::shutdown(fd, SHUT_WR);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("RIG_FUZZ_WRITE_SEEDS")) {
    int i = 0;
    for (const Stream& s : seeds()) {
      std::ofstream(std::string(dir) + "/session-" + std::to_string(i++), std::ios::binary)
          .write(reinterpret_cast<const char*>(s.bytes.data()), static_cast<std::streamsize>(s.bytes.size()));
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Agent agent;
  const int client = *engine::tcp_connect(engine::Endpoint{"127.0.0.1", agent.port});
  const int served = engine::tcp_accept(agent.listen_fd);
  check(served >= 0, "accept failed");
  agent::Gauges gauges;
  std::thread session([&] {
    // The server's part: the handshake, driven by polls, then the job's session.
    gauges.connections.fetch_add(1, std::memory_order_relaxed);  // what admit() takes
    agent::Handshake h(served, "fuzzer", agent.config, gauges);
    auto step = agent::Handshake::Step::kMore;
    while (step == agent::Handshake::Step::kMore) {
      pollfd p{served, POLLIN, 0};
      step = ::poll(&p, 1, h.deadline().left_ms()) > 0 ? h.advance() : h.expire();
    }
    if (step == agent::Handshake::Step::kJob) agent::Session(h.take_job(), agent.config, "fuzzer", gauges, agent.drain, agent.heartbeat).run();
  });
  check(handshake(client, agent), "the agent refused the fuzzer's handshake");
  play(client, data, size);
  ::close(client);
  session.join();  // a session that never ends is a hang: libFuzzer's -timeout reports it
  return 0;
}
