#include "raw_peer.h"

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

std::uint64_t read_handover(int fd) {
  RawFrame f;
  while (read_frame(fd, f)) {
    if (f.header.type == static_cast<std::uint16_t>(wire::MsgType::kHandover)) {
      wire::HandoverView h;
      std::string why;
      return wire::decode(f.bytes(), h, why) ? h.fixed.value : 0;
    }
  }
  return 0;
}

bool answer_next_request(int fd) {
  RawFrame f;
  while (read_frame(fd, f)) {
    if (f.header.type == static_cast<std::uint16_t>(wire::MsgType::kRequest)) {
      wire::RequestView r;
      std::string why;
      if (!wire::decode(f.bytes(), r, why)) return false;
      return send_msg(fd, wire::MsgType::kAnswer, wire::Answer{r.fixed.id, 0, 0, 0, 0});
    }
  }
  return false;
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

FakeAgent::FakeAgent(std::uint32_t devices, std::function<void(int)> script, bool welcome)
    : FakeAgent(fake_accounts(devices), std::move(script), welcome) {}

FakeAgent::FakeAgent(std::vector<wire::Account> accounts, std::function<void(int)> script, bool welcome) {
  listen_fd_ = engine::tcp_listen(engine::Endpoint{"127.0.0.1", 0}, port_);
  thread_ = std::thread([this, accounts = std::move(accounts), script = std::move(script), welcome] {
    fd_ = engine::tcp_accept(listen_fd_);
    if (fd_ < 0) return;
    RawFrame hello;
    if (!read_frame(fd_, hello)) return;
    if (welcome) {
      const wire::Welcome w{wire::kMagic, wire::kVersion, 0, 0, static_cast<std::uint32_t>(accounts.size())};
      send_msg(fd_, wire::MsgType::kWelcome, w, std::as_bytes(std::span(accounts)));
    }
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
  fd_ = engine::tcp_connect(engine::parse_endpoint(endpoint));
  timeval tv{10, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

RawClient::~RawClient() { ::close(fd_); }

std::vector<wire::Account> RawClient::hello() {
  if (!send_msg(fd_, wire::MsgType::kHello, wire::Hello{wire::kMagic, wire::kVersion, 0, 0, 0})) {
    throw std::runtime_error("send hello");
  }
  RawFrame f;
  if (!read_frame(fd_, f)) throw std::runtime_error("no welcome");
  wire::WelcomeView w;
  std::string why;
  if (!wire::decode(f.bytes(), w, why)) throw std::runtime_error(why);
  return {w.accounts.begin(), w.accounts.end()};
}

std::string RawClient::failure_text() {
  RawFrame f;
  while (read_frame(fd_, f)) {
    if (f.header.type == static_cast<std::uint16_t>(wire::MsgType::kFailure)) {
      wire::FailureView v;
      std::string why;
      if (!wire::decode(f.bytes(), v, why)) return "undecodable failure: " + why;
      return std::string(v.text);
    }
  }
  return {};
}

}  // namespace rig::test
