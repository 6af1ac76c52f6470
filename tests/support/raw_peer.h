// A raw protocol peer for tests: sends and reads frames on a plain fd, so tests can play a
// hostile agent against the proxy, or a hostile client against rig-agent.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "wire_parts.h"
#include "rig/wire/auth.h"
#include "rig/wire/codec.h"

namespace rig::test {

struct RawFrame {
  wire::FrameHeader header{};
  std::vector<std::uint64_t> body;  // 8-byte aligned storage
  std::span<const std::byte> bytes() const {
    return {reinterpret_cast<const std::byte*>(body.data()), header.length};
  }
};

// Bounds every later blocking read of `fd` (SO_RCVTIMEO).
void set_receive_timeout(int fd, int ms);
// Writes all of `data`; false once the peer is gone.
bool write_all(int fd, const void* data, std::size_t n);
// Reads a frame (header and whole body); false at end of stream or error.
bool read_frame(int fd, RawFrame& out, std::uint32_t max_body = 64u << 20);
// Reads the next frame of a job's agent that is not a ping: an agent busy with a message for
// long pings its client meanwhile (wire/PROTOCOL.md 6.8), between any two of its frames.
bool read_reply(int fd, RawFrame& out);
// Whether a frame is of type `t`.
inline bool is(const RawFrame& f, wire::MsgType t) { return f.header.type == static_cast<std::uint16_t>(t); }
// A kDone frame's value (0 if it does not decode).
std::uint64_t done_value(const RawFrame& f);
// Frames read from `fd`, up to and including the first one `last` accepts (or until the stream
// ends or stays silent for 10 s).
template <class Last>
std::vector<RawFrame> frames_until(int fd, Last last) {
  set_receive_timeout(fd, 10'000);
  std::vector<RawFrame> got;
  RawFrame f;
  while (read_frame(fd, f)) {
    got.push_back(f);
    if (last(f)) break;
  }
  return got;
}

template <class M>
bool send_msg(int fd, wire::MsgType type, const M& msg, std::span<const std::byte> tail = {}) {
  const auto f = wire::frame(type, msg, tail.size());
  return write_all(fd, &f, sizeof f) && (tail.empty() || write_all(fd, tail.data(), tail.size()));
}

// Appends a frame (header, message, tail) to `out`: for tests that write several frames in one
// write, so that the peer finds them all in one read.
template <class M>
void append_msg(std::vector<std::byte>& out, wire::MsgType type, const M& msg, std::span<const std::byte> tail = {}) {
  const auto f = wire::frame(type, msg, tail.size());
  const auto* p = reinterpret_cast<const std::byte*>(&f);
  out.insert(out.end(), p, p + sizeof f);
  out.insert(out.end(), tail.begin(), tail.end());
}


// Scripts of a fake agent. Reads frames until a handover and returns its value (0 if none).
std::uint64_t read_handover(int fd);
// Reads frames until a request and answers it kOk; false if none came or it was malformed.
bool answer_next_request(int fd);
// Reads frames until a request and returns its id, unanswered (0 if none came or it was malformed).
std::uint64_t read_request(int fd);
// Reads and drops frames until the client goes.
void drain(int fd);

// The accounts of a fake agent: the host and `devices` simulated devices.
std::vector<wire::Account> fake_accounts(std::uint32_t devices);

// A fake agent on a loopback port: accepts one connection, does the agent's side of the
// handshake with the test process's secret (test_secret()), welcoming with
// fake_accounts(devices), then runs `script` on the connection's fd in a thread of its own.
// Without `welcome` it stops before the welcome (the script sends its own).
class FakeAgent {
 public:
  // `features`: those of the client's offer that the welcome accepts (none by default).
  FakeAgent(std::uint32_t devices, std::function<void(int fd)> script, bool welcome = true, std::uint32_t features = 0);
  // The same, with a welcome of these accounts.
  FakeAgent(std::vector<wire::Account> accounts, std::function<void(int fd)> script, bool welcome = true,
            std::uint32_t features = 0);
  ~FakeAgent();
  std::string endpoint() const;
  void join();

 private:
  int listen_fd_ = -1;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

// A TCP connection to IPv4 `address`:`port` from the local address `source` (a loopback alias,
// or an address added to this side of a namespace's link): a peer from another host to the
// agent. The descriptor, or -1.
int connect_from(const std::string& source, const std::string& address, std::uint16_t port);

class RawClient;
// A raw client's requests and handovers against a real agent (gtest assertions inside).
// alloc: object `id` of `bytes` on `device`; the answer's status (alloc_answer: and its reason).
struct AllocAnswer {
  wire::AnswerStatus status = wire::AnswerStatus::kError;
  std::string text;
};
AllocAnswer alloc_answer(RawClient& c, std::uint64_t id, std::uint64_t bytes, std::uint32_t device = 1);
inline wire::AnswerStatus alloc(RawClient& c, std::uint64_t id, std::uint64_t bytes, std::uint32_t device = 1) {
  return alloc_answer(c, id, bytes, device).status;
}
void send_handover(RawClient& c, std::uint32_t device, std::uint64_t value, const std::vector<wire::Part>& parts,
                   const std::vector<wire::Wait>& waits = {});
// The same handover's frame appended to `out` (see append_msg).
void append_handover(std::vector<std::byte>& out, std::uint32_t device, std::uint64_t value,
                     const std::vector<wire::Part>& parts, const std::vector<wire::Wait>& waits = {});

// A raw client of a real rig-agent: connects; hello() does the handshake.
class RawClient {
 public:
  explicit RawClient(const std::string& endpoint);
  ~RawClient();
  int fd() const { return fd_; }
  // The client's side of the handshake with the test process's secret, offering `features`;
  // returns the accounts (and keeps the grant and the job's key, when stripes were offered).
  std::vector<wire::Account> hello(std::uint32_t features = 0);
  const wire::StripeGrant& grant() const { return grant_; }
  const wire::JobKey& key() const { return key_; }
  // Reads frames until a kFailure (returns its text) or end of stream (returns "").
  std::string failure_text();

 private:
  int fd_ = -1;
  wire::StripeGrant grant_{};
  wire::JobKey key_{};
};

}  // namespace rig::test
