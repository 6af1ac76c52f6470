#include "raw_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <gtest/gtest.h>
#include "agent_process.h"
#include "rig/wire/auth.h"

#include <algorithm>

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "rig/engine/tcp.h"

namespace rig::test {

bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

namespace {
bool read_all(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}
}  // namespace

bool read_frame(int fd, RawFrame& out, std::uint32_t max_body) {
  if (!read_all(fd, &out.header, sizeof out.header)) return false;
  if (out.header.length > max_body) return false;
  out.body.assign((out.header.length + 7) / 8, 0);
  return read_all(fd, out.body.data(), out.header.length);
}

bool read_reply(int fd, RawFrame& out) {
  while (read_frame(fd, out)) {
    if (!is(out, wire::MsgType::kPing)) return true;
  }
  return false;
}

std::uint64_t read_handover(int fd) {
  RawFrame f;
  while (read_frame(fd, f)) {
    if (f.header.type == static_cast<std::uint16_t>(wire::MsgType::kHandover)) {
      wire::HandoverView h;
      std::string why;
      return wire::passed(wire::decode(f.bytes(), h), why) ? h.fixed.value : 0;
    }
  }
  return 0;
}

std::uint64_t read_request(int fd) {
  RawFrame f;
  while (read_frame(fd, f)) {
    if (f.header.type == static_cast<std::uint16_t>(wire::MsgType::kRequest)) {
      wire::RequestView r;
      std::string why;
      return wire::passed(wire::decode(f.bytes(), r), why) ? r.fixed.id : 0;
    }
  }
  return 0;
}

bool answer_next_request(int fd) {
  const std::uint64_t id = read_request(fd);
  return id != 0 && send_msg(fd, wire::MsgType::kAnswer, wire::Answer{id, 0, 0, 0, 0});
}

void drain(int fd) {
  RawFrame f;
  while (read_frame(fd, f)) {
  }
}

std::vector<wire::Account> fake_accounts(std::uint32_t devices) {
  std::vector<wire::Account> v;
  for (std::uint32_t i = 0; i <= devices; ++i) {
    wire::Account a{};
    a.id = i;
    a.kind = static_cast<std::uint32_t>(i == 0 ? wire::AccountKind::kHost : wire::AccountKind::kDevice);
    a.budget = 1u << 30;
    a.cache_bytes = 1u << 20;
    a.reaches = (2ull << devices) - 1;
    wire::set_fixed_string(a.name, i == 0 ? "host" : "fake" + std::to_string(i));
    wire::set_fixed_string(a.arch, "fake");
    v.push_back(a);
  }
  return v;
}

namespace {

// The agent's side of the handshake, as rig-agent does it, with the test process's secret; the
// welcome only with `welcome`.
void welcome_client(int fd, const std::vector<wire::Account>& accounts, bool welcome, std::uint32_t features) {
  RawFrame f;
  wire::Hello hello{};
  std::string why;
  if (!read_frame(fd, f) || !wire::passed(wire::decode(f.bytes(), hello), why)) return;
  const engine::Secret secret = test_secret();
  wire::Transcript t;
  t.offered = hello.features;
  t.client = wire::to_array(hello.nonce);
  t.agent = wire::fresh_nonce();
  wire::Challenge c{};
  std::copy(t.agent.begin(), t.agent.end(), c.nonce);
  c.auth = 1;
  wire::set_fixed_string(c.name, "fake-agent");
  t.name = wire::to_array(c.name);
  wire::Proof proof{};
  if (!send_msg(fd, wire::MsgType::kChallenge, c) || !read_frame(fd, f) || !wire::passed(wire::decode(f.bytes(), proof), why) ||
      !wire::same_mac(wire::client_proof(secret.bytes, t), wire::to_array(proof.mac))) {
    return;
  }
  if (!welcome) return;
  const std::uint32_t accepted = hello.features & features;
  wire::Welcome w{wire::kMagic, wire::kVersion, 1, accepted, static_cast<std::uint32_t>(accounts.size())};
  const wire::Mac mac = wire::agent_proof(secret.bytes, t, accepted, accounts);
  std::copy(mac.begin(), mac.end(), w.mac);
  send_msg(fd, wire::MsgType::kWelcome, w, std::as_bytes(std::span(accounts)));
}

}  // namespace

FakeAgent::FakeAgent(std::uint32_t devices, std::function<void(int)> script, bool welcome, std::uint32_t features)
    : FakeAgent(fake_accounts(devices), std::move(script), welcome, features) {}

FakeAgent::FakeAgent(std::vector<wire::Account> accounts, std::function<void(int)> script, bool welcome,
                     std::uint32_t features) {
  listen_fd_ = *engine::tcp_listen(engine::Endpoint{"127.0.0.1", 0}, port_);  // or stops, saying why
  thread_ = std::thread([this, accounts = std::move(accounts), script = std::move(script), welcome, features] {
    fd_ = engine::tcp_accept(listen_fd_);
    if (fd_ < 0) return;
    welcome_client(fd_, accounts, welcome, features);
    script(fd_);
  });
}

FakeAgent::~FakeAgent() {
  join();
  if (fd_ >= 0) ::close(fd_);
  ::close(listen_fd_);
}

void FakeAgent::join() {
  if (thread_.joinable()) thread_.join();
}

std::string FakeAgent::endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

RawClient::RawClient(const std::string& endpoint) {
  fd_ = *engine::tcp_connect(*engine::parse_endpoint(endpoint));  // or stops, saying why
  timeval tv{10, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

RawClient::~RawClient() { ::close(fd_); }

std::vector<wire::Account> RawClient::hello(std::uint32_t features) {
  const engine::Secret secret = test_secret();
  wire::Transcript t;
  t.offered = features;
  t.client = wire::fresh_nonce();
  wire::Hello h{wire::kMagic, wire::kVersion, 0, features, 0};
  std::copy(t.client.begin(), t.client.end(), h.nonce);
  if (!send_msg(fd_, wire::MsgType::kHello, h)) throw std::runtime_error("send hello");
  RawFrame f;
  wire::Challenge c{};
  std::string why;
  if (!read_frame(fd_, f) || !wire::passed(wire::decode(f.bytes(), c), why)) throw std::runtime_error("no challenge: " + why);
  t.agent = wire::to_array(c.nonce);
  t.name = wire::to_array(c.name);
  wire::Proof p{};
  const wire::Mac mac = wire::client_proof(secret.bytes, t);
  std::copy(mac.begin(), mac.end(), p.mac);
  if (!send_msg(fd_, wire::MsgType::kProof, p)) throw std::runtime_error("send proof");
  if (!read_frame(fd_, f)) throw std::runtime_error("no welcome");
  wire::WelcomeView w;
  if (!wire::passed(wire::decode(f.bytes(), w), why)) throw std::runtime_error(why);
  key_ = wire::job_key(secret.bytes, t);
  if ((w.fixed.features & wire::kFeatureStripes) != 0) {
    if (!read_frame(fd_, f) || !wire::passed(wire::decode(f.bytes(), grant_), why)) throw std::runtime_error("no grant: " + why);
  }
  return {w.accounts.begin(), w.accounts.end()};
}

AllocAnswer alloc_answer(RawClient& c, std::uint64_t id, std::uint64_t bytes, std::uint32_t device) {
  wire::Request r{};
  r.id = 1;
  r.kind = static_cast<std::uint16_t>(wire::RequestKind::kAlloc);
  r.device = device;
  r.object = id;
  r.arg0 = bytes;
  EXPECT_TRUE(send_msg(c.fd(), wire::MsgType::kRequest, r));
  RawFrame f;
  wire::AnswerView a;
  std::string why;
  if (!read_reply(c.fd(), f) || f.header.type != static_cast<std::uint16_t>(wire::MsgType::kAnswer) ||
      !wire::passed(wire::decode(f.bytes(), a), why)) {
    ADD_FAILURE() << "no answer to the alloc: " << why;
    return {wire::AnswerStatus::kError, why};
  }
  return {static_cast<wire::AnswerStatus>(a.fixed.status), std::string(a.text)};
}

void append_handover(std::vector<std::byte>& out, std::uint32_t device, std::uint64_t value,
                     const std::vector<wire::Part>& parts, const std::vector<wire::Wait>& waits) {
  const wire::Handover h{device, static_cast<std::uint32_t>(waits.size()), value,
                         static_cast<std::uint32_t>(parts.size()), 0};
  std::vector<std::byte> tail(waits.size() * sizeof(wire::Wait) + parts.size() * sizeof(wire::Part));
  if (!waits.empty()) std::memcpy(tail.data(), waits.data(), waits.size() * sizeof(wire::Wait));
  if (!parts.empty()) {
    std::memcpy(tail.data() + waits.size() * sizeof(wire::Wait), parts.data(), parts.size() * sizeof(wire::Part));
  }
  append_msg(out, wire::MsgType::kHandover, h, tail);
}

void send_handover(RawClient& c, std::uint32_t device, std::uint64_t value, const std::vector<wire::Part>& parts,
                   const std::vector<wire::Wait>& waits) {
  std::vector<std::byte> out;
  append_handover(out, device, value, parts, waits);
  EXPECT_TRUE(write_all(c.fd(), out.data(), out.size()));
}

std::string RawClient::failure_text() {
  RawFrame f;
  while (read_frame(fd_, f)) {
    if (f.header.type == static_cast<std::uint16_t>(wire::MsgType::kFailure)) {
      wire::FailureView v;
      std::string why;
      if (!wire::passed(wire::decode(f.bytes(), v), why)) return "undecodable failure: " + why;
      return std::string(v.text);
    }
  }
  return {};
}

}  // namespace rig::test

namespace rig::test {

void set_receive_timeout(int fd, int ms) {
  const timeval limit{ms / 1000, (ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
}

std::uint64_t done_value(const RawFrame& f) {
  wire::Done d{};
  std::string why;
  return wire::passed(wire::decode(f.bytes(), d), why) ? d.value : 0;
}

int connect_from(const std::string& source, const std::string& address, std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &a.sin_addr);
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    a.sin_port = htons(port);
    ::inet_pton(AF_INET, address.c_str(), &a.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  }
  if (fd >= 0) ::close(fd);
  return -1;
}

}  // namespace rig::test
